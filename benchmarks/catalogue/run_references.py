"""Evaluate every catalogue problem's reference as a solution and record the results.

On a GPU this measures, per workload, the reference's latency, the baseline T_b (eager vs
torch.compile), T_SOL and its bound, which is what the catalogue ships as its speed-of-light and
baseline table for that GPU. On the CPU it checks that every reference passes as a solution.

    python benchmarks/catalogue/run_references.py --smallest 2 --out results.json [--jobs 8] [--no-baseline]

``--jobs`` evaluates several problems at once (each in its own judge and candidate processes): for
the pass/fail check, not for timings, which need the GPU to themselves. The output file is rewritten
after every problem, and a problem already in it is skipped, so a run cut short resumes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
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
    parser.add_argument("--jobs", type=int, default=1, help="problems evaluated at once")
    parser.add_argument("--no-baseline", action="store_true", help="skip the baseline (pass/fail only)")
    args = parser.parse_args(argv)

    previous = json.loads(args.out.read_text()) if args.out.is_file() else {}
    results: list[dict] = previous.get("results", [])
    done = {r["problem"] for r in results}
    names = [n for n in args.problems or catalogue_names() if n not in done]
    env: dict = previous.get("environment", {})

    def one(name: str) -> tuple[dict, dict]:
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
            time_baseline=not args.no_baseline,
        )
        started = time.perf_counter()
        report = evaluate(
            EvalRequest(problem=name, solution=reference_solution(problem.definition), options=options)
        )
        rows = []
        for t in report.traces:
            ev = t.evaluation
            perf = ev.performance
            fields = ("latency_ms", "reference_latency_ms", "baseline_latency_ms", "sol_latency_ms", "sol_bound",
                      "sol_score", "timer", "peak_source")
            rows.append({"uuid": t.workload.uuid, "axes": t.workload.axes, "status": ev.status.value,
                         "log": ev.log[:300],
                         **({k: getattr(perf, k) for k in fields} if perf else {})})
        result = {"problem": name, "device": report.device, "seconds": round(time.perf_counter() - started, 1),
                  "workloads": rows}
        environment = report.traces[0].evaluation.environment.model_dump() if report.traces else {}
        return result, environment

    failures = 0
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for result, environment in pool.map(one, names):
            results.append(result)
            env = env or environment
            rows = result["workloads"]
            passed = sum(r["status"] == "PASSED" for r in rows)
            failures += len(rows) - passed
            print(f"{result['problem']:45s} {passed}/{len(rows)} passed  {result['seconds']:6.1f} s", file=sys.stderr)
            for r in rows:
                if r["status"] != "PASSED":
                    print(f"    {r['uuid'][:8]} {r['status']}: {r['log'][:200]}", file=sys.stderr)
            args.out.write_text(json.dumps(
                {"date": datetime.now(UTC).isoformat(timespec="seconds"), "environment": env, "results": results},
                indent=1))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
