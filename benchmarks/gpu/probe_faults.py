"""Isolate the two faults left open on the H200 (a diagnosis, not a test).

1. The torch.compile baseline was timed only on each problem's first workload (2026-12-01). This
   evaluates the pytorch solution on three workloads with a fresh cache, once per combination of
   defences (on/off) and timer (CUPTI/CUDA events), and prints what the baseline cache holds: each
   variant's latency or the reason it failed.
2. Two CuTe DSL cases failed under the candidate's confinement on the GPU only. This evaluates the
   hand-written CuTe DSL solution on one workload with defences on and off and keeps the trace's log.

Each evaluation is a plain ``solforge eval`` child process, so this needs only the installed
project. Writes one JSON file; prints one line per evaluation.
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

ROOT = Path(__file__).resolve().parents[2]
PROBLEM = "qwen3_8b_rmsnorm"
SOLUTIONS = ROOT / "benchmarks" / "solutions" / PROBLEM


def _workload_uuids(count: int) -> list[str]:
    lines = (ROOT / "problems" / "catalogue" / PROBLEM / "workload.jsonl").read_text().splitlines()
    return [json.loads(line)["uuid"] for line in lines[:count]]


def _evaluate(
    solution: Path, uuids: list[str], *, defences: bool, timer: str, device: str, timeout_s: float
) -> dict[str, Any]:
    """One ``solforge eval`` with its own cache: the traces, the baseline cache and stderr's tail."""
    cache = Path(tempfile.mkdtemp(prefix="solforge-probe-"))
    cmd = [
        sys.executable,
        "-m",
        "solforge.server.cli",
        "eval",
        PROBLEM,
        "--solution",
        str(solution),
        "--json",
        "--device",
        device,
        "--timer",
        timer,
        "--cache-dir",
        str(cache),
    ]
    for uuid in uuids:
        cmd += ["--workload", uuid]
    env = {**os.environ, "SOLFORGE_DEFENCES": "on" if defences else "off"}
    started = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout_s)
        stdout, stderr, code = proc.stdout, proc.stderr, proc.returncode
    except subprocess.TimeoutExpired as exc:
        stdout, stderr, code = exc.stdout or "", exc.stderr or "", None
        stdout = stdout.decode() if isinstance(stdout, bytes) else stdout
        stderr = stderr.decode() if isinstance(stderr, bytes) else stderr
    traces = []
    for line in stdout.splitlines():
        try:
            trace = json.loads(line)
        except ValueError:
            continue
        evaluation = trace.get("evaluation") or {}
        traces.append(
            {
                "axes": trace.get("workload", {}).get("axes"),
                "status": evaluation.get("status"),
                "log": (evaluation.get("log") or "")[-1500:],
                "performance": evaluation.get("performance"),
            }
        )
    baselines_file = cache / "baselines" / f"{PROBLEM}.json"
    baselines = json.loads(baselines_file.read_text()) if baselines_file.exists() else {}
    return {
        "solution": solution.name,
        "defences": defences,
        "timer": timer,
        "exit_code": code,
        "seconds": round(time.monotonic() - started, 1),
        "traces": traces,
        "baselines": list(baselines.values()),
        "stderr_tail": stderr[-3000:],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", default="cuda", help="cuda, or cpu to try the plumbing")
    parser.add_argument("--timeout", type=float, default=150.0, help="seconds per evaluation")
    args = parser.parse_args()
    timers = ["cupti", "cuda_events"] if args.device == "cuda" else ["auto"]
    runs = []
    for defences in (True, False):
        for timer in timers:
            runs.append(
                _evaluate(
                    SOLUTIONS / "pytorch.json",
                    _workload_uuids(3),
                    defences=defences,
                    timer=timer,
                    device=args.device,
                    timeout_s=args.timeout,
                )
            )
    if args.device == "cuda":
        for defences in (True, False):
            runs.append(
                _evaluate(
                    SOLUTIONS / "cute_dsl.json",
                    _workload_uuids(1),
                    defences=defences,
                    timer="auto",
                    device=args.device,
                    timeout_s=args.timeout,
                )
            )
    for run in runs:
        statuses = [t["status"] for t in run["traces"]]
        variants = [sorted(k for k in b if k != "baseline_ms") for b in run["baselines"]]
        print(
            f"{run['solution']:<14} defences={'on ' if run['defences'] else 'off'} timer={run['timer']:<11} "
            f"exit={run['exit_code']} {run['seconds']:>6}s statuses={statuses} baseline variants={variants}"
        )
        for baseline in run["baselines"]:
            for key, value in baseline.items():
                if key.endswith("_error"):
                    print(f"    {key}: {value[:300]}")
    args.out.write_text(json.dumps({"problem": PROBLEM, "runs": runs}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
