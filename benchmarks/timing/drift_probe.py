"""Why a few-microsecond workload's median moves from one evaluation to the next.

The turnaround benchmark found per-workload medians of small workloads 3-7% apart between evaluations
of a Triton or CUDA C++ rmsnorm, and up to 2x apart for the eager PyTorch one (two launches with host
dispatch between them), while within one evaluation the interquartile range stays small. This probe
separates three candidate causes, with the harness's own timer (``sandbox.timing.time_calls``: CUPTI,
L2 flushed, a shifting pool) and no judge in between:

- **placement**: the physical memory the inputs land on. One timed loop shifts its pool by 256 B per
  call, so every call of a loop reads nearly the same pages; a new pool lands elsewhere. Compared:
  loops on the same pool (``same``) against loops on new pools in the same process (``moved``).
- **process**: state fixed for a process's life (its CUDA context, where its threads run). Compared:
  the median of each process's loops against the other processes'.
- **host CPU**: for launch-bound calls, how fast the timing thread's CPU is. Compared: processes left
  to the scheduler against processes pinned to one CPU (``--pin``), and against processes on the CPUs
  of the GPU's NUMA node (``gpu_local``, where candidate processes run since 2026-12-03), when it has one.

    python benchmarks/timing/drift_probe.py --out drift_probe.json [--processes 4] [--pin 3]

Each figure is a spread, (max - min) / median, in percent, over the medians it compares.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HIDDEN = 4096
TOKENS = (1, 64, 2048, 16384)
KERNELS = ("one_launch", "two_launches")
"""``one_launch``: torch's fused rms_norm; ``two_launches``: rms_norm, then the gain (the hand-written
PyTorch solution's body, whose small sizes are bound by the host's dispatch between the launches)."""


def _spread(values: list[float]) -> float:
    return round(100 * (max(values) - min(values)) / statistics.median(values), 2) if len(values) > 1 else 0.0


def _child(placements: int, repeats: int, iterations: int, sizes: list[int]) -> dict[str, Any]:
    """One process: for every kernel and size, ``repeats`` loops on one pool, then ``placements`` loops on
    new pools (a dummy allocation of random size between them moves where the next pool lands)."""
    import torch
    import torch.nn.functional as F

    from solforge.sandbox import timing

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")  # the CPU only to try the script
    calls = {
        "one_launch": lambda x, w, out: F.rms_norm(x, (HIDDEN,), eps=1e-6),
        "two_launches": lambda x, w, out: torch.mul(F.rms_norm(x, (HIDDEN,), eps=1e-6), w, out=out),
    }
    result: dict[str, Any] = {"cpu": sorted(os.sched_getaffinity(0)), "cases": {}}
    keep: list[Any] = []
    for kernel in KERNELS:
        for tokens in sizes:
            x = torch.randn(tokens, HIDDEN, dtype=torch.bfloat16, device=device)
            w = torch.randn(HIDDEN, dtype=torch.bfloat16, device=device)
            out = torch.empty_like(x)

            def loop(pool: timing.ShiftingPool, fn: Any = calls[kernel]) -> float:
                m = timing.time_calls(fn, pool.args_for_call, warmup=10, iterations=iterations, device=device)
                return m.median_ms * 1e3

            pool = timing.ShiftingPool([x, w, out], 10 + iterations, fill_outputs_from=2)
            same = [loop(pool) for _ in range(repeats)]
            moved = []
            for _ in range(placements):
                keep.append(torch.empty(int.from_bytes(os.urandom(3), "little") * 64, dtype=torch.uint8, device=device))
                moved.append(loop(timing.ShiftingPool([x, w, out], 10 + iterations, fill_outputs_from=2)))
            result["cases"][f"{kernel}/{tokens}"] = {"same_us": same, "moved_us": moved}
    result["overhead_us"] = _overhead(device, iterations)
    return result


def _overhead(device: Any, iterations: int) -> dict[str, float]:
    """Host time per timed call of a tiny kernel, and of the loop's parts: what a workload's ``timed``
    phase (about 50 ms for 60 calls on an H200) is made of."""
    import time

    import torch

    from solforge.sandbox import timing

    x = torch.randn(1, HIDDEN, dtype=torch.bfloat16, device=device)
    pool = timing.ShiftingPool([x, torch.empty_like(x)], 10 + iterations, fill_outputs_from=1)
    flusher = timing.L2Flusher(device) if device.type == "cuda" else None

    def per_call_us(fn: Any, n: int = 200) -> float:
        started = time.perf_counter()
        for _ in range(n):
            fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return round((time.perf_counter() - started) / n * 1e6, 2)

    out: dict[str, float] = {}
    started = time.perf_counter()
    timing.time_calls(lambda a, b: torch.neg(a, out=b), pool.args_for_call, warmup=10, iterations=iterations,
                      device=device)
    out["time_calls_per_call"] = round((time.perf_counter() - started) / (10 + iterations) * 1e6, 2)
    out["args_for_call"] = per_call_us(lambda: pool.args_for_call(3))
    if flusher is not None:
        out["flush_and_sync"] = per_call_us(lambda: (flusher.flush(), torch.cuda.synchronize(device)))
        out["zero_and_sync"] = per_call_us(lambda: (flusher._buffer.zero_(), torch.cuda.synchronize(device)))
        runtime = timing.cuda_runtime()
        if runtime is not None:
            out["reset_persisting_l2"] = per_call_us(runtime.cudaCtxResetPersistingL2Cache)
        out["synchronize"] = per_call_us(lambda: torch.cuda.synchronize(device))
    return out


def _run_children(count: int, pin: str | None, args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    for _ in range(count):
        cmd = [sys.executable, __file__, "--child", "--placements", str(args.placements), "--repeats",
               str(args.repeats), "--iterations", str(args.iterations), "--tokens", *map(str, args.tokens)]
        if pin is not None:
            cmd = ["taskset", "-c", pin, *cmd]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=True)
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return rows


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per case: the spreads within a pool, across pools of one process, and across processes."""
    out: dict[str, Any] = {}
    for case in rows[0]["cases"]:
        per_process = [statistics.median(r["cases"][case]["same_us"] + r["cases"][case]["moved_us"]) for r in rows]
        out[case] = {
            "median_us": round(statistics.median(per_process), 2),
            "same_pool_pct": max(_spread(r["cases"][case]["same_us"]) for r in rows),
            "new_pools_pct": max(_spread(r["cases"][case]["moved_us"]) for r in rows),
            "processes_pct": _spread(per_process),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--placements", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--tokens", type=int, nargs="+", default=list(TOKENS))
    parser.add_argument("--pin", help="also run the processes pinned to these CPUs (taskset's list: 3 or 0-7)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.placements, args.repeats, args.iterations, args.tokens)))
        return 0
    import torch

    result: dict[str, Any] = {"date": datetime.now(UTC).isoformat(timespec="seconds"),
                              "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None, "torch": torch.__version__,
                              "host_cpus": os.cpu_count(), "runs": {}}
    modes: dict[str, str | None] = {"scheduler": None}
    if args.pin is not None:
        modes[f"pinned_cpu{args.pin}"] = args.pin
    # Where candidate processes now run: the CPUs of GPU 0's NUMA node (sandbox/candidate.py).
    from solforge.sandbox.sol.hardware import gpu_local_cpus

    local = gpu_local_cpus(0) if torch.cuda.is_available() else None
    result["gpu_local_cpus"] = sorted(local) if local else None
    if local:
        modes["gpu_local"] = ",".join(map(str, sorted(local)))
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        result["topology"] = subprocess.run(["nvidia-smi", "topo", "-m"], capture_output=True, text=True,
                                            timeout=30).stdout
    for label, pin in modes.items():
        rows = _run_children(args.processes, pin, args)
        result["runs"][label] = {"processes": rows, "summary": _summary(rows)}
        print(f"== {label}: spread % of medians (same pool / new pools / processes), median us", file=sys.stderr)
        for case, s in result["runs"][label]["summary"].items():
            print(f"{case:22s} {s['same_pool_pct']:7.2f} {s['new_pools_pct']:7.2f} {s['processes_pct']:7.2f}"
                  f"   {s['median_us']:9.2f}", file=sys.stderr)
        overhead = [row["overhead_us"] for row in rows]
        print("host us per call: " + json.dumps({k: statistics.median(o[k] for o in overhead) for k in overhead[0]}),
              file=sys.stderr)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
