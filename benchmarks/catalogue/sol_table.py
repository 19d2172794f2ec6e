"""The catalogue's speed-of-light table for one GPU's datasheet: every workload, no GPU needed.

FLOPs (tensor-core by dtype, and the rest) and DRAM bytes are counted from each reference on meta
tensors (:func:`solforge.sandbox.sol.counting.counts_for_problem`), then turned into T_SOL and its
bound with the datasheet peaks of ``--gpu`` (:func:`solforge.sandbox.sol.score.sol_time`), exactly as
the engine scores a run. The measured baselines go beside it from ``baseline_tables.py``.

    python benchmarks/catalogue/sol_table.py --gpu H200 --out benchmarks/results/catalogue_sol_h200.csv
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections import Counter
from pathlib import Path

from solforge.problems import iter_catalogue
from solforge.sandbox.sol.counting import counts_for_problem
from solforge.sandbox.sol.hardware import datasheet_peaks, match_spec
from solforge.sandbox.sol.score import sol_time

COLUMNS = ("problem", "category", "op_type", "hf_id", "workload", "axes", "tensor_flops", "other_flops", "bytes",
           "t_sol_us", "bound", "compute_us", "memory_us")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpu", default="H200", help="a datasheet key or GPU name (default H200)")
    parser.add_argument("--out", type=Path, required=True, help="CSV, one row per workload")
    parser.add_argument("--cache-dir", type=Path, help="reuse counted FLOPs and bytes from this folder")
    args = parser.parse_args(argv)
    spec = match_spec(args.gpu)
    if spec is None:
        parser.error(f"no datasheet for {args.gpu!r}")
    peaks = datasheet_peaks(spec)
    bounds: Counter[str] = Counter()
    rows = 0
    with args.out.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        for problem in sorted(iter_catalogue(), key=lambda p: p.name):
            d = problem.definition
            counts = counts_for_problem(problem, cache_dir=args.cache_dir)
            for workload in problem.workloads:
                c = counts[workload.uuid]
                estimate = sol_time(c, peaks)
                bounds[estimate.bound] += 1
                rows += 1
                writer.writerow([
                    d.name, d.category, d.op_type, d.hf_id, workload.uuid,
                    json.dumps(workload.axes, sort_keys=True), json.dumps(c.tensor_core_flops, sort_keys=True),
                    f"{c.other_flops:.0f}", f"{c.bytes:.0f}", f"{estimate.t_sol_ms * 1e3:.4f}", estimate.bound,
                    f"{estimate.compute_ms * 1e3:.4f}", f"{estimate.memory_ms * 1e3:.4f}",
                ])
    print(f"{rows} workloads on {peaks.source}: {dict(bounds)} -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
