"""Where the two levels of an eager PyTorch call's time come from: its kernels, or the gaps between them.

The hand-written PyTorch rmsnorm (``rms_norm``, then the gain: two launches with host dispatch between them)
times at one of two levels on small workloads, about 13-15 us or 19-23 us on the H200, and which one an
evaluation gets changes from process to process (``benchmarks/results/turnaround.md``). This probe runs the
harness's loop (L2 flushed, synchronised, a CUPTI window per call) in several fresh processes and splits each
window's span into its parts:

- ``lead``: the window's start (a host timestamp) to the first kernel's start: the host's first dispatch;
- ``kernels``: the sum of the kernels' own durations (GPU work);
- ``gaps``: the idle time between one kernel's end and the next one's start (the host's dispatch between them);

with, per process, the CPU it ran on and that CPU's clock (``/sys/.../scaling_cur_freq``, where readable) and the
GPU's SM clock from NVML before and after the loops. A level that moves with ``gaps`` and the CPU clock is the
host; one that moves with ``kernels`` is the GPU. Each part is given as its 10th, 50th and 90th percentile over
the process's windows, so that two levels inside one process show as a wide p10-p90.

``--schedules`` runs the processes once per CUDA scheduling policy of the primary context (the driver's
``CU_CTX_SCHED_*``: ``auto``, torch's default, spins or yields by the number of CPUs; ``spin``; ``yield``;
``blocking``): a host thread that sleeps in ``synchronize`` wakes on a cold or slowed CPU, which would show in
``lead`` and ``gaps``.

    python benchmarks/timing/launch_gaps_probe.py --out launch_gaps.json [--processes 8] [--tokens 1 64 2048] \
        [--schedules auto spin]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HIDDEN = 4096


def _cpu_now() -> tuple[int | None, float | None]:
    """The CPU this thread last ran on (/proc/self/stat, field 39) and its current clock in MHz."""
    try:
        cpu = int(Path("/proc/thread-self/stat").read_text().rsplit(")", 1)[1].split()[36])
    except (OSError, IndexError, ValueError):
        return None, None
    try:
        khz = int(Path(f"/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq").read_text())
    except (OSError, ValueError):
        return cpu, None
    return cpu, khz / 1e3


def _sm_clock_mhz() -> int | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(int(os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0]))
        return int(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM))
    except Exception:  # a probe: no NVML, no clock
        return None


SCHEDULES = {"auto": 0, "spin": 1, "yield": 2, "blocking": 4}
"""CU_CTX_SCHED_* of cuda.h."""


def _set_schedule(name: str) -> None:
    """Set the primary context's scheduling flag before torch creates the context (the driver API, by ctypes)."""
    import ctypes

    cu = ctypes.CDLL("libcuda.so.1")
    dev = ctypes.c_int()
    for call, args in (("cuInit", (0,)), ("cuDeviceGet", (ctypes.byref(dev), 0)),
                       ("cuDevicePrimaryCtxSetFlags_v2", (dev, SCHEDULES[name]))):
        rc = getattr(cu, call)(*args)
        if rc != 0:
            raise RuntimeError(f"{call} returned CUresult {rc}")


def _quantiles(values: list[float]) -> list[float]:
    """10th, 50th and 90th percentile."""
    if len(values) < 2:
        return [round(values[0], 3)] * 3 if values else []
    deciles = statistics.quantiles(values, n=10)
    return [round(deciles[0], 3), round(statistics.median(values), 3), round(deciles[-1], 3)]


def _parts(records: list[tuple[int, int, str]], t0: int, t1: int) -> dict[str, float]:
    work = sorted(r for r in records if t0 <= r[0] <= t1)
    if not work:
        return {}
    gaps = sum(max(0, work[i + 1][0] - work[i][1]) for i in range(len(work) - 1))
    return {"span": (max(e for _, e, _ in work) - work[0][0]) / 1e3, "lead": (work[0][0] - t0) / 1e3,
            "kernels": sum(e - s for s, e, _ in work) / 1e3, "gaps": gaps / 1e3, "launches": float(len(work))}


def _child(tokens: list[int], iterations: int, schedule: str) -> dict[str, Any]:
    _set_schedule(schedule)
    import torch
    import torch.nn.functional as F

    from solforge.sandbox import timing

    device = torch.device("cuda")
    flusher = timing.L2Flusher(device)
    result: dict[str, Any] = {"pid": os.getpid(), "schedule": schedule, "affinity": sorted(os.sched_getaffinity(0)),
                              "sm_clock_before_mhz": _sm_clock_mhz(), "cases": {}}
    for n in tokens:
        x = torch.randn(n, HIDDEN, dtype=torch.bfloat16, device=device)
        w = torch.randn(HIDDEN, dtype=torch.bfloat16, device=device)
        out = torch.empty_like(x)

        def call(x: Any = x, w: Any = w, out: Any = out) -> None:
            torch.mul(F.rms_norm(x, (HIDDEN,), eps=1e-6), w, out=out)

        for _ in range(20):
            flusher.flush()
            call()
        torch.cuda.synchronize(device)
        rec = timing.CuptiRecorder()
        windows: list[tuple[int, int]] = []
        cpus: list[tuple[int | None, float | None]] = []
        rec.start()
        try:
            for _ in range(iterations):
                flusher.flush()
                torch.cuda.synchronize(device)
                t0 = rec.timestamp()
                call()
                torch.cuda.synchronize(device)
                windows.append((t0, rec.timestamp()))
                cpus.append(_cpu_now())
        finally:
            rec.stop()
        rows = [p for p in (_parts(rec.gpu_records, t0, t1) for t0, t1 in windows) if p]
        median = {k: round(statistics.median(r[k] for r in rows), 3) for k in rows[0]} if rows else {}
        spread = {k: _quantiles([r[k] for r in rows]) for k in ("span", "lead", "kernels", "gaps")} if rows else {}
        mhz = [m for _, m in cpus if m is not None]
        result["cases"][str(n)] = {
            "median_us": median,
            "p10_p50_p90_us": spread,
            "cpus": sorted({c for c, _ in cpus if c is not None}),
            "cpu_mhz_median": round(statistics.median(mhz), 1) if mhz else None,
        }
    result["sm_clock_after_mhz"] = _sm_clock_mhz()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--tokens", type=int, nargs="+", default=[1, 64, 2048])
    parser.add_argument("--schedules", nargs="+", default=["auto"], choices=list(SCHEDULES))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.tokens, args.iterations, args.schedules[0])))
        return 0
    rows = []
    for schedule in [s for s in args.schedules for _ in range(args.processes)]:
        cmd = [sys.executable, __file__, "--child", "--iterations", str(args.iterations),
               "--tokens", *map(str, args.tokens), "--schedules", schedule]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            print(done.stderr[-2000:], file=sys.stderr)
            return 1
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        for n, case in rows[-1]["cases"].items():
            print(f"process {len(rows)} ({schedule}) tokens {n}: span p10/50/90 {case['p10_p50_p90_us']['span']} "
                  f"gaps {case['p10_p50_p90_us']['gaps']} {case['median_us']} cpus {case['cpus']} "
                  f"{case['cpu_mhz_median']} MHz", file=sys.stderr)
    out = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "hidden": HIDDEN,
           "iterations": args.iterations, "processes": rows}
    text = json.dumps(out, indent=1)
    if args.out:
        args.out.write_text(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
