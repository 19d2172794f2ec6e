"""The catalogue's speed-of-light counts, shipped so that a first evaluation does not trace the reference.

A judge scores every workload against T_SOL, which needs the reference's FLOPs and bytes. Counting them
traces the reference on meta tensors; the first trace in a process imports torch._dynamo, and on an H200
host a first evaluation spent 5.5-6.6 s in it (2026-12-03). This writes one record per workload to
``problems/baselines/sol_counts.jsonl`` (:data:`solforge.sandbox.sol.counting.SHIPPED_COUNTS`), keyed as
the judge keys its count cache: reference, sizes, input layouts, torch version, counting version. A judge
with another torch version finds no match and traces, as without the table.

Counting runs on the CPU in seconds; run it with the torch version of the GPU machines the table is for
(records of other torch versions already in the file are kept):

    python benchmarks/catalogue/count_tables.py --jobs 14            # every catalogue problem
    python benchmarks/catalogue/count_tables.py qwen3_8b_rmsnorm     # some

About 2 s per problem in one process (the whole catalogue: 10 minutes on 2 cores), so ``--jobs`` spreads
the problems over processes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from solforge.problems import catalogue_names, load_problem, tables_dir
from solforge.sandbox.sol.counting import SHIPPED_COUNTS, shipped_count_record


def count_problem(name: str) -> tuple[str, list[dict[str, Any]], list[str]]:
    """The records of one problem's workloads, and the workloads not countable on meta tensors."""
    problem = load_problem(name)
    records, skipped = [], []
    for workload in problem.workloads:
        record = shipped_count_record(problem, workload)
        if record is None:
            skipped.append(f"{name}/{workload.uuid}")
        else:
            records.append(record)
    return name, records, skipped


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("problems", nargs="*", help="catalogue problems (default: all)")
    parser.add_argument("--out", type=Path, default=None, help=f"default: the shipped {SHIPPED_COUNTS}")
    parser.add_argument("--jobs", type=int, default=max(1, min(16, (os.cpu_count() or 2) - 1)))
    args = parser.parse_args()
    import torch

    out = args.out or tables_dir() / SHIPPED_COUNTS
    kept: dict[str, dict] = {}
    if out.is_file():
        for line in out.read_text().splitlines():
            if line.strip():
                record = json.loads(line)
                kept[record["key"]] = record
    names = args.problems or catalogue_names()
    version = torch.__version__.split("+")[0]
    # This torch's records of the problems counted now are replaced; other torch versions' stay.
    recounted = set(names)
    kept = {k: r for k, r in kept.items() if r["problem"] not in recounted or r.get("torch") != version}
    started, counted, skipped = time.perf_counter(), 0, []
    with ProcessPoolExecutor(max_workers=max(1, min(args.jobs, len(names)))) as pool:
        for _name, records, missed in pool.map(count_problem, names):
            for record in records:
                kept[record["key"]] = {**record, "torch": version}
            counted += len(records)
            skipped += missed
    lines = sorted(kept.values(), key=lambda r: (r["problem"], r["workload"], r.get("torch", "")))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in lines))
    print(f"{counted} counts of {len(names)} problems in {time.perf_counter() - started:.1f} s with torch "
          f"{torch.__version__} -> {out} ({len(lines)} records); not countable on meta tensors: {len(skipped)}",
          file=sys.stderr)
    for item in skipped[:20]:
        print(f"  {item}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
