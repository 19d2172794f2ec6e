"""Do a swarm's timings depend on how many jobs share the GPU slot? The same solutions' latencies across runs.

    python benchmarks/gpu/compare_swarm_timings.py lanes2=swarm_ledger.db.gz lanes8=lanes8_ledger.db.gz \
        [--out timings.json]

Scripted agents submit the same hand-written sources in every run, so one (solution, workload) is timed
several times per run and once or more in each run. For each kind of solution (the scripted name's last
part: ``pytorch``, ``triton``, ``cuda_cpp`` and ``cute_dsl`` are single kernels or eager PyTorch, ``v1``-``v3``
an improving agent's versions, which call the kernel several times), this prints the spread of repeated
timings within each run, (max - min) / median, and the drift of the median from the first run to each
other. More lanes mean more processes loading solutions beside the one being timed; a kernel that the
GPU time-slices with another process's work, or a launch sequence that waits for a busy CPU, shows here.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sqlite3
import statistics
import tempfile
from collections import defaultdict
from pathlib import Path

Key = tuple[str, str, str, str]  # kind, problem, solution hash, workload uuid
KINDS = ("pytorch", "triton", "cuda_cpp", "cute_dsl", "v1", "v2", "v3")


def _open(path: Path, scratch: Path) -> sqlite3.Connection:
    if path.suffix == ".gz":
        plain = scratch / path.stem
        with gzip.open(path) as src, plain.open("wb") as dst:
            shutil.copyfileobj(src, dst)
        path = plain
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def latencies(db: sqlite3.Connection) -> dict[Key, list[float]]:
    """Every PASSED workload's latency (ms) of the run's finished slot jobs, by solution and workload."""
    out: dict[Key, list[float]] = defaultdict(list)
    rows = db.execute("SELECT j.solution_name, j.solution_hash, p.result_json FROM job AS j "
                      "JOIN job_payload AS p ON p.job_id = j.id WHERE j.status = 'done' AND p.result_json IS NOT NULL")
    for name, solution_hash, result in rows:
        kind = name.rsplit("-", 1)[-1]
        for trace in json.loads(result).get("traces") or []:
            evaluation = trace["evaluation"]
            latency = (evaluation.get("performance") or {}).get("latency_ms")
            if evaluation["status"] == "PASSED" and latency:
                out[(kind, trace["definition"], solution_hash, trace["workload"]["uuid"])].append(latency)
    return out


def _quantiles(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    ordered = sorted(values)
    at = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return {"n": len(values), "median_pct": round(100 * statistics.median(values), 2),
            "p90_pct": round(100 * at(0.9), 2), "max_pct": round(100 * ordered[-1], 2)}


def compare(runs: dict[str, dict[Key, list[float]]]) -> dict[str, dict[str, object]]:
    """Per kind: the spread within each run and the |drift| of medians from the first run to each other."""
    first = next(iter(runs))
    result: dict[str, dict[str, object]] = {}
    for kind in KINDS:
        spread = {name: _quantiles([(max(v) - min(v)) / statistics.median(v) for k, v in timed.items()
                                    if k[0] == kind and len(v) >= 2]) for name, timed in runs.items()}
        drift = {f"{first}->{name}": _quantiles([
            abs(statistics.median(timed[k]) / statistics.median(runs[first][k]) - 1)
            for k in runs[first] if k[0] == kind and k in timed]) for name, timed in runs.items() if name != first}
        result[kind] = {"spread": spread, "drift": drift}
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", help="NAME=LEDGER (an SQLite file, or .gz); the first is the reference")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        runs: dict[str, dict[Key, list[float]]] = {}
        for spec in args.runs:
            name, _, path = spec.partition("=")
            db = _open(Path(path), Path(scratch))
            try:
                runs[name] = latencies(db)
            finally:
                db.close()
    table = compare(runs)
    for kind, parts in table.items():
        cells = [f"{name} spread {q['median_pct']}/{q['p90_pct']}%" for name, q in parts["spread"].items() if q]  # type: ignore[union-attr]
        cells += [f"{name} drift {q['median_pct']}/{q['p90_pct']}%" for name, q in parts["drift"].items() if q]  # type: ignore[union-attr]
        print(f"{kind:9s} " + "; ".join(cells) + "  (median/p90)")
    if args.out:
        args.out.write_text(json.dumps(table, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
