"""Evaluate every catalogue problem's reference as a solution and record the results.

On a GPU this measures, per workload, the reference's latency, the baseline T_b (eager vs
torch.compile), T_SOL and its bound, which is what the catalogue ships as its speed-of-light and
baseline table for that GPU. On the CPU it checks that every reference passes as a solution.

    python benchmarks/catalogue/run_references.py --smallest 2 --out results.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from solforge.problems import catalogue_names, load_problem, reference_solution
from solforge.sandbox.api import EvalOptions, EvalRequest
from solforge.sandbox.evaluate import evaluate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--problems", nargs="*", help="names (default: the whole catalogue)")
    parser.add_argument("--smallest", type=int, help="only the N smallest workloads of each problem")
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)

    results = []
    failures = 0
    for name in args.problems or catalogue_names():
        problem = load_problem(name)
        workloads = sorted(
            problem.workloads, key=lambda w: sum(problem.definition.resolve_axes(w.axes).values())
        )
        if args.smallest:
            workloads = workloads[: args.smallest]
        options = EvalOptions(
            workloads=[w.uuid for w in workloads],
            rounds=args.rounds,
            iterations=args.iterations,
            device=args.device,
        )
        started = time.perf_counter()
        report = evaluate(
            EvalRequest(problem=name, solution=reference_solution(problem.definition), options=options)
        )
        rows = []
        for t in report.traces:
            ev = t.evaluation
            perf = ev.performance
            rows.append(
                {
                    "uuid": t.workload.uuid,
                    "axes": t.workload.axes,
                    "status": ev.status.value,
                    "log": ev.log[:300] if ev.status.value != "PASSED" else "",
                    **(
                        {
                            k: getattr(perf, k)
                            for k in (
                                "latency_ms",
                                "reference_latency_ms",
                                "baseline_latency_ms",
                                "sol_latency_ms",
                                "sol_bound",
                                "sol_score",
                                "timer",
                                "peak_source",
                            )
                        }
                        if perf
                        else {}
                    ),
                }
            )
            failures += ev.status.value != "PASSED"
        results.append(
            {
                "problem": name,
                "device": report.device,
                "seconds": round(time.perf_counter() - started, 1),
                "workloads": rows,
            }
        )
        passed = sum(r["status"] == "PASSED" for r in rows)
        print(
            f"{name:45s} {passed}/{len(rows)} passed  {time.perf_counter() - started:6.1f} s", file=sys.stderr
        )
        for r in rows:
            if r["status"] != "PASSED":
                print(f"    {r['uuid'][:8]} {r['status']}: {r['log'][:200]}", file=sys.stderr)
    env = report.traces[0].evaluation.environment.model_dump() if results and report.traces else {}
    args.out.write_text(
        json.dumps(
            {"date": datetime.now(UTC).isoformat(timespec="seconds"), "environment": env, "results": results},
            indent=1,
        )
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
