"""The ``solforge`` command line (docs/design.md section 4).

server/ is the outermost layer, so the command line lives here beside the MCP adapter: it is the
only place allowed to reach every other part. Heavy modules are imported inside each command so
``solforge --help`` and ``solforge serve`` start fast.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import threading
from pathlib import Path
from typing import Any

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_NOT_RUN = 3
"""The solution built but was not run (no GPU for a GPU-only language, or --compile-only)."""


def _eval(args: argparse.Namespace) -> int:
    from rich.console import Console

    from solforge.problems import SolforgeError, load_problem
    from solforge.sandbox.api import EvalEvent, EvalOptions, EvalRequest

    from .cli_solution import problem_reference, read_solution

    err = Console(stderr=True)
    try:
        problem = load_problem(args.problem)
        solution = read_solution(Path(args.solution))
        options = EvalOptions(
            workloads=args.workload or None,
            rounds=args.rounds,
            iterations=args.iterations,
            warmup=args.warmup,
            seed=args.seed,
            device=args.device,
            gpu_index=args.gpu,
            target_arch=args.arch,
            compile_only=args.compile_only,
            submission=args.submission,
            time_baseline=not args.no_baseline,
            timer=args.timer,
            cache_dir=Path(args.cache_dir) if args.cache_dir else None,
        )
    except (SolforgeError, ValueError) as exc:
        err.print(f"[red]error:[/red] {exc}")
        return EXIT_USAGE
    if solution.definition != problem.name:
        err.print(
            f"[yellow]note:[/yellow] solution names definition {solution.definition!r}, evaluating on {problem.name!r}"
        )
    request = EvalRequest(problem=problem_reference(args.problem, problem), solution=solution, options=options)
    evaluate = _evaluator(args, err)

    cancel = threading.Event()
    if args.json:

        def on_event(event: EvalEvent) -> None:
            if event.kind == "trace" and event.trace is not None:
                sys.stdout.write(event.trace.model_dump_json() + "\n")
                sys.stdout.flush()
            elif event.kind == "progress" and not args.quiet:
                print(event.message, file=sys.stderr)

        try:
            report = evaluate(request, on_event=on_event, cancel=cancel)
        except KeyboardInterrupt:
            cancel.set()
            return EXIT_FAILED
        except SolforgeError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT_FAILED
        if report.build and not report.build.ok and not report.traces:
            print(report.build.log, file=sys.stderr)
        if not args.quiet and report.phases:
            # Where the judge's time went (build, load, inputs, check, timed, baseline), for scripts.
            print("phases " + json.dumps({**report.phases, "judge_s": round(report.seconds, 3)}), file=sys.stderr)
    else:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total}"),
            TimeElapsedColumn(),
            console=err,
            transient=True,
        ) as bar:
            task = bar.add_task(f"{problem.name}: starting", total=len(problem.workloads))

            def on_event(event: EvalEvent) -> None:
                if event.kind == "progress":
                    bar.update(
                        task,
                        description=f"{problem.name}: {event.message}",
                        **({"completed": event.done, "total": event.total} if event.total else {}),
                    )
                elif event.kind == "trace":
                    bar.advance(task)

            try:
                report = evaluate(request, on_event=on_event, cancel=cancel)
            except KeyboardInterrupt:
                cancel.set()
                return EXIT_FAILED
            except SolforgeError as exc:
                err.print(f"[red]error:[/red] {exc}")
                return EXIT_FAILED
        _print_report(report, err)
    if not report.ran:
        if not args.json:
            err.print(f"[yellow]{report.note}[/yellow]")
        return EXIT_NOT_RUN if report.build is None or report.build.ok else EXIT_FAILED
    return EXIT_OK if report.all_passed else EXIT_FAILED


def _evaluator(args: argparse.Namespace, err: Any) -> Any:
    """``evaluate`` itself, or the same call answered by a worker already running on this host.

    A running worker (``solforge serve``, ``solforge worker``) keeps a warm judge per GPU and holds
    the GPU's lease while it times, so it is used unless ``--no-worker``, ``--gpu``,
    ``--compile-only`` or ``--submission`` asks for a judge of this command's own.
    """
    from solforge.sandbox.evaluate import evaluate

    if args.no_worker or args.gpu is not None or args.compile_only or args.submission:
        return evaluate
    from solforge.planner.workers.local_eval import find_local_worker, ledger_url_label, run_on_worker
    from solforge.problems import config

    slot_kind = {"cuda": "cuda", "cpu": "cpu"}.get(args.device)
    local = find_local_worker(args.db or config.db_url(), slot_kind)  # type: ignore[arg-type]
    if local is None:
        return evaluate
    err.print(f"[dim]evaluating on the running worker {local.worker.id} (ledger {ledger_url_label(args.db)}); "
              "--no-worker starts a judge of its own[/dim]")

    def through_worker(request: Any, *, on_event: Any = None, cancel: Any = None) -> Any:
        from solforge.sandbox.api import EvalEvent

        def progress(view: Any) -> None:
            if on_event is not None and view.progress is not None and view.progress.message:
                on_event(EvalEvent(kind="progress", message=view.progress.message, done=view.progress.done,
                                   total=view.progress.total))

        report = run_on_worker(local, request, slot_kind=slot_kind, on_progress=progress)  # type: ignore[arg-type]
        if on_event is not None:
            for trace in report.traces:
                on_event(EvalEvent(kind="trace", trace=trace))
        return report

    return through_worker


def _fmt_ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value * 1e3:.1f} us" if value < 1 else f"{value:.3f} ms"


def _print_report(report: Any, console: Any) -> None:
    from rich.table import Table

    from solforge.sandbox.sol.score import geomean

    build = report.build
    if build is not None:
        state = "cached" if build.cached else f"{build.seconds:.1f} s"
        # The sandbox names a GPU target even when the solution then ran on the CPU: say where it ran.
        target = "cpu" if report.device == "cpu" and report.ran else build.target_arch
        console.print(f"build: {'ok' if build.ok else build.status} ({build.language}, {target}, {state})")
        for k in build.kernels[:8]:
            console.print(
                f"  kernel {k.name[:60]}: {k.registers} regs, {k.shared_bytes} B smem, "
                f"spills {k.spill_stores_bytes or 0}/{k.spill_loads_bytes or 0} B"
            )
        if not build.ok:
            console.print(build.log)
    if not report.traces:
        return
    table = Table(
        title=f"{report.problem} / {report.solution} on {report.device} ({report.timer or '-'} timer)"
    )
    # uuids, statuses and numbers are copied: never cut them; only the axes fold. Speed-of-light columns
    # appear only when some workload has one (never on a CPU run).
    has_sol = any(t.evaluation.performance and t.evaluation.performance.sol_latency_ms for t in report.traces)
    table.add_column("workload", no_wrap=True, min_width=max(len(t.workload.uuid) for t in report.traces))
    table.add_column("axes", overflow="fold")
    table.add_column("status", no_wrap=True, min_width=max(len(t.evaluation.status.value) for t in report.traces))
    for col in ("latency", "baseline", *(("T_SOL", "bound", "score") if has_sol else ()), "speedup"):
        table.add_column(col, no_wrap=True, min_width=len("12.345 ms"))
    scores: list[float] = []
    speedups: list[float] = []
    for t in report.traces:
        ev = t.evaluation
        perf = ev.performance
        style = "green" if ev.status == "PASSED" else "red"
        sol_cells = [
            _fmt_ms(perf.sol_latency_ms if perf else None),
            (perf.sol_bound or "-") if perf else "-",
            f"{perf.sol_score:.3f}" if perf and perf.sol_score is not None else "-",
        ]
        table.add_row(
            t.workload.uuid,
            json.dumps(t.workload.axes),
            f"[{style}]{ev.status.value}[/{style}]",
            _fmt_ms(perf.latency_ms if perf else None),
            _fmt_ms(perf.baseline_latency_ms if perf else None),
            *(sol_cells if has_sol else []),
            f"{perf.speedup:.2f}x" if perf and perf.speedup else "-",
        )
        scores.append(perf.sol_score if perf and perf.sol_score is not None else 0.0)
        if perf and perf.speedup:
            speedups.append(perf.speedup)
    console.print(table)
    for t in report.traces:
        if t.evaluation.status != "PASSED":
            console.print(
                f"[red]{t.workload.uuid[:8]} {t.evaluation.status.value}:[/red] {t.evaluation.log[:1500]}"
            )
            break
    passed = sum(t.evaluation.status == "PASSED" for t in report.traces)
    line = f"{passed}/{len(report.traces)} passed"
    if any(
        t.evaluation.performance and t.evaluation.performance.sol_score is not None for t in report.traces
    ):
        line += f", SOL score {sum(scores) / len(scores):.3f} (failed workloads count 0)"
    if speedups:
        line += f", geomean speedup over baseline {geomean(speedups):.2f}x"
    if report.timer == "cpu":
        line += " [CPU timings: no speed-of-light score]"
    console.print(line)


def _calibrate(args: argparse.Namespace) -> int:
    from solforge.sandbox.sol.calibrate import run_calibrate_cli

    return run_calibrate_cli(json_output=args.json)


def _serve(args: argparse.Namespace) -> int:
    from solforge.server.app import run_server

    return run_server(
        http=args.http, db=args.db, agent=args.agent, token=args.token, workers=not args.no_workers
    )


def _worker(args: argparse.Namespace) -> int:
    from .cli_worker import run_worker_cli

    gpus = [int(g) for g in args.gpus.split(",")] if args.gpus else None
    return run_worker_cli(args.db, gpus)


def _init(args: argparse.Namespace) -> int:
    from solforge.server.client_config import init_client

    for path in init_client(args.client, Path(args.dir).resolve(), http=args.http, trust=not args.no_trust):
        print(f"wrote {path}", file=sys.stderr)
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="solforge",
        description="Agent-driven GPU kernel optimisation: MCP server, evaluation engine and swarm planner.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug messages to stderr")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser(
        "serve", help="run the MCP server (stdio by default) with its ledger and local workers"
    )
    p.add_argument("--http", metavar="HOST:PORT", help="serve streamable HTTP instead of stdio")
    p.add_argument("--db", metavar="URL", help="ledger URL (default: SQLite in the data folder)")
    p.add_argument("--agent", metavar="NAME", help="this stdio client's agent name")
    p.add_argument("--token", help="bearer token for HTTP (or SOLFORGE_TOKENS)")
    p.add_argument("--no-workers", action="store_true", help="do not start local workers")
    p.set_defaults(func=_serve)

    p = sub.add_parser("worker", help="take jobs from a shared ledger on this host's GPUs")
    p.add_argument("--db", metavar="URL", required=True)
    p.add_argument("--gpus", metavar="0,1", help="GPU indices (default: all visible; CPU slots without GPUs)")
    p.set_defaults(func=_worker)

    p = sub.add_parser("eval", help="evaluate one solution on a problem")
    p.add_argument("problem", help="catalogue name or problem folder (definition.json + workload.jsonl)")
    p.add_argument("--solution", required=True, help="solution.json")
    p.add_argument("--json", action="store_true", help="print one trace per line on stdout")
    p.add_argument("-q", "--quiet", action="store_true")
    p.add_argument("--workload", action="append", metavar="UUID", help="only this workload (repeatable)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--iterations", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--seed", type=int)
    p.add_argument("--device", choices=["auto", "cuda", "cpu"], default="auto")
    p.add_argument("--gpu", type=int, help="physical GPU index")
    p.add_argument("--arch", help="compile target, e.g. sm_90a or sm_100a")
    p.add_argument("--timer", choices=["auto", "cupti", "cuda_events"], default="auto")
    p.add_argument("--compile-only", action="store_true")
    p.add_argument(
        "--submission", action="store_true", help="secret seed, extra rounds and held-out workloads"
    )
    p.add_argument("--no-baseline", action="store_true", help="skip baseline timing")
    p.add_argument("--cache-dir")
    p.add_argument("--db", help="the ledger of a running worker to use (default: $SOLFORGE_DB, else the local one)")
    p.add_argument("--no-worker", action="store_true",
                   help="start a judge for this evaluation even when a worker runs on this host")
    p.set_defaults(func=_eval)

    from solforge.server.cli_problems import register as register_problems

    register_problems(sub)

    p = sub.add_parser("calibrate", help="measure this GPU's attainable bandwidth and matrix rate")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_calibrate)

    p = sub.add_parser("init", help="write MCP client configuration for Claude Code or Cursor")
    p.add_argument("client", choices=["claude", "cursor"])
    p.add_argument("--dir", default=".", help="project folder to write into")
    p.add_argument("--http", metavar="URL", help="point the client at a running HTTP server instead of stdio")
    p.add_argument("--no-trust", action="store_true",
                   help="claude: do not record the folder as trusted in ~/.claude.json (Claude Code then asks)")
    p.set_defaults(func=_init)

    from solforge.server.cli_profile import add_profile_command

    add_profile_command(sub)

    from solforge.server.cli_report import add_report_command

    add_report_command(sub)

    from solforge.server.cli_swarm import add_swarm_parser

    add_swarm_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(args.func(args))
    except BrokenPipeError:
        # `solforge problems list --json | head`: the reader left; stop quietly, as Unix tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["main"]
