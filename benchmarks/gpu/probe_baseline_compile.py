"""What a torch.compile baseline costs per workload, and what would make a first evaluation cheaper.

A first evaluation of a problem with no shipped baseline table compiles the reference once per
workload shape (``dynamic=False``), about 8 s each on the H200 (h200-2026-12-02). This probe
measures, on one problem's reference, for every workload shape:

``cold_s``      compile + first call in a fresh process with an empty inductor cache
``warm_s``      the same in a second fresh process that shares the first one's on-disk caches
                (what a pre-compiling helper process would leave for the timing process)
``dynamic_s``   compile + first call with ``dynamic=None`` (torch's default: one recompile, then one
                dynamic graph for every later shape), and the latency ratio of that graph to the
                static one (above 1: the dynamic baseline would be weaker)
``pool``        ``cold`` with inductor's pool of compile workers (``cold`` compiles in the process, as a
                confined baseline process must: TORCHINDUCTOR_COMPILE_THREADS=1), in an unconfined process:
                what a baseline process able to use the pool would save per shape

    python benchmarks/gpu/probe_baseline_compile.py --problem qwen3_8b_rmsnorm --out probe.json
    python benchmarks/gpu/probe_baseline_compile.py --labels cold,pool --problem deepseek_r1_mla_rope_yarn
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def child(problem: str, mode: str) -> None:
    """In a fresh process: compile and time the reference on every workload; print one JSON line."""
    import torch

    from solforge.problems import load_problem
    from solforge.problems.inputs import generate_inputs
    from solforge.sandbox.baseline import baseline_solutions

    loaded = load_problem(problem)
    # The judge's own compiled baseline (its recompile limit lifted: with torch's default of 8, every shape
    # after the eighth ran eager, which the 2026-12-05 probe's cold and pool rows both did)
    source = baseline_solutions(loaded.definition)["compiled"].sources[0].content
    namespace: dict[str, Any] = {}
    exec(compile(source, "reference.py", "exec"), namespace)  # the catalogue's own reference: trusted
    fn = namespace["run"] if mode != "dynamic" else torch.compile(namespace["_solforge_eager_run"], dynamic=None)
    rows = []
    for workload in loaded.workloads:
        inputs = list(generate_inputs(loaded.definition, workload, device=torch.device("cuda"), seed_or_generator=0,
                                      problem_folder=loaded.folder).values())
        started = time.perf_counter()
        fn(*inputs)
        torch.cuda.synchronize()
        first_s = time.perf_counter() - started
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(50):
            fn(*inputs)
        end.record()
        torch.cuda.synchronize()
        rows.append({"axes": workload.axes, "first_call_s": round(first_s, 3), "latency_ms": start.elapsed_time(end) / 50})
    print(json.dumps(rows))


LABELS = {  # label: (compile mode, which fresh cache, inductor's compile threads: None = torch's default)
    "cold": ("static", "shared", "1"),
    "warm": ("static", "shared", "1"),
    "dynamic": ("dynamic", "other", "1"),
    "pool": ("static", "pool", None),
}


def _run(problem: str, mode: str, cache: Path, threads: str | None) -> tuple[float, list[dict[str, Any]]]:
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor"), "TRITON_CACHE_DIR": str(cache / "triton")}
    env.pop("TORCHINDUCTOR_COMPILE_THREADS", None)
    if threads is not None:
        env["TORCHINDUCTOR_COMPILE_THREADS"] = threads
    started = time.perf_counter()
    done = subprocess.run([sys.executable, __file__, "--child", mode, "--problem", problem], capture_output=True,
                          text=True, env=env, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    return time.perf_counter() - started, json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", default="qwen3_8b_rmsnorm")
    parser.add_argument("--child", choices=("static", "dynamic"))
    parser.add_argument("--labels", default="cold,warm,dynamic",
                        help=f"which runs, in order (of {', '.join(LABELS)}); warm reuses cold's caches")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.child:
        child(args.problem, args.child)
        return 0
    result: dict[str, Any] = {"problem": args.problem}
    with tempfile.TemporaryDirectory() as scratch:
        for label in args.labels.split(","):
            mode, cache, threads = LABELS[label]
            wall, rows = _run(args.problem, mode, Path(scratch) / cache, threads)
            result[label] = {"process_s": round(wall, 1), "compile_threads": threads or "default",
                             "first_calls_s": round(sum(r["first_call_s"] for r in rows), 2), "rows": rows}
            print(label, f"{wall:.1f} s for {len(rows)} workloads, first calls {result[label]['first_calls_s']} s",
                  file=sys.stderr)
    if "cold" in result and "dynamic" in result:
        static = {json.dumps(r["axes"]): r["latency_ms"] for r in result["cold"]["rows"]}
        result["dynamic_over_static"] = [round(r["latency_ms"] / static[json.dumps(r["axes"])], 3)
                                         for r in result["dynamic"]["rows"]]
    text = json.dumps(result, indent=1)
    if args.out:
        args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
