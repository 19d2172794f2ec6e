"""``solforge report``: write a self-contained HTML report of a ledger.

Registered on the main parser by :func:`add_report_command`; the work is in
:mod:`solforge.planner.report`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from solforge.sandbox.sol.catalogue import CatalogueSol

__all__ = ["add_report_command", "run_report"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


def run_report(args: argparse.Namespace) -> int:
    """Gather, render and write the report; print a one-line summary to stderr."""
    from solforge.planner import LedgerError
    from solforge.planner.report import (
        ReportError,
        gather,
        open_ledger,
        parse_since,
        render_html,
        resolve_run_window,
    )

    try:
        ledger = open_ledger(args.db)
    except (ReportError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except LedgerError as exc:
        print(f"error: cannot open the ledger: {exc}", file=sys.stderr)
        return EXIT_FAILED
    try:
        with ledger:
            now = ledger.now()
            since = parse_since(args.since, now) if args.since else None
            until = parse_since(args.until, now) if args.until else None
            if args.run:
                run_since, run_until = resolve_run_window(ledger, args.run)
                since = max(since, run_since) if since is not None else run_since
                until = run_until if until is None else until
            data = gather(ledger, since=since, until=until, run_id=args.run, title=args.title)
            if args.scaling:
                from solforge.planner.swarm.summary import scaling_points

                data.scaling = scaling_points(ledger)
    except ReportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except LedgerError as exc:
        print(f"error: reading the ledger failed: {exc}", file=sys.stderr)
        return EXIT_FAILED
    if args.catalogue.lower() != "none":
        data.catalogue = _catalogue(args.catalogue, data.notes)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_html(data), encoding="utf-8")
    h = data.headline
    geomean = f"{h.geomean_speedup:.2f}x" if h.geomean_speedup is not None else "-"
    median = f"{h.median_sol_score:.3f}" if h.median_sol_score is not None else "-"
    print(
        f"wrote {out}: {h.problems_attempted} problems attempted, {h.problems_beating_baseline} beat the "
        f"baseline, geomean speedup {geomean}, {h.problems_above_2x} above 2x, median SOL score {median}, "
        f"{h.agents} agents, {h.gpu_hours:.1f} GPU-hours",
        file=sys.stderr,
    )
    return EXIT_OK


def _catalogue(gpu: str, notes: list[str]) -> CatalogueSol | None:
    """The catalogue section's data for ``gpu``, or None with a note saying why there is none."""
    from solforge.problems.config import cache_dir
    from solforge.sandbox.sol.catalogue import catalogue_sol

    try:
        found = catalogue_sol(gpu, cache_dir=cache_dir())
    except ImportError as exc:  # counting runs the references on meta tensors, which needs torch
        notes.append(f"the catalogue section is left out: {exc} (install torch, or pass --catalogue none)")
        return None
    if found is None:
        notes.append(f"the catalogue section is left out: no baseline table ships for {gpu!r}")
    return found


def add_report_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``report`` to the ``solforge`` subcommands."""
    p = sub.add_parser(
        "report",
        help="write a self-contained HTML report of a ledger (headline figures, plots, tables)",
        description="Write a self-contained HTML report of a ledger: the headline figures in the public "
        "result's terms, plots of speedups, scores, GPU utilisation and the queue, and per-problem and "
        "per-agent tables. Reads the ledger only.",
    )
    p.add_argument("--db", metavar="URL", help="ledger URL or SQLite path (default: the local ledger)")
    p.add_argument(
        "--out", default="report.html", metavar="FILE", help="where to write (default: report.html)"
    )
    p.add_argument("--run", metavar="RUN_ID", help="only this swarm run")
    p.add_argument(
        "--since",
        metavar="WHEN",
        help="only activity after this: a duration back from now (90m, 24h, 7d) or an ISO time",
    )
    p.add_argument("--until", metavar="WHEN", help="only activity before this (same forms as --since)")
    p.add_argument("--title", default="solforge report", help="the page's title")
    p.add_argument(
        "--catalogue", default="H200", metavar="GPU",
        help="add the catalogue's shipped baselines on this GPU model against the speed of light "
        "(default H200; 'none' leaves the section out)",
    )
    p.add_argument(
        "--scaling", action="store_true",
        help="add every finished swarm run's evaluations per hour by the slots it used (1, 2, 4 GPUs)",
    )
    p.set_defaults(func=run_report)
