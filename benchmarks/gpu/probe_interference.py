"""Can the judge see another process using the GPU during a timed loop? NVML's per-process samples, measured.

    python benchmarks/gpu/probe_interference.py --out interference.json

Why: with a warm judge per lane (2026-12-03), one lane loads a solution while the other's candidate is
timed. A solution's import may launch GPU work (an allocation, a warm-up, or on purpose a long kernel), and
the GPU time-slices between processes, so the timed kernels take longer. A defence would ask NVML which
processes were active during the timed window and time again if any other was. Before building it, this
measures what NVML reports: a ~100 us kernel timed with CUDA events, alone, then while a second process
runs matrix products, then alone again; for each window the median and NVML's per-process SM samples
(``nvmlDeviceGetProcessUtilization`` since the window's start).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import time
from pathlib import Path
from typing import Any


def _interfere(start: Any, stop: Any) -> None:
    import torch

    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    start.wait()
    while not stop.is_set():
        for _ in range(4):
            a @ a
        torch.cuda.synchronize()


def _timed_window(seconds: float) -> tuple[float, int]:
    """The median (us) of a ~100 us device-to-device copy timed with events for ``seconds``, and the count."""
    import torch

    src = torch.empty(100 * 2**20 // 2, device="cuda", dtype=torch.bfloat16)
    dst = torch.empty_like(src)
    times: list[float] = []
    ended = time.monotonic() + seconds
    while time.monotonic() < ended:
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        dst.copy_(src)
        end.record()
        end.synchronize()
        times.append(begin.elapsed_time(end) * 1e3)
    return statistics.median(times), len(times)


def _samples(handle: Any, since_us: int) -> list[dict[str, int]]:
    import pynvml

    try:
        got = pynvml.nvmlDeviceGetProcessUtilization(handle, since_us)
    except pynvml.NVMLError as exc:
        return [{"error": str(exc)}]  # type: ignore[dict-item]
    return [{"pid": s.pid, "ts_us": s.timeStamp, "sm": s.smUtil, "mem": s.memUtil} for s in got]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=2.0, help="length of each timed window")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    import pynvml
    import torch

    pynvml.nvmlInit()
    handle = pynvml.nvmlDeviceGetHandleByIndex(int(os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0] or 0))
    torch.empty(1, device="cuda")
    ctx = mp.get_context("spawn")
    start, stop = ctx.Event(), ctx.Event()
    other = ctx.Process(target=_interfere, args=(start, stop), daemon=True)
    other.start()
    time.sleep(8)  # the other process's torch and CUDA start-up, outside the windows
    result: dict[str, Any] = {"own_pid": os.getpid(), "other_pid": other.pid, "windows": []}
    for name in ("alone", "with_other", "alone_again"):
        if name == "with_other":
            start.set()
            time.sleep(0.2)
        since = int(time.time() * 1e6)
        median_us, count = _timed_window(args.seconds)
        if name == "with_other":
            stop.set()
        time.sleep(0.5)  # NVML samples lag the work
        samples = _samples(handle, since)
        others = [s for s in samples if s.get("pid") not in (None, os.getpid())]
        result["windows"].append({"name": name, "median_us": round(median_us, 2), "calls": count,
                                  "samples": samples, "other_active": any(s.get("sm", 0) > 0 for s in others)})
        print(name, round(median_us, 2), "us;", len(samples), "samples; other active:",
              result["windows"][-1]["other_active"], flush=True)
    other.join(timeout=10)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
