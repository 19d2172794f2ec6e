"""What the reward-hack defences cost: evaluation time with and without them, on three problems.

Each problem's reference runs as an honest pytorch solution, alternately with the defences of
sandbox/defences/ on (the default) and off (``SOLFORGE_DEFENCES=off``, which only the judge reads
and which a submission ignores). What the switch turns off: the static checks, Landlock and seccomp,
the audit hook, the integrity snapshot of the harness, fresh inputs for every timed call (and the
judge's separate check set with its reference run), the unjoined-stream check, the channel nonce,
and stopping the candidate before an uncached baseline. The process boundary itself (judge and
candidate processes, scrubbed environment, limits, network namespace) stays in both modes.

Reported per problem: the wall time of a whole evaluation (median over ``--repeats``), the candidate's
measured kernel latency (median of the timed calls), and the overhead of the defences on each.

    .venv/bin/python benchmarks/trust/bench_defences.py                 # CPU here, GPU where one is visible
    .venv/bin/python benchmarks/trust/bench_defences.py --device cuda --rounds 3 --iterations 50
    .venv/bin/python benchmarks/trust/bench_defences.py --warm --out benchmarks/results/defences_warm.json

``--warm`` measures the path agents meet: two warm judges (one started with the defences on, one
with them off, since the judge reads the switch from its environment) serve the evaluations
alternately, so the figures are a warm evaluation's and not dominated by process start-up.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from solforge.problems import load_problem, reference_solution
from solforge.sandbox.api import EvalOptions, EvalReport, EvalRequest
from solforge.sandbox.defences import DEFENCES_ENV
from solforge.sandbox.evaluate import evaluate
from solforge.sandbox.warm import WarmJudge

ROOT = Path(__file__).resolve().parents[2]
# (problem, workload uuid): small enough for a CPU, representative on a GPU (memory-bound norms and a GEMM).
PROBLEMS: list[tuple[str, str]] = [
    (str(ROOT / "tests" / "data" / "sol_execbench_rmsnorm"), "a1b2c3d4-0002"),  # 7 x 4096 RMSNorm
    ("qwen3_8b_rmsnorm", "4d874497-509b-5838-b4aa-fcdbce69991d"),  # 64 tokens
    ("llama3_1_8b_qkv_proj_gemm", "43e9c7bc-7b33-5ddc-885c-b94fbb5fc147"),  # 1 token x 6144 x 4096 GEMV
]


@contextlib.contextmanager
def defences(on: bool) -> Iterator[None]:
    """Set the judge's switch for the evaluations inside (evaluate() passes its environment on)."""
    previous = os.environ.get(DEFENCES_ENV)
    if on:
        os.environ.pop(DEFENCES_ENV, None)
    else:
        os.environ[DEFENCES_ENV] = "off"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(DEFENCES_ENV, None)
        else:
            os.environ[DEFENCES_ENV] = previous


def run_once(problem: str, workload: str, options: dict[str, Any], on: bool,
             judges: dict[bool, WarmJudge] | None = None) -> tuple[float, EvalReport]:
    definition = load_problem(problem).definition
    request = EvalRequest(problem=problem, solution=reference_solution(definition),
                          options=EvalOptions(**options, workloads=[workload]))
    with defences(on):
        started = time.perf_counter()
        report = evaluate(request, judge=judges[on] if judges else None)
        return time.perf_counter() - started, report


@contextlib.contextmanager
def warm_judges(device: str) -> Iterator[dict[bool, WarmJudge]]:
    """A warm judge per mode, each started under its own setting of the switch."""
    judges: dict[bool, WarmJudge] = {}
    try:
        for on in (True, False):
            with defences(on):
                judges[on] = WarmJudge(device=device, gpu_index=0 if device != "cpu" else None)
                judges[on].start()
        yield judges
    finally:
        for judge in judges.values():
            judge.close()


def _latency(report: EvalReport) -> float | None:
    perf = report.traces[0].evaluation.performance if report.traces and report.traces[0].evaluation else None
    return perf.latency_ms if perf else None


def _machine(device: str) -> dict[str, Any]:
    info: dict[str, Any] = {"host": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version()}
    with contextlib.suppress(Exception):
        import torch

        info["torch"] = torch.__version__
        if device != "cpu" and torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name(0)
    with contextlib.suppress(OSError):
        info["load_average"] = os.getloadavg()
    return info


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--repeats", type=int, default=3, help="evaluations per problem and mode")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--warm", action="store_true", help="evaluate through warm judges, as the MCP server does")
    parser.add_argument("--pause-s", type=float, default=0.0,
                        help="wait this long after each evaluation (an agent's think time; 0 = a busy queue)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "defences.json")
    args = parser.parse_args(argv)

    options = {"device": args.device, "rounds": args.rounds, "iterations": args.iterations, "warmup": args.warmup,
               "run_timeout_s": 600}
    rows = []
    with contextlib.ExitStack() as stack:
        cache = stack.enter_context(tempfile.TemporaryDirectory(prefix="solforge-bench-defences-"))
        judges = stack.enter_context(warm_judges(args.device)) if args.warm else None
        options["cache_dir"] = Path(cache)
        for problem, workload in PROBLEMS:
            name = Path(problem).name
            # Untimed first run: fills the build and baseline caches both modes then share.
            statuses: set[str] = set()
            for on in (True, False) if judges else (True,):  # a warm judge's first evaluation starts it up
                _, first = run_once(problem, workload, options, on, judges)
                statuses.add(first.traces[0].evaluation.status.value if first.traces else "none")
            samples: dict[bool, list[tuple[float, float | None]]] = {True: [], False: []}
            for _ in range(args.repeats):
                for on in (True, False):  # interleaved, so drift in machine load hits both alike
                    seconds, report = run_once(problem, workload, options, on, judges)
                    time.sleep(args.pause_s)
                    statuses |= {t.evaluation.status.value for t in report.traces if t.evaluation}
                    samples[on].append((seconds, _latency(report)))
            row: dict[str, Any] = {"problem": name, "workload": workload, "statuses": sorted(statuses)}
            for on, label in ((True, "on"), (False, "off")):
                seconds = [s for s, _ in samples[on]]
                latencies = [lat for _, lat in samples[on] if lat is not None]
                row[f"eval_s_{label}"] = statistics.median(seconds)
                row[f"eval_s_{label}_all"] = [round(s, 3) for s in seconds]
                row[f"latency_ms_{label}"] = statistics.median(latencies) if latencies else None
            row["eval_overhead_pct"] = 100 * (row["eval_s_on"] / row["eval_s_off"] - 1)
            if row["latency_ms_on"] and row["latency_ms_off"]:
                row["latency_overhead_pct"] = 100 * (row["latency_ms_on"] / row["latency_ms_off"] - 1)
            rows.append(row)
            print(json.dumps(row), flush=True)
    timer = "cpu" if args.device == "cpu" else "auto"
    result = {
        "benchmark": "benchmarks/trust/bench_defences.py",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": _machine(args.device),
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in options.items() if k != "cache_dir"}
        | {"repeats": args.repeats, "timer": timer, "path": "warm judge" if args.warm else "one-shot",
                                        "pause_s": args.pause_s},
        "results": rows,
        "note": ("eval_s: wall time of one whole evaluation (judge, build from cache, candidate, correctness rounds, "
                 "timing, baseline from cache); latency_ms: the median timed call. On a CPU the latency is a host "
                 "timing and the evaluation is dominated by process start-up (importing torch twice)."),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0 if all(r["statuses"] == ["PASSED"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
