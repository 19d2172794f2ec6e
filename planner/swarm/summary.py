"""A finished (or running) swarm run in figures: how busy it kept the GPUs, how long jobs queued, what it
achieved, and whether a cheat got onto a leaderboard. ``benchmarks/gpu/swarm_summary.py`` writes it as
``swarm.json`` next to the run's HTML report.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict

from ..ledger import Ledger
from ..report.gather import gather
from ..report.models import Headline
from .store import SwarmStore

__all__ = ["CHEATING_BEHAVIOURS", "SwarmSummary", "summarise_run"]

CHEATING_BEHAVIOURS = frozenset({"cheating", "bad"})
"""Scripted behaviours whose submissions must never rank: a reward hack and a wrong answer."""


class SwarmSummary(BaseModel):
    """One run's figures (times on the database's clock)."""

    model_config = ConfigDict(extra="forbid")

    run: str
    status: str
    agents: int
    minutes: float
    """The run's active time."""
    slots: int
    """Slots that held a lease for the run's jobs."""
    steady_start: datetime | None = None
    """The first lease a job of the run took: before it, agents were still reading and writing."""
    steady_end: datetime | None = None
    """The last lease's release: after it, no job of the run held a slot."""
    steady_s: float = 0.0
    lease_utilisation: float | None = None
    """Slot-seconds under lease within the steady window over the window's slot-seconds, in [0, 1]."""
    queue_wait_p50_s: float | None = None
    """Enqueue-to-start of the run's slot jobs (benchmarks and submissions)."""
    queue_wait_p95_s: float | None = None
    evaluations: int = 0
    """Slot jobs that finished ``done`` (each an evaluation on the GPU)."""
    evaluations_per_gpu_hour: float | None = None
    """``evaluations`` over the steady window's slot-hours."""
    cheating_agents: list[str] = []
    """Agents whose behaviour (``behaviours``) writes cheats or wrong answers."""
    cheats_ranked: int | None = None
    """Leaderboard entries of those agents on the run's problems (should be 0); None without behaviours."""
    headline: Headline


def _quantile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return float(values[0])
    return float(statistics.quantiles(values, n=100, method="inclusive")[round(q * 100) - 1])


def _union_within(intervals: list[tuple[float, float]], lo: float, hi: float) -> float:
    """Seconds covered by ``intervals`` inside [lo, hi] (overlaps counted once)."""
    covered, end = 0.0, lo
    for a, b in sorted(intervals):
        a, b = max(a, end), min(b, hi)
        if b > a:
            covered += b - a
            end = b
    return covered


def summarise_run(ledger: Ledger, run_id: str, *, behaviours: Sequence[str] = ()) -> SwarmSummary:
    """The figures of run ``run_id``.

    Parameters
    ----------
    behaviours
        The scripted behaviours the run was started with (``--behaviour good,improving,cheating,bad``):
        agent *i* had ``behaviours[i % len(behaviours)]``. Empty: ``cheats_ranked`` is not counted.
    """
    store = SwarmStore(ledger)
    run = store.get_run(run_id)
    agents = store.agents(run_id)
    jobs = store.run_slot_jobs(run_id)
    leases = store.run_leases(run_id)

    by_slot: dict[str, list[tuple[float, float]]] = {}
    for lease in leases:
        by_slot.setdefault(lease["gpu_id"], []).append((float(lease["acquired_at"]), float(lease["released_at"])))
    start = min((a for spans in by_slot.values() for a, _ in spans), default=None)
    end = max((b for spans in by_slot.values() for _, b in spans), default=None)
    steady_s = max(0.0, end - start) if start is not None and end is not None else 0.0
    busy = sum(_union_within(spans, start, end) for spans in by_slot.values()) if start is not None and end else 0.0
    slot_s = steady_s * len(by_slot)

    waits = sorted(max(0.0, float(j["started_at"]) - float(j["created_at"])) for j in jobs if j["started_at"] is not None)
    evaluations = sum(1 for j in jobs if j["status"] == "done")

    cheaters: list[str] = []
    ranked: int | None = None
    if behaviours:
        cheaters = [a.name for a in agents if behaviours[a.idx % len(behaviours)] in CHEATING_BEHAVIOURS]
        ranked = sum(1 for problem in run.config.get("problems", []) for entry in ledger.leaderboard(problem)
                     if entry.agent in cheaters)

    report = gather(ledger, since=run.created_at, until=run.ended_at, run_id=run_id)
    return SwarmSummary(
        run=run.id,
        status=run.status,
        agents=len(agents),
        minutes=round(run.active_s / 60.0, 2),
        slots=len(by_slot),
        steady_start=datetime.fromtimestamp(start, UTC) if start is not None else None,
        steady_end=datetime.fromtimestamp(end, UTC) if end is not None else None,
        steady_s=round(steady_s, 3),
        lease_utilisation=round(min(1.0, busy / slot_s), 4) if slot_s > 0 else None,
        queue_wait_p50_s=_quantile(waits, 0.5),
        queue_wait_p95_s=_quantile(waits, 0.95),
        evaluations=evaluations,
        evaluations_per_gpu_hour=round(evaluations / (slot_s / 3600.0), 1) if slot_s > 0 else None,
        cheating_agents=cheaters,
        cheats_ranked=ranked,
        headline=report.headline,
    )
