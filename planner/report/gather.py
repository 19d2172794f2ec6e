"""Gather a :class:`ReportData` from a ledger: read-only queries over the ledger's own tables.

The definitions follow the public result's terms (docs/design.md, section 3):

- a problem's result is its **best submission**, chosen as the leaderboard chooses (accepted
  submissions only, those that passed every workload; then score, then speedup, then the earlier),
  among the submissions recorded in the window;
- its **speedup** is that submission's geometric mean over its passed workloads; the headline's
  geomean runs over the problems that have one, "beating the baseline" is a speedup above 1 and
  "above 2x" a speedup above 2;
- the **median SOL score** runs over the problems with an accepted submission (CPU runs carry
  no score and count 0);
- **GPU-hours** are hours CUDA slots spent under lease, the measure ``Ledger.gpu_utilisation`` uses.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import TextClause, text
from sqlalchemy import inspect as sa_inspect
from sqlalchemy.engine import make_url

from solforge.problems.errors import SolforgeError
from solforge.sandbox.sol.score import geomean_or_none

from ..ledger import Ledger
from ..ledger.db import Tx, resolve_db_url
from ..ledger.models import GpuView
from ..ledger.sql import parse_queries
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

__all__ = ["DEFAULT_BUCKETS", "ReportError", "gather", "open_ledger", "parse_since", "resolve_run_window"]

DEFAULT_BUCKETS = 60
"""Time buckets of the utilisation and queue series: fine enough to see a stall, few enough to read."""
_FAR_FUTURE = 1e18
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$", re.IGNORECASE)
_UNIT_S = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


class ReportError(SolforgeError):
    """The report cannot be made; the message says why and what to pass instead."""


@cache
def _queries(dialect: str) -> dict[str, TextClause]:
    source = resources.files(__package__).joinpath("queries.sql").read_text(encoding="utf-8")
    return {name: text(sql) for name, sql in parse_queries(source)[dialect].items()}


def open_ledger(url: str | None) -> Ledger:
    """Open an existing ledger for reading: no migration, and no empty SQLite file left behind.

    Raises
    ------
    ReportError
        The SQLite file does not exist, or the database has no ledger tables.
    LedgerError
        The database cannot be reached.
    """
    resolved = resolve_db_url(url)
    if resolved.dialect == "sqlite" and resolved.temporary_dir is None:
        path = Path(make_url(resolved.url).database or "")
        if not path.is_file():
            raise ReportError(f"no ledger at {path}: pass --db with the ledger the server or swarm used")
    ledger = Ledger.open(url, migrate_schema=False)
    with ledger.connector.transaction(write=False) as tx:
        if not sa_inspect(tx.conn).has_table("job"):
            ledger.close()
            raise ReportError(f"{ledger.url} holds no solforge ledger (no job table); check --db")
    return ledger


def parse_since(value: str, now: float) -> float:
    """A ``--since`` value as UNIX seconds: a duration back from ``now`` or an ISO 8601 time.

    ``90m``, ``24h``, ``7d``, ``2w`` count back from ``now``; ``2026-11-29`` or
    ``2026-11-29T18:00`` (UTC unless the value names a zone) are absolute.

    Raises
    ------
    ReportError
        Neither form.
    """
    match = _DURATION.match(value)
    if match:
        return now - float(match.group(1)) * _UNIT_S[match.group(2).lower()]
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ReportError(
            f"--since {value!r} is neither a duration (90m, 24h, 7d) nor an ISO time (2026-11-29T18:00)"
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def resolve_run_window(ledger: Ledger, run_id: str) -> tuple[float, float | None]:
    """The (since, until) of one swarm run: from its creation to its end (None while it runs).

    Raises
    ------
    ReportError
        When the ledger holds no swarm run by that id.
    """
    from ..errors import LedgerError
    from ..swarm.store import SwarmStore

    try:
        run = SwarmStore(ledger).get_run(run_id)
    except LedgerError as exc:
        raise ReportError(f"--run {run_id!r}: {exc}; or pick a window with --since") from exc
    return run.created_at, run.ended_at


def _ts(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, tz=UTC)


def _quantile(values: list[float], q: float) -> float | None:
    """numpy's default (linear) quantile, None for no values."""
    return float(np.quantile(values, q)) if values else None


def _overlap_into(buckets: list[float], start: float, width: float, a: float, b: float) -> None:
    """Add the seconds of [a, b) that fall in each bucket [start + i*width, start + (i+1)*width)."""
    if b <= a or width <= 0:
        return
    n = len(buckets)
    first = max(0, int((a - start) // width))
    last = min(n - 1, int((b - start) // width))
    for i in range(first, last + 1):
        lo = start + i * width
        seconds = min(b, lo + width) - max(a, lo)
        if seconds > 0:
            buckets[i] += seconds


def _perf_means(traces: list[Any]) -> dict[str, float | None]:
    """Geometric means of the kernel, baseline and SOL times over the PASSED runs of one job."""
    kernel: list[float] = []
    baseline: list[float] = []
    sol: list[float] = []
    for row in traces:
        if row["status"] != "PASSED":
            continue
        try:
            perf = (json.loads(row["trace_json"]).get("evaluation") or {}).get("performance") or {}
        except ValueError:
            continue
        for key, into in (("latency_ms", kernel), ("baseline_latency_ms", baseline), ("sol_latency_ms", sol)):
            value = perf.get(key)
            if isinstance(value, int | float):
                into.append(float(value))
    return {"latency_ms": geomean_or_none(kernel), "baseline_ms": geomean_or_none(baseline), "t_sol_ms": geomean_or_none(sol)}


def _best_key(sub: Any) -> tuple[float, float, float, int]:
    """The leaderboard's order, smallest first: score, then speedup (higher first), then age."""
    return (-float(sub["score"]), -float(sub["speedup"] or 0.0), float(sub["created_at"]), int(sub["id"]))


@dataclass
class _Rows:
    """What the report reads, as plain rows, and the window's bounds (database clock)."""

    jobs: list[Any]
    subs: list[Any]
    leases: list[Any]
    lo: float
    hi: float
    start: float | None = None
    end: float | None = None
    width: float = 0.0
    buckets: int = DEFAULT_BUCKETS


def _read(ledger: Ledger, lo: float, hi: float) -> tuple[list[Any], list[Any], list[Any]]:
    queries = _queries(ledger.dialect)

    def read(tx: Tx) -> tuple[list[Any], list[Any], list[Any]]:
        mine = Tx(tx.conn, queries, tx.dialect)
        return (
            mine.all("report_jobs", since=lo, until=hi),
            mine.all("report_submissions", since=lo, until=hi),
            mine.all("report_leases", since=lo, until=hi),
        )

    return ledger.connector.run(read, write=False, retry_s=ledger.retry_s)


def _bounds(rows: _Rows) -> tuple[float | None, float | None]:
    """First to last activity, clipped to the window asked for; the end is now while jobs are live."""
    times = [float(j["created_at"]) for j in rows.jobs] + [float(s["created_at"]) for s in rows.subs]
    times += [max(rows.lo, float(x["acquired_at"])) for x in rows.leases]
    if not times:
        return None, None
    ends = [float(j[k]) for j in rows.jobs for k in ("started_at", "finished_at") if j[k] is not None]
    ends += [float(x["released_at"]) if x["released_at"] is not None else rows.hi for x in rows.leases]
    if any(j["status"] in ("queued", "running") for j in rows.jobs):
        ends.append(rows.hi)
    return min(times), min(rows.hi, max(times + ends))


def _accepted(sub: Any) -> bool:
    """The leaderboard's rule: a submission counts only when every workload passed."""
    return int(sub["total"]) > 0 and int(sub["passed"]) == int(sub["total"])


def _best_per_problem(subs: list[Any]) -> dict[str, Any]:
    best: dict[str, Any] = {}
    for s in filter(_accepted, subs):
        if s["problem"] not in best or _best_key(s) < _best_key(best[s["problem"]]):
            best[s["problem"]] = s
    return best


def _performance(
    ledger: Ledger, best: dict[str, Any], notes: list[str]
) -> dict[str, dict[str, float | None]]:
    """Kernel, baseline and T_SOL means of each best submission, from its job's runs."""
    queries = _queries(ledger.dialect)
    perf: dict[str, dict[str, float | None]] = {}

    def read(tx: Tx) -> int:
        mine = Tx(tx.conn, queries, tx.dialect)
        missing = 0
        for problem, s in best.items():
            rows = mine.all("report_job_traces", job_id=s["job_id"]) if s["job_id"] else []
            missing += not rows
            perf[problem] = _perf_means(rows)
        return missing

    missing = ledger.connector.run(read, write=False, retry_s=ledger.retry_s)
    if missing:
        notes.append(
            f"{missing} best submission(s) have no recorded runs (imported with record_submission): "
            "their kernel, baseline and T_SOL times are unknown."
        )
    if any((s["hardware"] or "") == "cpu" for s in best.values()):
        notes.append("Some best submissions ran on CPU slots: CPU timings carry no SOL score (it counts 0).")
    return perf


def _problems(
    rows: _Rows, best: dict[str, Any], perf: dict[str, dict[str, float | None]]
) -> list[ProblemSummary]:
    attempts: Counter[str] = Counter()
    compiles: Counter[str] = Counter()
    agents: dict[str, set[str]] = defaultdict(set)
    for j in rows.jobs:
        (compiles if j["kind"] == "compile" else attempts)[j["problem"]] += 1
        agents[j["problem"]].add(j["agent"])
    for s in rows.subs:
        agents[s["problem"]].add(s["agent"])
    submissions = Counter(s["problem"] for s in rows.subs)
    out = []
    for name in sorted(agents):
        s = best.get(name)
        out.append(
            ProblemSummary(
                problem=name,
                best_agent=s["agent"] if s else None,
                best_score=float(s["score"]) if s else None,
                speedup=float(s["speedup"]) if s and s["speedup"] is not None else None,
                passed=int(s["passed"]) if s else None,
                workloads=int(s["total"]) if s else None,
                attempts=attempts[name],
                compile_jobs=compiles[name],
                submissions=submissions[name],
                agents=len(agents[name]),
                **(perf.get(name) or {}),
            )
        )
    out.sort(key=lambda p: (p.best_score is None, -(p.best_score or 0.0), p.problem))
    return out


def _agents(rows: _Rows, best: dict[str, Any]) -> list[AgentSummary]:
    jobs: dict[str, Counter[str]] = defaultdict(Counter)
    failed: Counter[str] = Counter()
    for j in rows.jobs:
        jobs[j["agent"]][j["kind"]] += 1
        failed[j["agent"]] += j["status"] == "failed"
    own_best: dict[str, dict[str, Any]] = defaultdict(dict)
    for s in filter(_accepted, rows.subs):
        mine = own_best[s["agent"]]
        if s["problem"] not in mine or _best_key(s) < _best_key(mine[s["problem"]]):
            mine[s["problem"]] = s
    firsts = Counter(s["agent"] for s in best.values())
    submissions = Counter(s["agent"] for s in rows.subs)
    hours: Counter[str] = Counter()
    for x in rows.leases:
        a, b = max(rows.lo, float(x["acquired_at"])), min(rows.hi, float(x["released_at"] or rows.hi))
        hours[x["agent"]] += max(0.0, b - a) / 3600.0
    out = []
    for name in sorted(set(jobs) | set(submissions)):
        bests = list(own_best.get(name, {}).values())
        speedups = [float(s["speedup"]) for s in bests if s["speedup"] is not None]
        out.append(
            AgentSummary(
                agent=name,
                jobs=sum(jobs[name].values()),
                jobs_by_kind=dict(sorted(jobs[name].items())),
                failed_jobs=failed[name],
                submissions=submissions[name],
                problems=len(bests),
                firsts=firsts[name],
                best_score=max((float(s["score"]) for s in bests), default=None),
                mean_best_score=sum(float(s["score"]) for s in bests) / len(bests) if bests else None,
                best_speedup=max(speedups, default=None),
                gpu_hours=hours[name],
            )
        )
    out.sort(key=lambda a: (-a.firsts, -(a.mean_best_score or -1.0), a.agent))
    return out


def _best_over_time(rows: _Rows) -> list[ScoreStep]:
    steps: dict[str, list[tuple[float, float]]] = {}
    for s in rows.subs:
        points = steps.setdefault(s["problem"], [])
        score = float(s["score"])
        if not points or score > points[-1][1]:
            points.append((float(s["created_at"]) - (rows.start or 0.0), score))
    return [ScoreStep(problem=p, points=pts) for p, pts in sorted(steps.items())]


def _slots(rows: _Rows, gpus: list[GpuView], span: float) -> list[SlotUsage]:
    usage = {
        g.id: SlotUsage(gpu_id=g.id, kind=g.kind, name=g.name, buckets=[0.0] * rows.buckets) for g in gpus
    }
    for x in rows.leases:
        slot = usage.setdefault(
            x["gpu_id"], SlotUsage(gpu_id=x["gpu_id"], kind=x["kind"], buckets=[0.0] * rows.buckets)
        )
        a = max(rows.lo, float(x["acquired_at"]))
        b = min(rows.end or rows.hi, float(x["released_at"]) if x["released_at"] is not None else rows.hi)
        slot.busy_s += max(0.0, b - a)
        slot.leases += 1
        if rows.start is not None:
            _overlap_into(slot.buckets, rows.start, rows.width, a, b)
    for slot in usage.values():
        slot.utilisation = min(1.0, slot.busy_s / span) if span > 0 else 0.0
        slot.buckets = [min(1.0, v / rows.width) if rows.width > 0 else 0.0 for v in slot.buckets]
    return sorted(usage.values(), key=lambda u: u.gpu_id)


def _queue(rows: _Rows) -> tuple[list[QueueBucket], list[float]]:
    """Queue depth and waits per bucket (a retried job counts as queued until its latest start)."""
    n, start, end, width = rows.buckets, rows.start, rows.end, rows.width
    if start is None or end is None or width <= 0:
        return [], []
    slot_depth, compile_depth = [0.0] * n, [0.0] * n
    bucket_waits: list[list[float]] = [[] for _ in range(n)]
    waits: list[float] = []
    for j in rows.jobs:
        created = float(j["created_at"])
        left = j["started_at"] if j["started_at"] is not None else j["finished_at"]
        queued_until = float(left) if left is not None else end
        depth = compile_depth if j["kind"] == "compile" else slot_depth
        _overlap_into(depth, start, width, created, min(queued_until, end))
        if j["kind"] != "compile" and j["started_at"] is not None:
            wait = max(0.0, float(j["started_at"]) - created)
            waits.append(wait)
            bucket_waits[min(n - 1, max(0, int((float(j["started_at"]) - start) // width)))].append(wait)
    queue = [
        QueueBucket(
            start_s=i * width,
            slot_depth=slot_depth[i] / width,
            compile_depth=compile_depth[i] / width,
            wait_p50_s=_quantile(bucket_waits[i], 0.5),
            wait_p95_s=_quantile(bucket_waits[i], 0.95),
            started=len(bucket_waits[i]),
        )
        for i in range(n)
    ]
    return queue, waits


def _headline(rows: _Rows, problems: list[ProblemSummary], agents: int, slots: list[SlotUsage]) -> Headline:
    speedups = [p.speedup for p in problems if p.speedup is not None and p.speedup > 0]
    scores = [p.best_score for p in problems if p.best_score is not None]
    hours = {"cuda": 0.0, "cpu": 0.0}
    for slot in slots:
        hours[slot.kind if slot.kind in hours else "cuda"] += slot.busy_s / 3600.0
    return Headline(
        problems_attempted=len(problems),
        problems_submitted=len(scores),
        problems_with_speedup=len(speedups),
        problems_beating_baseline=sum(1 for v in speedups if v > 1.0),
        problems_above_2x=sum(1 for v in speedups if v > 2.0),
        geomean_speedup=geomean_or_none(speedups),
        median_sol_score=float(np.median(scores)) if scores else None,
        agents=agents,
        jobs=len(rows.jobs),
        submissions=len(rows.subs),
        gpu_hours=hours["cuda"],
        cpu_slot_hours=hours["cpu"],
    )


def gather(
    ledger: Ledger,
    *,
    since: float | None = None,
    until: float | None = None,
    run_id: str | None = None,
    buckets: int = DEFAULT_BUCKETS,
    title: str = "solforge report",
) -> ReportData:
    """Read the ledger and compute everything the report shows.

    Parameters
    ----------
    ledger
        An open ledger (only read).
    since, until
        The window in UNIX seconds of the database's clock: jobs enqueued, submissions recorded
        and leases overlapping it count. None: from the beginning / up to now.
    run_id
        Recorded in the window only; resolve a run to its window with :func:`resolve_run_window`.
    buckets
        Time buckets of the utilisation and queue series.
    """
    now = ledger.now()
    lo = since if since is not None else -_FAR_FUTURE
    hi = min(until, now) if until is not None else now
    rows = _Rows(*_read(ledger, lo, hi), lo=lo, hi=hi, buckets=buckets)
    rows.start, rows.end = _bounds(rows)
    window = ReportWindow(
        start=_ts(rows.start), end=_ts(rows.end), since=_ts(since), until=_ts(until), run_id=run_id
    )
    span = window.span_s
    rows.width = span / buckets if span > 0 else 0.0
    notes: list[str] = []
    best = _best_per_problem(rows.subs)
    problems = _problems(rows, best, _performance(ledger, best, notes))
    agents = _agents(rows, best)
    slots = _slots(rows, ledger.gpus(), span)
    queue, waits = _queue(rows)
    return ReportData(
        title=title,
        generated_at=datetime.now(UTC),
        ledger=ledger.url,
        window=window,
        headline=_headline(rows, problems, len(agents), slots),
        problems=problems,
        agents=agents,
        speedups=[p.speedup for p in problems if p.speedup is not None and p.speedup > 0],
        scores=[p.best_score for p in problems if p.best_score is not None],
        best_over_time=_best_over_time(rows),
        bucket_s=rows.width,
        slots=slots,
        queue=queue,
        wait_p50_s=_quantile(waits, 0.5),
        wait_p95_s=_quantile(waits, 0.95),
        wait_max_s=max(waits, default=None),
        notes=notes,
    )
