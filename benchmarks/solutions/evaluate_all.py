"""Evaluate every hand-written solution under benchmarks/solutions/<problem>/<language>.json.

Writes a summary (per solution: status counts, SOL score, geomean speedup over the baseline) and
every trace, so the results committed under benchmarks/results/ carry the GPU, driver and versions.

    python benchmarks/solutions/evaluate_all.py --out summary.json --traces traces.jsonl [--max-workloads N]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from solforge.problems import load_problem, load_solution
from solforge.sandbox.api import EvalOptions, EvalRequest
from solforge.sandbox.evaluate import evaluate
from solforge.sandbox.score import geomean

HERE = Path(__file__).parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--traces", type=Path, required=True)
    parser.add_argument("--max-workloads", type=int, help="evaluate only the N smallest workloads of each problem")
    parser.add_argument("--only", nargs="*", help="problem/language pairs such as qwen3_8b_rmsnorm/cuda_cpp")
    args = parser.parse_args(argv)
    summary: dict = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "solutions": []}
    failures = 0
    with args.traces.open("w") as traces_out:
        for path in sorted(HERE.glob("*/*.json")):
            key = f"{path.parent.name}/{path.stem}"
            if args.only and key not in args.only:
                continue
            problem = load_problem(path.parent.name)
            solution = load_solution(path)
            workloads = sorted(problem.workloads, key=lambda w: sum(problem.definition.resolve_axes(w.axes).values()))
            if args.max_workloads:
                workloads = workloads[: args.max_workloads]
            started = time.perf_counter()
            report = evaluate(EvalRequest(problem=problem.name, solution=solution,
                                          options=EvalOptions(workloads=[w.uuid for w in workloads])))
            for t in report.traces:
                traces_out.write(t.model_dump_json() + "\n")
            perfs = [t.evaluation.performance for t in report.traces]
            statuses = [t.evaluation.status.value for t in report.traces]
            scores = [p.sol_score if p and p.sol_score is not None else 0.0 for p in perfs]
            speedups = [p.speedup for p in perfs if p and p.speedup]
            row = {
                "solution": key, "device": report.device, "timer": report.timer, "workloads": len(statuses),
                "passed": statuses.count("PASSED"), "statuses": sorted(set(statuses)),
                "sol_score": sum(scores) / len(scores) if scores else None,
                "geomean_speedup": geomean(speedups) if speedups else None,
                "beats_baseline_on": sum(s > 1 for s in speedups),
                "build": {"cached": report.build.cached, "seconds": report.build.seconds,
                          "kernels": [k.model_dump() for k in report.build.kernels]} if report.build else None,
                "seconds": round(time.perf_counter() - started, 1),
                "first_failure": next((t.evaluation.log[:400] for t in report.traces
                                       if t.evaluation.status.value != "PASSED"), None),
            }
            failures += row["passed"] != row["workloads"]
            summary["solutions"].append(row)
            if report.traces:
                summary["environment"] = report.traces[0].evaluation.environment.model_dump()
            args.out.write_text(json.dumps(summary, indent=1))  # written as it goes: a killed run keeps its rows
            gm = row["geomean_speedup"]
            print(f"{key:45s} {row['passed']:2d}/{row['workloads']:2d} passed  score "
                  f"{row['sol_score'] if row['sol_score'] is None else round(row['sol_score'], 3)}  speedup "
                  f"{gm if gm is None else round(gm, 2)}  {row['seconds']} s", file=sys.stderr)
            if row["first_failure"]:
                print(f"    {row['first_failure'][:300]}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
