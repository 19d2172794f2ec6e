"""Where a solution's host time per call goes, called in-process (no judge, no candidate process).

    python benchmarks/gpu/probe_host_cost.py benchmarks/solutions/qwen3_8b_rmsnorm/cute_dsl.json

The H200 turnaround of 2026-12-03 saw the CuTe DSL rmsnorm spend 2-3.4 s in the judge's correctness
checks (80 calls: 16 workloads x 5 rounds), against 0.15 s for PyTorch. A check calls the solution on
tensors it has never seen (fresh inputs, through CUDA IPC), then the harness checks itself for
tampering. This times, per call: fresh tensors each call; the same tensors every call; and the same
two with the candidate's audit hook installed (it runs on every audit event the call raises). Then it
prints cProfile's heaviest functions for the first call (3 s for the CuTe DSL rmsnorm on the H200 of
2026-12-03, after a 3.5 s import that compiles the kernel) and for fresh tensors. Run it twice with
the same ``CUDA_CACHE_PATH`` and ``CUTE_DSL_CACHE_DIR`` to see what a second process keeps. Only for the
Python-source rmsnorm solutions (hidden 4096, bf16: pytorch, triton, cute_dsl).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _per_call_ms(run: Any, tensors: Any, calls: int) -> float:
    import torch

    started = time.perf_counter()
    for i in range(calls):
        run(*tensors(i))
        if torch.cuda.is_available():
            torch.cuda.synchronize()
    return round((time.perf_counter() - started) / calls * 1e3, 3)


def _top(profile: cProfile.Profile, rows: int, key: str = "cumulative") -> str:
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats(key).print_stats(rows)
    return text.getvalue()[-9000:]


def _prewarm() -> dict[str, Any]:
    """A trivial CuTe DSL kernel compiled and called twice, each step timed."""
    import cuda.bindings.driver as cuda
    import cutlass.cute as cute
    import torch
    from cutlass.cute.runtime import from_dlpack

    # The DSL resolves the (postponed) annotations in this module's globals.
    globals().update(cute=cute, cuda=cuda)

    @cute.kernel
    def _one(m: cute.Tensor):
        m[0] = m[0] + 1

    @cute.jit
    def _launch(m: cute.Tensor, stream: cuda.CUstream):
        _one(m).launch(grid=[1, 1, 1], block=[1, 1, 1], stream=stream)

    timed: dict[str, Any] = {}
    started = time.perf_counter()
    x = torch.zeros(4, device="cuda", dtype=torch.float32)
    stream = cuda.CUstream(torch.cuda.current_stream().cuda_stream)
    kernel = cute.compile(_launch, from_dlpack(x), stream)
    timed["prewarm_compile_s"] = round(time.perf_counter() - started, 3)
    for name in ("prewarm_first_call_s", "prewarm_second_call_s"):
        started = time.perf_counter()
        kernel(from_dlpack(x), stream)
        torch.cuda.synchronize()
        timed[name] = round(time.perf_counter() - started, 3)
    return timed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("solution", type=Path)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--calls", type=int, default=80)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--prewarm", action="store_true",
                        help="first compile and run a one-thread CuTe DSL kernel of the probe's own: is the "
                             "solution's first call then still slow (its own kernel) or not (the DSL's runtime)?")
    args = parser.parse_args()
    import torch

    from solforge.sandbox import defences

    result: dict[str, Any] = {"solution": str(args.solution), "tokens": args.tokens}
    if args.prewarm:
        result.update(_prewarm())
    solution = json.loads(args.solution.read_text())
    folder = Path(tempfile.mkdtemp(prefix="solforge-probe-"))
    for source in solution["sources"]:
        (folder / source["path"]).write_text(source["content"])
    sys.path.insert(0, str(folder))
    started = time.perf_counter()
    import main as module  # the solution's main.py

    result["import_s"] = round(time.perf_counter() - started, 3)

    device = "cuda" if torch.cuda.is_available() else "cpu"  # the CPU only to try the script

    def fresh(_i: int) -> tuple[Any, ...]:
        x = torch.randn(args.tokens, 4096, device=device, dtype=torch.bfloat16)
        return x, torch.randn(4096, device=device, dtype=torch.bfloat16), torch.empty_like(x)

    kept = fresh(0)
    first = cProfile.Profile()
    started = time.perf_counter()
    first.enable()
    module.run(*kept)
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    first.disable()
    result["first_call_s"] = round(time.perf_counter() - started, 3)
    result["profile_first"] = _top(first, 40)
    result["profile_first_own"] = _top(first, 25, "tottime")
    result["fresh_ms"] = _per_call_ms(module.run, fresh, args.calls)
    result["same_ms"] = _per_call_ms(module.run, lambda _i: kept, args.calls)
    profile = cProfile.Profile()
    profile.enable()
    _per_call_ms(module.run, fresh, args.calls)
    profile.disable()
    result["profile_fresh"] = _top(profile, 18)
    # The first call at each of qwen3_8b_rmsnorm's other token counts, as the judge's checks make them: a
    # JIT that specialises per shape (Triton's divisibility by 16, say) pays here, once per variant.
    per_shape = cProfile.Profile()
    result["first_call_per_shape_ms"] = {}
    for tokens in (1, 2, 4, 8, 16, 32, 128, 256, 512, 1000, 1024, 2048, 4096, 8192, 16384):
        x = torch.randn(tokens, 4096, device=device, dtype=torch.bfloat16)
        w, out = torch.randn(4096, device=device, dtype=torch.bfloat16), torch.empty_like(x)
        started = time.perf_counter()
        per_shape.enable()
        module.run(x, w, out)
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        per_shape.disable()
        result["first_call_per_shape_ms"][tokens] = round((time.perf_counter() - started) * 1e3, 2)
    result["profile_per_shape"] = _top(per_shape, 25, "tottime")
    guard = defences.AuditGuard()
    guard.install([str(folder)], folder, defences.invoker_codes([module.run]))
    result["fresh_audited_ms"] = _per_call_ms(module.run, fresh, args.calls)
    result["same_audited_ms"] = _per_call_ms(module.run, lambda _i: kept, args.calls)
    result["audit_violations"] = guard.violations[:5]
    print(result["profile_first"], result["profile_first_own"], result["profile_fresh"], result["profile_per_shape"],
          sep="\n", file=sys.stderr)
    print(json.dumps({k: v for k, v in result.items() if not k.startswith("profile_")}), flush=True)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
