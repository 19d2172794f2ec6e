"""``solforge swarm run|status|stop|resume``: the planner's command line.

``server/cli.py`` calls :func:`add_swarm_parser`; everything else about the swarm lives in
:mod:`solforge.planner.swarm`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["add_swarm_parser"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


def _csv(values: list[str] | None) -> list[str]:
    return [v.strip() for item in values or [] for v in item.split(",") if v.strip()]


def _db(args: argparse.Namespace) -> str | None:
    from solforge.problems import config

    return args.db or config.db_url()


def _open_ledger(command: str, url: str | None, *, existing: bool = True) -> Any:
    """The open ledger, or None after saying on stderr why it cannot be opened.

    ``existing``: refuse a SQLite file that is not there (a mistyped ``--db`` would otherwise be
    created and migrated, and then hold no runs).
    """
    from solforge.planner import Ledger, LedgerError
    from solforge.planner.swarm.store import missing_ledger

    try:
        path = missing_ledger(url) if existing else None
        if path is not None:
            print(
                f"solforge swarm {command}: no ledger at {path}: pass --db with the ledger "
                "`solforge swarm run` used",
                file=sys.stderr,
            )
            return None
        return Ledger.open(url)
    except (LedgerError, ValueError) as exc:
        print(
            f"solforge swarm {command}: cannot open the ledger {url or '(default)'}: {exc}", file=sys.stderr
        )
        return None


def _config(args: argparse.Namespace) -> Any:
    from solforge.planner.swarm import (
        LauncherConfig,
        Limits,
        PolicyConfig,
        ProblemFilter,
        SupervisionConfig,
        SwarmConfig,
    )
    from solforge.planner.swarm.problems import resolve_problems
    from solforge.problems import config

    env_dirs = config.problem_dirs()
    flt = ProblemFilter(
        names=_csv(args.problem),
        categories=_csv(args.category),
        models=_csv(args.model),
        op_types=_csv(args.op_type),
        problem_dirs=[str(Path(d).resolve()) for d in (args.problem_dir or env_dirs)],
        only_problem_dirs=args.only_problem_dirs or config.only_problem_dirs(),
    )
    problems = resolve_problems(flt)
    policy = PolicyConfig(
        solved_score=args.solved_score,
        stall_attempts=args.stall_attempts,
        stall_s=args.stall_minutes * 60.0,
        min_assignment_s=args.min_assignment_minutes * 60.0,
        queue_factor=args.queue_factor,
        share_problems=args.share_problems or args.max_agents_per_problem is not None,
        max_agents_per_problem=args.max_agents_per_problem or 2,
    )
    launcher = LauncherConfig(
        kind=args.launcher,
        command=args.command,
        binary=args.binary,
        model=args.agent_model,
        max_turns=args.max_turns,
        permission_mode=args.permission_mode,
        extra_args=args.agent_arg or [],
        agent_timeout_s=args.agent_timeout_minutes * 60.0,
    )
    supervision = SupervisionConfig(
        silent_s=args.silent_s, backoff_s=args.backoff_s, max_restarts=args.max_restarts
    )
    limits = Limits(
        time_s=args.time_limit_minutes * 60.0 if args.time_limit_minutes else None,
        gpu_hours=args.max_gpu_hours,
        max_jobs=args.max_jobs,
    )
    return SwarmConfig(
        problems=[p.name for p in problems],
        problem_refs={p.name: p.ref for p in problems},
        problem_filter=flt,
        agents=args.agents,
        launcher=launcher,
        limits=limits,
        policy=policy,
        supervision=supervision,
        db=_db(args),
        http=args.http,
        run_dir=str(Path(args.dir).resolve()),
        workers="none" if args.no_workers else "local",
        gpus=[int(g) for g in _csv([args.gpus])] if args.gpus else None,
        cpu_slots=args.cpu_slots,
        compile_slots=args.compile_slots,
        tick_s=args.tick_s,
        submit_wait_s=args.submit_wait_s,
    )


def _drive(swarm: Any, ledger: Any, *, quiet: bool) -> int:
    """Run the swarm, with the live view on a terminal."""
    from rich.console import Console
    from rich.live import Live

    from solforge.planner.swarm.store import db_option
    from solforge.planner.swarm.view import gather, render

    err = Console(stderr=True)
    err.print(
        f"swarm {swarm.run_id}: {swarm.config.agents} agents on {len(swarm.config.problems)} problems; "
        f"run folder {swarm.run_dir}; stop with Ctrl-C or "
        f"`solforge swarm stop {swarm.run_id}{db_option(ledger)}`",
        markup=False,
        highlight=False,
    )
    if quiet or not sys.stderr.isatty():
        code = int(swarm.run())
    else:
        with Live(console=err, refresh_per_second=2, transient=False) as live:
            swarm.view_callback = lambda s: live.update(render(gather(ledger, s.run_id)))
            code = int(swarm.run())
    run = swarm.store.get_run(swarm.run_id)
    err.print(f"swarm {run.id} {run.status}: {run.stop_reason or ''}")
    return code


def _run(args: argparse.Namespace) -> int:
    from solforge.planner.swarm import Swarm, SwarmError
    from solforge.planner.swarm.launchers import check_launcher

    try:
        config = _config(args)
    except ValueError as exc:
        print(f"solforge swarm run: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        check_launcher(config.launcher)  # before the ledger: a missing agent CLI leaves no run behind
    except ValueError as exc:
        print(f"solforge swarm run: {exc}", file=sys.stderr)
        return EXIT_FAILED
    ledger = _open_ledger("run", config.db, existing=False)
    if ledger is None:
        return EXIT_FAILED
    try:
        swarm = Swarm.start(ledger, config)
        print(swarm.run_id, flush=True)
        return _drive(swarm, ledger, quiet=args.quiet)
    except SwarmError as exc:
        print(f"solforge swarm run: {exc}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        ledger.close()


def _resume(args: argparse.Namespace) -> int:
    from solforge.planner import LedgerError
    from solforge.planner.swarm import Limits, Swarm, SwarmConfig, SwarmError, SwarmStore

    ledger = _open_ledger("resume", _db(args))
    if ledger is None:
        return EXIT_FAILED
    try:
        store = SwarmStore(ledger)
        run_id = args.run or _latest(store)
        config = SwarmConfig.model_validate(store.get_run(run_id).config)
        if args.time_limit_minutes is not None:
            limits = config.limits.model_copy(update={"time_s": args.time_limit_minutes * 60.0})
            config = config.model_copy(update={"limits": Limits.model_validate(limits.model_dump())})
        swarm = Swarm.resume(ledger, run_id, config=config)
        print(swarm.run_id, flush=True)
        return _drive(swarm, ledger, quiet=args.quiet)
    except (SwarmError, LedgerError) as exc:
        print(f"solforge swarm resume: {exc}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        ledger.close()


def _latest(store: Any) -> str:
    from solforge.planner.swarm import SwarmError

    runs = store.runs(limit=1)
    if not runs:
        raise SwarmError("this ledger has no swarm runs; start one with `solforge swarm run`")
    return str(runs[0].id)


def _status(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.live import Live
    from rich.table import Table

    from solforge.planner import LedgerError
    from solforge.planner.swarm import SwarmError, SwarmStore
    from solforge.planner.swarm.view import gather, render, status_dict

    ledger = _open_ledger("status", _db(args))
    if ledger is None:
        return EXIT_FAILED
    console = Console()
    try:
        store = SwarmStore(ledger)
        if args.all:
            table = Table(title="swarm runs")
            for col in ("run", "status", "agents", "problems", "active", "pid", "reason"):
                table.add_column(col)
            for run in store.runs(limit=50):
                table.add_row(
                    run.id,
                    run.status,
                    str(run.config.get("agents")),
                    str(len(run.config.get("problems", []))),
                    f"{run.active_s:.0f}s",
                    f"{run.pid}@{run.host}",
                    run.stop_reason or "",
                )
            console.print(table)
            return EXIT_OK
        run_id = args.run or _latest(store)
        if args.json:
            print(json.dumps(status_dict(gather(ledger, run_id)), default=str, indent=1))
            return EXIT_OK
        if not args.watch:
            console.print(render(gather(ledger, run_id)))
            return EXIT_OK
        with Live(console=console, refresh_per_second=2) as live:
            try:
                while True:
                    state = gather(ledger, run_id)
                    live.update(render(state))
                    if not state.run.live and not args.follow:
                        break
                    time.sleep(args.interval)
            except KeyboardInterrupt:
                pass
        return EXIT_OK
    except (SwarmError, LedgerError) as exc:
        print(f"solforge swarm status: {exc}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        ledger.close()


def _stop(args: argparse.Namespace) -> int:
    from solforge.planner import LedgerError
    from solforge.planner.swarm import SwarmError, SwarmStore, cleanup_dead_run, planner_alive

    ledger = _open_ledger("stop", _db(args))
    if ledger is None:
        return EXIT_FAILED
    try:
        store = SwarmStore(ledger)
        run_id = args.run or _latest(store)
        run = store.get_run(run_id)
        if not run.live:
            print(f"swarm {run_id} is already {run.status}", file=sys.stderr)
            return EXIT_OK
        reason = args.reason or f"solforge swarm stop from pid {os.getpid()} on {socket.gethostname()}"
        if not planner_alive(run):
            still = cleanup_dead_run(ledger, run_id, f"{reason}; its planner was gone")
            print(
                f"swarm {run_id}: its planner was gone; cleaned up (jobs still running: {still})",
                file=sys.stderr,
            )
            return EXIT_OK
        store.request_stop(run_id, reason)
        if run.host == socket.gethostname() and run.pid:
            with contextlib.suppress(
                ProcessLookupError
            ):  # wakes the planner at once; the flag covers other hosts
                os.kill(run.pid, signal.SIGTERM)
        if args.no_wait:
            print(f"swarm {run_id}: stop requested", file=sys.stderr)
            return EXIT_OK
        deadline = time.monotonic() + args.timeout_s
        while time.monotonic() < deadline:
            run = store.get_run(run_id)
            if not run.live:
                print(f"swarm {run_id} {run.status}: {run.stop_reason}", file=sys.stderr)
                return EXIT_OK
            time.sleep(0.5)
        print(
            f"swarm {run_id} did not stop within {args.timeout_s:.0f} s; it is {run.status}", file=sys.stderr
        )
        return EXIT_FAILED
    except (SwarmError, LedgerError) as exc:
        print(f"solforge swarm stop: {exc}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        ledger.close()


def _add_run_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("problems (every given filter must match; repeat or comma-separate values)")
    g.add_argument("--problem", action="append", metavar="NAME", help="exact problem names")
    g.add_argument("--category", action="append", help="llm, diffusion, vision, audio, video, multimodal")
    g.add_argument("--model", action="append", help="substring of the source model (hf_id)")
    g.add_argument("--op-type", action="append", help="operator type, e.g. rmsnorm")
    g.add_argument(
        "--problem-dir",
        action="append",
        metavar="DIR",
        help="folder of problem folders (default $SOLFORGE_PROBLEM_DIRS)",
    )
    g.add_argument("--only-problem-dirs", action="store_true", help="leave the bundled catalogue out")
    g = p.add_argument_group("agents")
    g.add_argument("--agents", type=int, default=4, help="number of agents (default 4)")
    g.add_argument("--launcher", choices=["claude", "cursor", "command"], default="claude")
    g.add_argument(
        "--command",
        help="command launcher: template with {url} {token} {problem} {workspace} {prompt_file} ...",
    )
    g.add_argument("--binary", help="the claude / cursor-agent executable")
    g.add_argument("--agent-model", help="model for claude or cursor")
    g.add_argument("--max-turns", type=int, help="claude --max-turns")
    g.add_argument(
        "--permission-mode", default="acceptEdits", help="claude --permission-mode (default acceptEdits)"
    )
    g.add_argument(
        "--agent-arg", action="append", metavar="ARG", help="extra argument for every agent (repeatable)"
    )
    g.add_argument("--agent-timeout-minutes", type=float, default=60.0, help="per assignment (default 60)")
    g.add_argument(
        "--silent-s", type=float, default=900.0, help="restart an agent silent this long (default 900)"
    )
    g.add_argument("--backoff-s", type=float, default=5.0, help="first restart delay after a crash (doubles)")
    g.add_argument("--max-restarts", type=int, default=5, help="crashes in a row before an agent is failed")
    g = p.add_argument_group("limits (the run also ends when every problem is done)")
    g.add_argument("--time-limit-minutes", type=float, help="active minutes")
    g.add_argument("--max-gpu-hours", type=float, help="slot-hours under lease by the run's jobs")
    g.add_argument("--max-jobs", type=int, help="benchmark and submit jobs of the run's agents")
    g = p.add_argument_group("policy")
    g.add_argument(
        "--solved-score", type=float, default=0.9, help="a problem is done at this score (default 0.9)"
    )
    g.add_argument("--stall-attempts", type=int, default=8, help="evaluations without gain before a move")
    g.add_argument("--stall-minutes", type=float, default=60.0, help="minutes without gain before a move")
    g.add_argument(
        "--min-assignment-minutes", type=float, default=5.0, help="no move for stalling before this"
    )
    g.add_argument(
        "--queue-factor", type=float, default=2.0, help="hold agents while queued jobs > this x slots"
    )
    g.add_argument("--share-problems", action="store_true", help="two agents on a problem when all are taken")
    g.add_argument(
        "--max-agents-per-problem", type=int, metavar="N",
        help="share problems, up to N agents on one (more agents than problems: every agent works)",
    )
    g = p.add_argument_group("server and workers")
    g.add_argument(
        "--http", default="127.0.0.1:0", metavar="HOST:PORT", help="MCP server address (port 0: free)"
    )
    g.add_argument(
        "--no-workers", action="store_true", help="no worker here: `solforge worker` processes run jobs"
    )
    g.add_argument("--gpus", metavar="0,1", help="GPUs of the local worker (default all; CPU slots without)")
    g.add_argument("--cpu-slots", type=int, help="CPU benchmark slots of the local worker")
    g.add_argument("--compile-slots", type=int, help="compile threads of the local worker")
    g.add_argument(
        "--dir", default="solforge-swarm", help="run folder: workspaces and logs (default ./solforge-swarm)"
    )
    g.add_argument("--tick-s", type=float, default=2.0, help="planning interval (default 2 s)")
    g.add_argument(
        "--submit-wait-s", type=float, default=300.0, help="how long stopping waits for submissions"
    )


def add_swarm_parser(sub: Any) -> None:
    """Register ``swarm`` and its subcommands on the top-level subparsers ``sub``."""
    p = sub.add_parser("swarm", help="the planner: run, watch, stop and resume a swarm of agents")
    ssub = p.add_subparsers(dest="swarm_cmd", required=True)

    q = ssub.add_parser("run", help="start a run: MCP server, worker and agents, planned and supervised")
    q.add_argument("--db", metavar="URL", help="ledger URL (default $SOLFORGE_DB or the default SQLite file)")
    q.add_argument("-q", "--quiet", action="store_true", help="no live view")
    _add_run_options(q)
    q.set_defaults(func=_run)

    q = ssub.add_parser("status", help="a run's agents, problems, queue and slots")
    q.add_argument("run", nargs="?", help="run id (default the latest)")
    q.add_argument("--db", metavar="URL")
    q.add_argument("--watch", action="store_true", help="live view until the run ends")
    q.add_argument("--follow", action="store_true", help="with --watch: keep watching after it ends")
    q.add_argument("--interval", type=float, default=1.0)
    q.add_argument("--json", action="store_true")
    q.add_argument("--all", action="store_true", help="list the runs")
    q.set_defaults(func=_status)

    q = ssub.add_parser("stop", help="stop a run from any process (through the ledger)")
    q.add_argument("run", nargs="?", help="run id (default the latest)")
    q.add_argument("--db", metavar="URL")
    q.add_argument("--reason")
    q.add_argument("--no-wait", action="store_true", help="return once the stop is requested")
    q.add_argument("--timeout-s", type=float, default=600.0, help="how long to wait for the run to stop")
    q.set_defaults(func=_stop)

    q = ssub.add_parser("resume", help="continue a stopped or crashed run with the same agents")
    q.add_argument("run", nargs="?", help="run id (default the latest)")
    q.add_argument("--db", metavar="URL")
    q.add_argument("-q", "--quiet", action="store_true")
    q.add_argument("--time-limit-minutes", type=float, help="a new active-time limit for the whole run")
    q.set_defaults(func=_resume)
