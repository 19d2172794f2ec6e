"""Timing fidelity: solforge's timer against Nsight Compute, and the spread of repeated evaluations.

Part 1 times three elementwise kernels (``torch.neg``: one read and one write of every element)
sized to run about 10 us, 100 us and 1 ms on an H200 with solforge's timer (CUPTI, L2 flushed,
fresh pointers) and with ``ncu --clock-control none`` (gpu__time_duration, caches flushed by ncu
before every kernel), and reports the ratio of medians. A plain ``copy_`` between two tensors is a
cudaMemcpy, not a kernel, which ncu does not profile: that is why an earlier version of this script
measured nothing ("No kernels were profiled").

Part 2 evaluates one solution five times with ``solforge eval`` and reports, per workload, the
spread (max - min) / median of the five medians, and the wall time of each (build and baseline
cached after the first), which is the turnaround an agent sees.

    python benchmarks/timing/fidelity.py --out fidelity.json [--variants] [--solution S --problem P]
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

# Bytes copied (read + write = 2x) for ~10 us, ~100 us, ~1 ms at ~4.3 TB/s.
SIZES = {"10us": 20 << 20, "100us": 200 << 20, "1ms": 2 << 30}


def _kernel_main(nbytes: int, calls: int) -> None:
    """Run under ncu: the same kernel, ``calls`` times (after one fill kernel, which ncu skips)."""
    import torch

    src = torch.empty(nbytes // 2, dtype=torch.bfloat16, device="cuda").fill_(1.5)
    dst = torch.empty_like(src)
    torch.cuda.synchronize()
    for _ in range(calls):
        torch.neg(src, out=dst)
    torch.cuda.synchronize()


def solforge_time(nbytes: int, variant: str = "harness") -> float:
    """The median of 50 timed calls, as the harness times them (``harness``) or with one thing changed,
    to see which part of the method a difference from ncu comes from:

    ``read_flush``   the L2 evicted by reading the flush buffer (clean lines) instead of writing it (dirty
                     lines, which the timed kernel then writes back; ncu invalidates instead)
    ``same_address`` every call on the same two buffers, as ncu's replays are (no shifting pool)
    ``no_flush``     nothing evicted between calls (an upper bound on what the cache is worth)
    ``cuda_events``  CUDA events around the call instead of CUPTI's kernel records
    """
    import contextlib

    import torch

    from solforge.sandbox import timing

    src = torch.empty(nbytes // 2, dtype=torch.bfloat16, device="cuda").normal_()
    dst = torch.empty_like(src)
    pool = timing.ShiftingPool([src, dst], 60, fill_outputs_from=1)
    make_args = (lambda _i: [src, dst]) if variant == "same_address" else pool.args_for_call
    original = timing.L2Flusher.flush

    def read_flush(self: timing.L2Flusher) -> None:
        self._buffer.sum(dtype=torch.int64)

    def no_flush(self: timing.L2Flusher) -> None:
        return None

    patch = {"read_flush": read_flush, "no_flush": no_flush}.get(variant)
    with contextlib.ExitStack() as stack:
        if patch is not None:
            timing.L2Flusher.flush = patch  # type: ignore[method-assign]
            stack.callback(setattr, timing.L2Flusher, "flush", original)
        m = timing.time_calls(lambda s, d: torch.neg(s, out=d), make_args, warmup=10, iterations=50,
                              device=torch.device("cuda"), timer="cuda_events" if variant == "cuda_events" else "auto")
    return m.median_ms


VARIANTS = ("harness", "read_flush", "same_address", "no_flush", "cuda_events")


def ncu_time(nbytes: int) -> float | str:
    ncu = shutil.which("ncu")
    if ncu is None:
        return "ncu not found"
    # Each profiled launch is replayed with its memory saved and restored: few launches for the big copy.
    count = "20" if nbytes < (1 << 30) else "5"
    # The child python is the profiled process itself; --target-processes all also follows a launcher.
    # Only the neg kernels: skip the fill and two warm-up launches.
    cmd = [ncu, "--clock-control", "none", "--cache-control", "all", "--target-processes", "all",
           "--kernel-name-base", "demangled", "--kernel-name", "regex:neg|unary|elementwise",
           "--metrics", "gpu__time_duration.sum", "--csv", "--launch-skip", "3", "--launch-count", count,
           sys.executable, __file__, "--kernel", str(nbytes), "--calls", "25"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    rows = [r for r in csv.reader(io.StringIO(done.stdout)) if len(r) > 5]
    if len(rows) < 2:
        return f"ncu produced no rows (exit {done.returncode}): {(done.stderr or done.stdout)[-400:]}"
    header, body = rows[0], rows[1:]
    unit_col, value_col = header.index("Metric Unit"), header.index("Metric Value")
    scale = {"nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0, "second": 1e3}
    values = [float(r[value_col].replace(",", "")) * scale.get(r[unit_col], 1e-6) for r in body]
    return statistics.median(values)


def repeated_evals(problem: str, solution: str, repeats: int) -> dict:
    runs = []
    for _ in range(repeats):
        started = time.perf_counter()
        with tempfile.TemporaryFile("w+") as out:
            proc = subprocess.Popen([sys.executable, "-m", "solforge.server.cli", "eval", problem, "--solution",
                                     solution, "--json"], stdout=out, stderr=subprocess.PIPE, text=True)
            # Progress lines arrive on stderr as the evaluation goes: stamp them to see where the time goes.
            timeline = [(round(time.perf_counter() - started, 2), line.rstrip()) for line in proc.stderr]
            returncode = proc.wait(timeout=900)
            out.seek(0)
            stdout = out.read()
        wall = time.perf_counter() - started
        traces = [json.loads(line) for line in stdout.splitlines() if line.strip()]
        runs.append({"wall_s": round(wall, 2), "exit": returncode, "timeline": timeline[-40:],
                     "latency_ms": {t["workload"]["uuid"]: (t["evaluation"].get("performance") or {}).get("latency_ms")
                                    for t in traces},
                     "statuses": sorted({t["evaluation"]["status"] for t in traces}),
                     "stderr": "\n".join(line for _, line in timeline)[-500:] if returncode else ""})
    spreads = {}
    for uuid in runs[0]["latency_ms"]:
        values = [r["latency_ms"].get(uuid) for r in runs]
        if all(v for v in values):
            spreads[uuid] = (max(values) - min(values)) / statistics.median(values)
    return {"problem": problem, "solution": solution, "runs": runs, "workloads": len(runs[0]["latency_ms"]),
            "max_spread": max(spreads.values()) if spreads else None,
            "median_spread": statistics.median(spreads.values()) if spreads else None,
            "wall_s_cached": [r["wall_s"] for r in runs[1:]]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kernel", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--calls", type=int, default=25, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--problem")
    parser.add_argument("--solution")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--variants", action="store_true",
                        help="also time each size with one part of the method changed (see solforge_time)")
    args = parser.parse_args(argv)
    if args.kernel:
        _kernel_main(args.kernel, args.calls)
        return 0
    result: dict = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "copies": {}}
    import torch

    result["gpu"] = torch.cuda.get_device_name()
    result["torch"] = torch.__version__
    for label, nbytes in SIZES.items():
        ours = solforge_time(nbytes)
        theirs = ncu_time(nbytes)
        row = {"bytes_copied": nbytes, "solforge_ms": ours, "ncu_ms": theirs}
        if isinstance(theirs, float):
            row["ratio"] = ours / theirs
        if args.variants:
            row["variants_ms"] = {v: solforge_time(nbytes, v) for v in VARIANTS}
            print(f"{label:6s} " + "  ".join(f"{v} {t * 1e3:.2f} us" for v, t in row["variants_ms"].items()),
                  file=sys.stderr)
        result["copies"][label] = row
        print(f"{label:6s} solforge {ours * 1e3:9.2f} us   ncu {theirs if isinstance(theirs, str) else f'{theirs * 1e3:9.2f} us'}",
              file=sys.stderr)
    if args.problem and args.solution:
        result["repeated"] = repeated_evals(args.problem, args.solution, args.repeats)
        rep = result["repeated"]
        print(f"repeated evals: max spread {rep['max_spread']}, walls {[r['wall_s'] for r in rep['runs']]}",
              file=sys.stderr)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
