"""One solution on one workload, with the defences on and off, printing each status and log in full.

    python benchmarks/gpu/probe_one.py benchmarks/solutions/qwen3_8b_rmsnorm/cute_dsl.json --timeout-s 30

For a solution that fails on the GPU in a way the summary does not explain: whether the sandbox is
the cause (only "on" fails), and, for a hang, the stacks the TIMEOUT carries.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from solforge.problems import load_problem, load_solution
from solforge.sandbox.api import EvalOptions, EvalRequest
from solforge.sandbox.evaluate import evaluate


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("solution", type=Path)
    parser.add_argument("--problem", default="qwen3_8b_rmsnorm")
    parser.add_argument("--workload", type=int, default=3, help="index into the problem's workloads")
    parser.add_argument("--timeout-s", type=float, default=30.0)
    parser.add_argument("--modes", nargs="+", default=["off", "on"], choices=("off", "on"))
    args = parser.parse_args()
    problem = load_problem(args.problem)
    solution = load_solution(args.solution)
    workload = problem.workloads[args.workload]
    for mode in args.modes:
        os.environ["SOLFORGE_DEFENCES"] = mode
        started = time.perf_counter()
        report = evaluate(EvalRequest(problem=args.problem, solution=solution, options=EvalOptions(
            workloads=[workload.uuid], run_timeout_s=args.timeout_s, rounds=2, iterations=20)))
        print(f"== defences {mode}: {time.perf_counter() - started:.1f} s, phases {report.phases}", flush=True)
        if report.build is not None and not report.build.ok:
            print("build failed:", report.build.log[-3000:])
        for trace in report.traces:
            ev = trace.evaluation
            perf = ev.performance.latency_ms if ev.performance else None
            print(ev.status.value, perf, "\n", ev.log[-4000:], flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
