"""Evaluate every catalogue problem's reference as a solution and record the results.

On a GPU this measures, per workload, the reference's latency, the baseline T_b (eager vs
torch.compile), T_SOL and its bound, which is what the catalogue ships as its speed-of-light and
baseline table for that GPU. On the CPU it checks that every reference passes as a solution.

    python benchmarks/catalogue/run_references.py --smallest 2 --out results.json [--jobs 8] [--no-baseline]
    python benchmarks/catalogue/run_references.py --out h200.json --table problems/baselines/nvidia-h200.jsonl \
        --csv benchmarks/results/catalogue_h200.csv --cache-dir /tmp/fresh   # on the GPU: the shipped tables

``--table`` merges the baselines the judge measured (its own baseline path: eager and ``torch.compile``
in their own processes, keyed as its cache keys them) into a shipped table, one record per line; ``--csv``
writes one row per workload evaluated: its axes, the baseline's variants, T_SOL and bound, how close the
baseline already is to speed of light (``T_SOL / T_b``) and the reference's status.

``--jobs`` evaluates several problems at once (each in its own judge and candidate processes): for
the pass/fail check, not for timings, which need the GPU to themselves. With one job, one warm judge
serves every problem: torch and CUDA load once, and each problem finds its processes started (a judge
per problem spent 5-7 s of a 19-58 s problem waiting for them on the H200, 2026-12-04; one warm judge still
3.8 s, so it keeps one evaluation's processes ahead: ``SOLFORGE_SPARES_AHEAD=1`` unless set). The output file is
rewritten after every problem, and a problem already in it is skipped, so a run cut short resumes.
``--deadline-s`` stops starting problems after that many seconds; ``--expected-from`` (another run's output,
such as the H100's) with ``--finish-by-s`` also holds back a problem whose time there, doubled, would end past the
call's limit, and goes on with shorter ones.

``--precompile-jobs N`` (with ``--cache-dir``) splits a GPU run into chunks (``--precompile-chunk``, 2N problems
unless set), each in two passes. First, N problems at a time are evaluated in judges of their own, only so that
the judge keeps each compiled reference's inductor graphs and Triton kernels (the baseline phase, mostly
torch.compile once per workload shape, was 72% of a catalogue problem's time on the H200, 2026-12-05; compiling
is CPU work, which spreads over the host's cores). What those judges timed with the GPU shared is thrown away.
Then one warm judge times the chunk alone on the GPU, as without the option: each compiled baseline loads its
graphs rather than building them, and autotunes its kernels on an idle GPU (the baseline keeps no autotuning
choice). A problem whose compiled variant still fails is measured once more with its kept caches dropped, so a
bad cache costs time, never a baseline.
On the H100 (2026-12-05) the pass gained nothing overall: 16 problems built 8 at a time took 154 s, and the
timing pass still spent 6-65 s per problem in its baseline phase (dynamo traces every shape again, and inductor
autotunes again on the idle GPU); a kept cache halved it for one problem's six smallest workloads (3.8 s
against 8.1 s). So it is off unless asked for.

``--recount`` measures nothing: it rewrites ``--out`` and ``--csv`` with T_SOL, its bound and the SOL score
counted again for every row scored on datasheet peaks, after a definition's FLOP or byte model was corrected
(the baselines and latencies stay as measured). Name the corrected problems with ``--problems``: a count made
here with another torch than the GPU's can differ a little for every other problem too (one mamba2 chunk scan's
T_SOL moved by 1% under torch 2.14 against the H100's 2.11).

The CSV's ``checks`` column flags what a workload's baseline says about it (``baseline_checks``): faster
than T_SOL (a counting error, or a reference that does less than its definition), a compiled variant over
twice as slow as eager, a launch-bound baseline under 5 us.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

from solforge.problems import catalogue_names, load_problem, reference_solution
from solforge.problems.files import write_text_atomic
from solforge.sandbox.api import BaselineRecord, EvalOptions, EvalRequest
from solforge.sandbox.baseline import baseline_checks, shipped_records
from solforge.sandbox.evaluate import evaluate
from solforge.sandbox.sol.counting import counts_for_workloads
from solforge.sandbox.sol.hardware import datasheet_peaks, match_spec
from solforge.sandbox.sol.score import sol_score, sol_time
from solforge.sandbox.warm import WarmJudge


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
    parser.add_argument("--table", type=Path, help="merge the measured baselines into this JSONL table")
    parser.add_argument("--deadline-s", type=float,
                        help="start no problem after this many seconds (a device call's limit; run again to resume)")
    parser.add_argument("--expected-from", type=Path,
                        help="an earlier run's --out, on any GPU: with --finish-by-s, the problems' expected times")
    parser.add_argument("--finish-by-s", type=float,
                        help="with --expected-from, start a problem only when it should end by this many seconds "
                             "(a longer one is left for the next run, and shorter ones after it still start)")
    parser.add_argument("--cache-dir", type=Path,
                        help="the judge's cache (default: the user's); a fresh one with --table, so that the "
                             "baselines are measured rather than read from an earlier run's cache")
    parser.add_argument("--csv", type=Path, help="one row per evaluated workload (catalogue_<gpu>.csv)")
    parser.add_argument("--recount", action="store_true",
                        help="measure nothing: count T_SOL again for the rows of --out (datasheet peaks) and rewrite it")
    parser.add_argument("--precompile-jobs", type=int, default=0,
                        help="build each chunk's compiled baselines this many problems at a time first (needs --cache-dir)")
    parser.add_argument("--precompile-chunk", type=int, help="problems per chunk (default: twice --precompile-jobs)")
    args = parser.parse_args(argv)
    if args.precompile_jobs and args.cache_dir is None:
        parser.error("--precompile-jobs needs --cache-dir (the compiled baselines are kept there for the timing pass)")

    previous = json.loads(args.out.read_text()) if args.out.is_file() else {}
    results: list[dict] = previous.get("results", [])
    if args.recount:
        changed = recount(results, set(args.problems) if args.problems else None)
        write_text_atomic(args.out, json.dumps({**previous, "results": results}, indent=1))
        if args.csv is not None:
            write_csv(args.csv, results)
        print(f"T_SOL counted again: {changed} row(s) changed", file=sys.stderr)
        return 0
    done = {r["problem"] for r in results}
    names = [n for n in args.problems or catalogue_names() if n not in done]
    env: dict = previous.get("environment", {})

    started_at = time.monotonic()
    stop_at = started_at + args.deadline_s if args.deadline_s is not None else None
    finish_at = started_at + args.finish_by_s if args.finish_by_s is not None else None
    expected = expected_seconds(args.expected_from) if args.expected_from is not None else {}
    judges = contextlib.ExitStack()
    # Problems back to back: the warm judge keeps one evaluation's processes ahead, so each problem finds its
    # candidate and baseline processes started (3.8 s a problem spent waiting for them on the H200 without it; 0.42 s
    # with it on the H100, 2026-12-05).
    os.environ.setdefault("SOLFORGE_SPARES_AHEAD", "1")
    judge = judges.enter_context(WarmJudge(device=args.device)) if args.jobs <= 1 else None

    def request(name: str, *, rounds: int, iterations: int, cache_dir: Path | None = args.cache_dir) -> EvalRequest:
        problem = load_problem(name)
        workloads = sorted(
            problem.workloads, key=lambda w: sum(problem.definition.resolve_axes(w.axes).values())
        )
        if args.smallest:
            workloads = workloads[: args.smallest]
        options = EvalOptions(
            workloads=[w.uuid for w in workloads],
            rounds=rounds,
            iterations=iterations,
            device=args.device,
            time_baseline=not args.no_baseline,
            **({"cache_dir": cache_dir} if cache_dir is not None else {}),
        )
        return EvalRequest(problem=name, solution=reference_solution(problem.definition), options=options)

    precompiled: set[str] = set()

    def one(name: str) -> tuple[dict, dict] | None:
        if not may_start(name, time.monotonic(), stop_at, finish_at, expected):
            return None
        started = time.perf_counter()
        report = evaluate(request(name, rounds=args.rounds, iterations=args.iterations), judge=judge)
        if name in precompiled and any(b.compiled_error for b in report.baselines):
            print(f"    {name}: the compiled baseline failed with kept caches; measured again in an empty cache",
                  file=sys.stderr)
            empty = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=args.cache_dir))
            report = evaluate(request(name, rounds=args.rounds, iterations=args.iterations, cache_dir=empty),
                              judge=judge)
        measured = {b.workload: b for b in report.baselines}
        # A baseline the judge took from the shipped table is not in the report: the table's record with the
        # same workload and T_b is the one it used.
        shipped = shipped_records(name, report.traces[0].evaluation.environment.hardware) if report.traces else []
        rows = []
        for t in report.traces:
            ev = t.evaluation
            perf = ev.performance
            fields = ("latency_ms", "reference_latency_ms", "baseline_latency_ms", "sol_latency_ms", "sol_bound",
                      "sol_score", "timer", "peak_source")
            base = measured.get(t.workload.uuid) or next(
                (r for r in shipped if perf and r.workload == t.workload.uuid and r.baseline_ms == perf.baseline_latency_ms),
                None)
            rows.append({"uuid": t.workload.uuid, "axes": t.workload.axes, "status": ev.status.value,
                         "log": ev.log[:300],
                         **({k: getattr(perf, k) for k in fields} if perf else {}),
                         **(base.model_dump(include={"eager_ms", "compiled_ms", "eager_error", "compiled_error"})
                            if base else {})})
        result = {"problem": name, "device": report.device, "seconds": round(time.perf_counter() - started, 1),
                  "phases": report.phases, "workloads": rows, "baselines": [b.model_dump(exclude={"source"}) for b in report.baselines]}
        environment = report.traces[0].evaluation.environment.model_dump() if report.traces else {}
        return result, environment

    def precompile(chunk: list[str]) -> None:
        """Evaluate ``chunk`` ``--precompile-jobs`` problems at a time, for the compiled baselines' caches only."""
        started = time.perf_counter()

        def build(name: str) -> bool:
            try:
                return bool(evaluate(request(name, rounds=1, iterations=3)).baselines)
            except Exception as exc:  # only a cache is lost: the timing pass compiles what is missing itself
                print(f"    precompile of {name} failed: {exc}", file=sys.stderr)
                return False

        with ThreadPoolExecutor(max_workers=args.precompile_jobs) as builders:
            kept = sum(builders.map(build, chunk))
        forget_timings(args.cache_dir, chunk)
        precompiled.update(chunk)
        print(f"precompiled {kept}/{len(chunk)} problem(s)' baselines in {time.perf_counter() - started:.1f} s",
              file=sys.stderr)

    def answers(pool: ThreadPoolExecutor):
        if not args.precompile_jobs:
            yield from pool.map(one, names)
            return
        size = args.precompile_chunk or 2 * args.precompile_jobs
        last_chunk_s = 0.0
        for i in range(0, len(names), size):
            if stop_at is not None and time.monotonic() + last_chunk_s > stop_at:
                return  # a chunk started now would be cut short after paying for its precompile
            started = time.monotonic()
            chunk = names[i:i + size]
            precompile(chunk)
            yield from map(one, chunk)
            last_chunk_s = time.monotonic() - started

    failures = 0
    with judges, ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for answer in answers(pool):
            if answer is None:
                continue  # past the deadline: left for the next run
            result, environment = answer
            results.append(result)
            env = env or environment
            rows = result["workloads"]
            passed = sum(r["status"] == "PASSED" for r in rows)
            failures += len(rows) - passed
            phases = " ".join(f"{k} {v:.1f}" for k, v in sorted(result["phases"].items(), key=lambda kv: -kv[1])[:4])
            print(f"{result['problem']:45s} {passed}/{len(rows)} passed  {result['seconds']:6.1f} s  ({phases})",
                  file=sys.stderr)
            for r in rows:
                if r["status"] != "PASSED":
                    print(f"    {r['uuid'][:8]} {r['status']}: {r['log'][:200]}", file=sys.stderr)
            # Atomic writes: a device call's time limit may stop this at any moment, and its files still come back.
            write_text_atomic(args.out, json.dumps(
                {"date": datetime.now(UTC).isoformat(timespec="seconds"), "environment": env, "results": results},
                indent=1))
            if args.table is not None:
                merge_table(args.table, result["baselines"])
            if args.csv is not None:
                write_csv(args.csv, results)
    finished = {r["problem"] for r in results}
    left = [n for n in args.problems or catalogue_names() if n not in finished]
    print(f"{len(finished)} problem(s) done, {len(left)} left", file=sys.stderr)
    return 1 if failures else 0


# How much longer than its expected time a problem may run: over the first 85 problems the H200 took 0.48-2.82x
# the H100's time (gpt_oss_20b_rope_yarn: 19.7 s, then 55.6 s; 2026-12-07), so twice covers 80 of them; the other
# 5 have only the 10 s that h200_turnaround.sh leaves between --finish-by-s and the step's own limit.
EXPECTED_MARGIN = 2.0


def expected_seconds(path: Path) -> dict[str, float]:
    """Each problem's time in an earlier run's output file."""
    return {r["problem"]: float(r["seconds"]) for r in json.loads(path.read_text()).get("results", [])}


def may_start(name: str, now: float, stop_at: float | None, finish_at: float | None,
              expected: dict[str, float]) -> bool:
    """Whether a problem may start at ``now`` (monotonic seconds): never after the deadline ``stop_at``, and, where
    its time is known, only if ``EXPECTED_MARGIN`` times that still ends by ``finish_at``. A problem started late
    and cut by the device call's limit is lost whole (on the H200, 2026-12-07, a 148 s problem began before a 460 s
    deadline and was written so close to the 530 s limit that the run never printed its closing line), so a long
    one waits for the next run."""
    if stop_at is not None and now > stop_at:
        return False
    seconds = expected.get(name)
    return finish_at is None or seconds is None or now + EXPECTED_MARGIN * seconds <= finish_at


def forget_timings(cache_dir: Path, names: list[str]) -> None:
    """Drop the baseline records of ``names`` that a judge kept in ``cache_dir``: a precompile pass measured them
    with the GPU shared. The JIT caches it kept stay, for the timing pass."""
    for name in names:
        (cache_dir / "baselines" / f"{name}.json").unlink(missing_ok=True)


CSV_COLUMNS = ("problem", "workload", "axes", "eager_ms", "compiled_ms", "baseline_ms", "t_sol_ms", "bound",
               "baseline_sol_fraction", "reference_status", "compiled_error", "checks")


def recount(results: list[dict], problems: set[str] | None = None) -> int:
    """Count T_SOL, its bound and the SOL score again for every row scored on datasheet peaks (a calibration
    is the measuring machine's, so those rows stay), of ``problems`` only when given; returns how many rows
    changed."""
    changed = 0
    for result in results:
        if problems is not None and result["problem"] not in problems:
            continue
        rows = [r for r in result["workloads"] if str(r.get("peak_source", "")).startswith("datasheet:")]
        if not rows:
            continue
        counts = counts_for_workloads(load_problem(result["problem"]), [r["uuid"] for r in rows])
        for row in rows:
            spec = match_spec(row["peak_source"].removeprefix("datasheet:"))
            if spec is None:
                continue
            estimate = sol_time(counts[row["uuid"]], datasheet_peaks(spec))
            new = {"sol_latency_ms": estimate.t_sol_ms, "sol_bound": estimate.bound}
            t_k, t_b = row.get("latency_ms"), row.get("baseline_latency_ms")
            if row.get("sol_score") is not None and t_k and t_b:
                new["sol_score"] = sol_score(t_k, t_b, estimate.t_sol_ms)
            if any(row.get(k) != v for k, v in new.items()):
                row.update(new)
                changed += 1
    return changed


def merge_table(path: Path, records: list[dict]) -> None:
    """Add ``records`` to the JSONL table at ``path``, one per key (a new measurement replaces an old one),
    ordered by problem and then as measured."""
    table: dict[str, dict] = {}
    if path.is_file():
        for line in path.read_text().splitlines():
            if line.strip():
                record = json.loads(line)
                table[record["key"]] = record
    for record in records:
        table[record["key"]] = BaselineRecord.model_validate(record).model_dump(exclude={"source"})
    ordered = sorted(table.values(), key=lambda r: r["problem"])  # stable: within a problem, as measured
    write_text_atomic(path, "".join(json.dumps(r) + "\n" for r in ordered))


def write_csv(path: Path, results: list[dict]) -> None:
    """One row per evaluated workload; ``baseline_sol_fraction`` is T_SOL / T_b (1.0: the baseline is at speed
    of light already), empty where either is missing."""
    with io.StringIO(newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for result in results:
            for row in result["workloads"]:
                t_b, t_sol = row.get("baseline_latency_ms"), row.get("sol_latency_ms")
                checks = baseline_checks(BaselineRecord(
                    key="", problem=result["problem"], workload=row["uuid"], hardware="", baseline_ms=t_b,
                    eager_ms=row.get("eager_ms"), compiled_ms=row.get("compiled_ms")), t_sol) if t_b else []
                writer.writerow({
                    "problem": result["problem"], "workload": row["uuid"], "axes": json.dumps(row["axes"]),
                    "eager_ms": row.get("eager_ms"), "compiled_ms": row.get("compiled_ms"), "baseline_ms": t_b,
                    "t_sol_ms": t_sol, "bound": row.get("sol_bound"),
                    "baseline_sol_fraction": round(t_sol / t_b, 4) if t_b and t_sol else None,
                    "reference_status": row["status"], "compiled_error": (row.get("compiled_error") or "")[-300:],
                    "checks": " ".join(checks),
                })
        write_text_atomic(path, f.getvalue())


if __name__ == "__main__":
    sys.exit(main())
