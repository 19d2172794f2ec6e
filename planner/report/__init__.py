"""solforge.planner.report: a self-contained HTML report of a ledger (``solforge report``).

::

    from solforge.planner.report import gather, open_ledger, render_html

    with open_ledger("sqlite:///ledger.db") as ledger:
        data = gather(ledger)                 # ReportData: headline, tables, series
    Path("report.html").write_text(render_html(data), encoding="utf-8")

:func:`gather` reads the ledger's own tables only (jobs, submissions, runs, leases, slots), so it
works on any ledger, with or without the swarm's tables; its module docstring defines each figure
in the public result's terms. :func:`render_html` draws the plots as inline SVG (see
:mod:`solforge.planner.report.svg` for why not matplotlib) and escapes every name it prints. A ``ReportData``
may also carry the catalogue's shipped baselines against the speed of light (``catalogue``, filled by
``solforge report --catalogue GPU`` from :func:`solforge.sandbox.sol.catalogue.catalogue_sol`), drawn as a
section of its own.
"""

from __future__ import annotations

from .gather import DEFAULT_BUCKETS, ReportError, gather, open_ledger, parse_since, resolve_run_window
from .html import render_html
from .models import (
    AgentSummary,
    Headline,
    ProblemSummary,
    QueueBucket,
    ReportData,
    ReportWindow,
    ScoreStep,
    SlotUsage,
)

__all__ = [
    "DEFAULT_BUCKETS",
    "AgentSummary",
    "Headline",
    "ProblemSummary",
    "QueueBucket",
    "ReportData",
    "ReportError",
    "ReportWindow",
    "ScoreStep",
    "SlotUsage",
    "gather",
    "open_ledger",
    "parse_since",
    "render_html",
    "resolve_run_window",
]
