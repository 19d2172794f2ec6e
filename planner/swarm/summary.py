"""A finished (or running) swarm run in figures: how busy it kept the GPUs, how long jobs queued, what it
achieved, and whether a cheat got onto a leaderboard. ``benchmarks/gpu/swarm_summary.py`` writes it as
``swarm.json`` next to the run's HTML report.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict

from ..ledger import Ledger
from ..report.gather import gather
from ..report.models import Headline, ScalingPoint
from .store import SwarmStore

__all__ = [
    "CHEATING_BEHAVIOURS",
    "SlotFigures",
    "SwarmSummary",
    "overlapping_leases",
    "scaling_points",
    "slot_figures",
    "summarise_run",
]

CHEATING_BEHAVIOURS = frozenset({"cheating", "bad"})
"""Scripted behaviours whose submissions must never rank: a reward hack and a wrong answer."""


class SlotFigures(BaseModel):
    """One slot's share of a run (a GPU of a multi-GPU host): is every GPU kept as busy as the others?"""

    model_config = ConfigDict(extra="forbid")

    slot: str
    """The ledger's slot id, ``<host>/cuda:<index>``."""
    leases: int
    busy_s: float
    """Seconds under lease."""
    lease_utilisation: float | None = None
    """``busy_s`` over the run's steady window."""
    evaluations: int = 0
    """Jobs finished ``done`` whose last lease was on this slot."""
    evaluations_per_hour: float | None = None
    overlapping_leases: int = 0
    """Pairs of this slot's leases held at the same time (the ledger forbids it: must be 0)."""


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
    lanes_per_slot: int | None = None
    """Jobs a slot worked on at once (the most of any slot; None from workers that did not say)."""
    steady_start: datetime | None = None
    """The first lease a job of the run took: before it, agents were still reading and writing."""
    steady_end: datetime | None = None
    """The last lease's release: after it, no job of the run held a slot."""
    steady_s: float = 0.0
    lease_utilisation: float | None = None
    """Slot-seconds under lease within the steady window over the window's slot-seconds, in [0, 1]."""
    queue_wait_p50_s: float | None = None
    """Enqueue-to-start of the slot jobs (benchmarks and submissions) started in the run's window."""
    queue_wait_p95_s: float | None = None
    lease_s_by_kind: dict[str, float] = {}
    """Lease-seconds by job kind (benchmark, submit, profile): where the slots' time went."""
    evaluations: int = 0
    """Slot jobs that finished ``done`` (each an evaluation on the GPU)."""
    evaluations_per_gpu_hour: float | None = None
    """``evaluations`` over the steady window's slot-hours."""
    by_slot: list[SlotFigures] = []
    """The same figures per slot, so an idle GPU of a multi-GPU host shows."""
    overlapping_leases: int = 0
    """Pairs of leases held at the same time on one slot, over all slots (must be 0)."""
    cheating_agents: list[str] = []
    """Agents whose behaviour (``behaviours``) writes cheats or wrong answers."""
    cheats_ranked: int | None = None
    """Leaderboard entries of those agents on the run's problems (should be 0); None without behaviours."""
    headline: Headline


def overlapping_leases(leases: Sequence[dict]) -> int:
    """Pairs of ``leases`` (one slot's) whose held intervals intersect; a lease released at the instant the
    next one is acquired does not overlap it."""
    spans = sorted((float(lease["acquired_at"]), float(lease["released_at"])) for lease in leases)
    pairs = 0
    for i, (_, released) in enumerate(spans):
        for acquired, _ in spans[i + 1:]:
            if acquired >= released:
                break
            pairs += 1
    return pairs


def slot_figures(leases: Sequence[dict], steady_s: float) -> list[SlotFigures]:
    """Per-slot figures of a run's ``leases`` (rows of ``run_leases``) over a steady window of ``steady_s``."""
    by_slot: dict[str, list[dict]] = {}
    for lease in leases:
        by_slot.setdefault(str(lease["gpu_id"]), []).append(lease)
    last_slot: dict[str, str] = {}  # a done job counts once, where its last lease was
    for lease in sorted(leases, key=lambda row: float(row["acquired_at"])):
        if lease.get("status") == "done":
            last_slot[str(lease["job_id"])] = str(lease["gpu_id"])
    figures = []
    for slot, held in sorted(by_slot.items()):
        busy = sum(float(lease["released_at"]) - float(lease["acquired_at"]) for lease in held)
        evaluations = sum(1 for s in last_slot.values() if s == slot)
        figures.append(SlotFigures(
            slot=slot, leases=len(held), busy_s=round(busy, 3),
            lease_utilisation=round(min(1.0, busy / steady_s), 4) if steady_s > 0 else None,
            evaluations=evaluations,
            evaluations_per_hour=round(evaluations / (steady_s / 3600.0), 1) if steady_s > 0 else None,
            overlapping_leases=overlapping_leases(held)))
    return figures


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
    leases = store.run_leases(run_id)
    # A slot's leases never overlap (the ledger's invariant), so its busy time is their sum, and the
    # steady window runs from the first lease to the last release.
    slots = {lease["gpu_id"] for lease in leases}
    start = min((float(lease["acquired_at"]) for lease in leases), default=None)
    end = max((float(lease["released_at"]) for lease in leases), default=None)
    steady_s = end - start if start is not None and end is not None else 0.0
    by_kind: dict[str, float] = {}
    for lease in leases:
        held = float(lease["released_at"]) - float(lease["acquired_at"])
        by_kind[str(lease["kind"])] = by_kind.get(str(lease["kind"]), 0.0) + held
    busy = sum(by_kind.values())
    slot_s = steady_s * len(slots)
    evaluations = store.run_evaluations(run_id)
    per_slot = slot_figures(leases, steady_s)

    cheaters: list[str] = []
    ranked: int | None = None
    if behaviours:
        cheaters = [a.name for a in agents if behaviours[a.idx % len(behaviours)] in CHEATING_BEHAVIOURS]
        ranked = sum(1 for problem in run.config.get("problems", []) for entry in ledger.leaderboard(problem)
                     if entry.agent in cheaters)

    # The same window as `solforge report --run`: its queue waits and headline are the HTML report's.
    report = gather(ledger, since=run.created_at, until=run.ended_at, run_id=run_id)
    return SwarmSummary(
        run=run.id,
        status=run.status,
        agents=len(agents),
        minutes=round(run.active_s / 60.0, 2),
        slots=len(slots),
        lanes_per_slot=max((n for slot, n in store.run_lanes(run_id).items() if slot in slots), default=None),
        steady_start=datetime.fromtimestamp(start, UTC) if start is not None else None,
        steady_end=datetime.fromtimestamp(end, UTC) if end is not None else None,
        steady_s=round(steady_s, 3),
        lease_utilisation=round(min(1.0, busy / slot_s), 4) if slot_s > 0 else None,
        lease_s_by_kind={kind: round(seconds, 3) for kind, seconds in sorted(by_kind.items())},
        queue_wait_p50_s=report.wait_p50_s,
        queue_wait_p95_s=report.wait_p95_s,
        evaluations=evaluations,
        evaluations_per_gpu_hour=round(evaluations / (slot_s / 3600.0), 1) if slot_s > 0 else None,
        by_slot=per_slot,
        overlapping_leases=sum(f.overlapping_leases for f in per_slot),
        cheating_agents=cheaters,
        cheats_ranked=ranked,
        headline=report.headline,
    )


def scaling_points(ledger: Ledger, *, limit: int = 50) -> list[ScalingPoint]:
    """Every finished swarm run of the ledger that held a lease, as a point of the report's scaling section
    (fewest slots first): run the same swarm on 1, 2 and 4 GPUs of one host, and this says how it scaled."""
    points = []
    for run in SwarmStore(ledger).runs(limit=limit):
        if run.live:
            continue
        summary = summarise_run(ledger, run.id)
        if not summary.slots or summary.steady_s <= 0:
            continue
        points.append(ScalingPoint(
            run=run.id, slots=summary.slots, agents=summary.agents, minutes=summary.minutes,
            evaluations=summary.evaluations,
            evaluations_per_gpu_hour=summary.evaluations_per_gpu_hour,
            lease_utilisation=summary.lease_utilisation, queue_wait_p95_s=summary.queue_wait_p95_s,
            overlapping_leases=summary.overlapping_leases))
    return sorted(points, key=lambda p: (p.slots, p.run))
