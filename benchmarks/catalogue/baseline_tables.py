"""The catalogue's baseline and speed-of-light tables for one GPU: every workload of every problem.

Per workload: the eager reference's latency, the reference under ``torch.compile`` (one static
graph per shape, as the engine's baseline compiles it), the baseline T_b = the faster of the two,
T_SOL with its bound from the datasheet, and the FLOPs and bytes behind it. Timing is
solforge's own (:func:`solforge.sandbox.timing.time_calls`: CUPTI, L2 flushed, fresh addresses).

Two phases, so that the hours of inductor compilation use every CPU core while the timing runs
alone on a quiet machine:

``--phase warm``  compiles every workload's graph in ``--jobs`` processes at once; inductor keeps
                  the results in its on-disk caches (``TORCHINDUCTOR_CACHE_DIR``, shared).
``--phase time``  one process times every workload; compiled graphs now load from the caches.

Both are resumable: one JSON file per problem under ``--out``; a problem already there is skipped.
These are trusted references run in-process, not candidates: no sandbox is needed, and none is used.

    python benchmarks/catalogue/baseline_tables.py --phase warm --jobs 14 --out tables/
    python benchmarks/catalogue/baseline_tables.py --phase time --out tables/ [--summary tables.md]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from solforge.problems import catalogue_names, load_problem
from solforge.problems.inputs import generate_inputs
from solforge.problems.reference import load_reference_module

WARMUP, ITERATIONS = 10, 30


def _compiled(module: Any) -> Any:
    import torch

    torch._dynamo.reset()  # a fresh graph per workload: no recompile limit, no shape guards from before
    return torch.compile(module.run, dynamic=False)


def _inputs(problem: Any, workload: Any, device: str) -> list[Any]:
    sizes = problem.definition.resolve_axes(workload.axes)
    named = generate_inputs(problem.definition, workload, sizes, device=device, seed_or_generator=1234,
                            problem_folder=problem.folder)
    return list(named.values())


def warm(name: str, device: str) -> tuple[str, float, str | None]:
    """Compile every workload of one problem once, filling inductor's caches."""
    import torch

    started = time.perf_counter()
    try:
        problem = load_problem(name)
        module = load_reference_module(problem.definition)
        with torch.no_grad():
            for workload in problem.workloads:
                _compiled(module)(*_inputs(problem, workload, device))
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        return name, time.perf_counter() - started, None
    except Exception as exc:
        return name, time.perf_counter() - started, f"{type(exc).__name__}: {exc}"[:400]


def _time(fn: Any, args: list[Any], device: str) -> float:
    import torch

    from solforge.sandbox.timing import ShiftingPool, time_calls

    pool = ShiftingPool(args, WARMUP + ITERATIONS)
    with torch.no_grad():
        m = time_calls(fn, pool.args_for_call, warmup=WARMUP, iterations=ITERATIONS, device=torch.device(device))
    return m.median_ms


def time_problem(name: str, device: str) -> dict[str, Any]:
    """Every workload of one problem: eager, compiled, baseline, T_SOL."""
    import torch

    from solforge.sandbox.sol.counting import count_workload
    from solforge.sandbox.sol.hardware import datasheet_peaks, match_spec
    from solforge.sandbox.sol.score import sol_time

    problem = load_problem(name)
    module = load_reference_module(problem.definition)
    gpu = torch.cuda.get_device_name() if device.startswith("cuda") else "cpu"
    spec = match_spec(gpu)
    peaks = datasheet_peaks(spec, gpu) if spec else None
    rows = []
    for workload in problem.workloads:
        sizes = problem.definition.resolve_axes(workload.axes)
        args = _inputs(problem, workload, device)
        row: dict[str, Any] = {"uuid": workload.uuid, "axes": workload.axes}
        for variant, fn in (("eager", module.run), ("compiled", None)):
            try:
                if fn is None:
                    started = time.perf_counter()
                    fn = _compiled(module)
                    with torch.no_grad():
                        fn(*args)  # from the warm caches when the warm phase ran
                    row["compile_s"] = round(time.perf_counter() - started, 2)
                row[f"{variant}_ms"] = _time(fn, args, device)
            except Exception as exc:
                row[f"{variant}_error"] = f"{type(exc).__name__}: {exc}"[:300]
        times = [row[k] for k in ("eager_ms", "compiled_ms") if k in row]
        row["baseline_ms"] = min(times) if times else None
        counts = count_workload(problem.definition, sizes, dict(zip(problem.definition.inputs, args, strict=True)))
        row.update(flops_tensor=dict(counts.tensor_core_flops), flops_other=counts.other_flops, bytes=counts.bytes)
        if peaks is not None:
            estimate = sol_time(counts, peaks)
            row.update(t_sol_ms=estimate.t_sol_ms, bound=estimate.bound)
        rows.append(row)
        del args
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
    return {"problem": name, "category": problem.definition.category, "hf_id": problem.definition.hf_id,
            "op_type": problem.definition.op_type, "gpu": gpu, "peaks": peaks.source if peaks else None,
            "torch": torch.__version__, "date": datetime.now(UTC).isoformat(timespec="seconds"), "workloads": rows}


def summary_markdown(out: Path) -> str:
    """One line per problem: workloads timed, median baseline/T_SOL ratio, bound, compiled wins."""
    lines = ["| problem | category | workloads | compiled faster on | median T_b / T_SOL | bound |",
             "| --- | --- | --- | --- | --- | --- |"]
    for path in sorted(out.glob("*.json")):
        data = json.loads(path.read_text())
        rows = data["workloads"]
        ratios = [r["baseline_ms"] / r["t_sol_ms"] for r in rows if r.get("baseline_ms") and r.get("t_sol_ms")]
        wins = sum(1 for r in rows if r.get("compiled_ms") is not None and r.get("eager_ms") is not None
                   and r["compiled_ms"] < r["eager_ms"])
        bounds = sorted({r.get("bound") for r in rows if r.get("bound")})
        median = f"{statistics.median(ratios):.1f}x" if ratios else "-"
        lines.append(f"| {data['problem']} | {data['category']} | {len(rows)} | {wins} | {median} | {'/'.join(bounds)} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--phase", choices=["warm", "time"], required=True)
    parser.add_argument("--out", type=Path, required=True, help="one JSON per problem (time phase)")
    parser.add_argument("--problems", nargs="*", help="names (default: the whole catalogue)")
    parser.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) - 2))
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--deadline-s", type=float, help="stop starting new problems after this many seconds")
    parser.add_argument("--summary", type=Path, help="write a markdown summary of everything under --out")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    names = [n for n in (args.problems or catalogue_names()) if not (args.out / f"{n}.json").exists()]
    started = time.perf_counter()
    if args.phase == "warm":
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            futures = [pool.submit(warm, n, args.device) for n in names]
            for future in as_completed(futures):
                name, seconds, error = future.result()
                print(f"warm {name:50s} {seconds:6.1f} s {error or ''}", file=sys.stderr, flush=True)
    else:
        for name in names:
            if args.deadline_s and time.perf_counter() - started > args.deadline_s:
                print(f"deadline: {len(names) - names.index(name)} problems left for the next run", file=sys.stderr)
                break
            try:
                data = time_problem(name, args.device)
            except Exception:
                print(f"time {name}: FAILED\n{traceback.format_exc()[-800:]}", file=sys.stderr, flush=True)
                continue
            (args.out / f"{name}.json").write_text(json.dumps(data, indent=1))
            print(f"time {name:50s} {len(data['workloads'])} workloads", file=sys.stderr, flush=True)
    if args.summary:
        args.summary.write_text(summary_markdown(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
