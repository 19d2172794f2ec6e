"""A changed cuda_cpp source, built with and without the precompiled torch/extension.h.

The solution is the hand-written Qwen3-8B RMSNorm (``binding.cpp`` includes torch/extension.h,
``kernel.cu`` no torch header), the size of SOL-ExecBench's rmsnorm example. Each round edits
``binding.cpp`` (a new build key), builds it once with the precompiled header and once in an empty
cache, then builds the unchanged source again (a cache hit).

    python benchmarks/build/bench_pch.py --out benchmarks/results/build_pch.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from solforge.problems import Solution
from solforge.sandbox.build import build_solution, pch

ROOT = Path(__file__).resolve().parents[2]


def _timed(solution: Solution, cache: Path) -> float:
    started = time.monotonic()
    report = build_solution(solution, target_arch="sm_90a", cache_dir=cache, timeout_s=900)
    if not report.ok:
        raise SystemExit(report.log)
    return time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    cache = Path(tempfile.mkdtemp(prefix="solforge-pch-"))
    started = time.monotonic()
    if pch.prepare(cache) is None:
        raise SystemExit("no precompiled header on this machine (GCC and the CUDA build of torch are needed)")
    result: dict = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "cpus": os.cpu_count(),
                    "cpu": platform.processor() or platform.machine(), "prepare_s": round(time.monotonic() - started, 1),
                    "with_pch_s": [], "without_pch_s": [], "unchanged_s": []}
    base = Solution.model_validate_json(
        (ROOT / "benchmarks" / "solutions" / "qwen3_8b_rmsnorm" / "cuda_cpp.json").read_text())
    for i in range(args.rounds):
        edited = base.model_copy(update={"sources": [
            s.model_copy(update={"content": s.content + f"\n// edit {i} {time.time()}\n"}) if s.path.endswith(".cpp")
            else s for s in base.sources]})
        result["with_pch_s"].append(round(_timed(edited, cache), 1))
        empty = Path(tempfile.mkdtemp(prefix="solforge-nopch-"))
        result["without_pch_s"].append(round(_timed(edited, empty), 1))
        result["unchanged_s"].append(round(_timed(edited, empty), 3))
    result["median_with_pch_s"] = statistics.median(result["with_pch_s"])
    result["median_without_pch_s"] = statistics.median(result["without_pch_s"])
    args.out.write_text(json.dumps(result, indent=1))
    print(json.dumps(result), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
