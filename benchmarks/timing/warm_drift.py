"""Per-workload medians of one solution: a fresh judge once, then a warm judge several times.

The turnaround benchmark reports only the largest drift and spread; this prints every workload's
median and interquartile range per evaluation, to see which workloads drift and why.

    python benchmarks/timing/warm_drift.py --language pytorch --out drift.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from solforge.problems import Solution
from solforge.sandbox.api import EvalOptions, EvalReport, EvalRequest
from solforge.sandbox.evaluate import evaluate
from solforge.sandbox.warm import WarmJudge

ROOT = Path(__file__).resolve().parents[2]


def _row(report: EvalReport, seconds: float, label: str) -> dict[str, Any]:
    """One evaluation: its wall time, its phases and (median, IQR) per workload, keyed by its axes."""
    perf = {json.dumps(t.workload.axes, sort_keys=True): (t.evaluation.performance.latency_ms,
                                                         t.evaluation.performance.latency_iqr_ms)
            for t in report.traces if t.evaluation.performance}
    return {"label": label, "seconds": round(seconds, 2), "phases": report.phases, "perf": perf}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--problem", default="qwen3_8b_rmsnorm")
    parser.add_argument("--language", default="pytorch")
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--pause-s", type=float, default=3.0)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    path = ROOT / "benchmarks" / "solutions" / args.problem / f"{args.language}.json"
    request = EvalRequest(problem=args.problem, solution=Solution.model_validate(json.loads(path.read_text())),
                          options=EvalOptions(device="cuda"))
    rows = []
    started = time.monotonic()
    rows.append(_row(evaluate(request), time.monotonic() - started, "fresh"))
    with WarmJudge(device="cuda", gpu_index=0) as judge:
        for i in range(args.repeats):
            started = time.monotonic()
            rows.append(_row(evaluate(request, judge=judge), time.monotonic() - started, f"warm{i}"))
            time.sleep(args.pause_s)
    args.out.write_text(json.dumps(rows, indent=1, default=str))
    print("workload (median ± IQR, us) " + " ".join(f"{r['label']:>16}" for r in rows))
    for key in rows[0]["perf"]:
        cells = []
        for row in rows:
            median, iqr = row["perf"].get(key, (0.0, 0.0))
            cells.append(f"{median * 1e3:8.2f}±{(iqr or 0.0) * 1e3:6.2f}")
        print(f"{key:>27} " + " ".join(cells))
    print(f"{'seconds':>27} " + " ".join(f"{r['seconds']:>16}" for r in rows))


if __name__ == "__main__":
    main()
