"""Evaluate every hand-written solution under benchmarks/solutions/<problem>/<language>.json.

Writes a summary (per solution: status counts, SOL score, geomean speedup over the baseline) and
every trace, so the results committed under benchmarks/results/ carry the GPU, driver and versions.

    python benchmarks/solutions/evaluate_all.py --out summary.json --traces traces.jsonl [--max-workloads N]
        [--prebuild JOBS]

``--prebuild`` first builds every solution (compile only, JOBS at a time) so that the timed runs
afterwards find their builds in the cache and the GPU is not left idle while nvcc runs. Each row
keeps a timeline of the evaluation's phases (seconds since it started), which is where the
turnaround goes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

from solforge.problems import load_problem, load_solution
from solforge.sandbox.api import EvalEvent, EvalOptions, EvalRequest
from solforge.sandbox.evaluate import evaluate
from solforge.sandbox.sol.score import geomean

HERE = Path(__file__).parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--traces", type=Path, required=True)
    parser.add_argument("--max-workloads", type=int, help="evaluate only the N smallest workloads of each problem")
    parser.add_argument("--only", nargs="*", help="problem/language pairs such as qwen3_8b_rmsnorm/cuda_cpp")
    parser.add_argument("--prebuild", type=int, metavar="JOBS", help="build every solution first, JOBS at a time")
    args = parser.parse_args(argv)
    paths = [p for p in sorted(HERE.glob("*/*.json")) if not args.only or f"{p.parent.name}/{p.stem}" in args.only]
    if args.prebuild:
        prebuild(paths, args.prebuild)
    summary: dict = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "solutions": []}
    failures = 0
    with args.traces.open("w") as traces_out:
        for path in paths:
            key = f"{path.parent.name}/{path.stem}"
            problem = load_problem(path.parent.name)
            solution = load_solution(path)
            workloads = sorted(problem.workloads, key=lambda w: sum(problem.definition.resolve_axes(w.axes).values()))
            if args.max_workloads:
                workloads = workloads[: args.max_workloads]
            started = time.perf_counter()
            timeline: list[tuple[float, str]] = []

            def on_event(event: EvalEvent, timeline: list[tuple[float, str]] = timeline,
                         started: float = started) -> None:
                if event.kind in ("progress", "build"):
                    timeline.append((round(time.perf_counter() - started, 2), event.message or event.kind))

            report = evaluate(EvalRequest(problem=problem.name, solution=solution,
                                          options=EvalOptions(workloads=[w.uuid for w in workloads])),
                              on_event=on_event)
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
                "timeline": timeline,
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


def prebuild(paths: list[Path], jobs: int) -> None:
    """Build every solution (compile only) so the evaluations after it find their builds cached."""

    def build(path: Path) -> str:
        problem = load_problem(path.parent.name)
        started = time.perf_counter()
        report = evaluate(EvalRequest(problem=problem.name, solution=load_solution(path),
                                      options=EvalOptions(compile_only=True, time_baseline=False)))
        ok = report.build is not None and report.build.ok
        return f"{path.parent.name}/{path.stem}: {'built' if ok else 'FAILED'} in {time.perf_counter() - started:.1f} s"

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for line in pool.map(build, paths):
            print(f"prebuild {line}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
