"""The live terminal view of a run (rich): agents, problems, the GPU queue and utilisation.

Everything shown is read from the ledger, so ``solforge swarm status --watch`` in another terminal
shows the same as the planner's own view.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ..ledger import Ledger
from .facts import submission_effective
from .store import AssignmentView, SwarmAgentView, SwarmRunView, SwarmStore

__all__ = ["RunState", "gather", "render", "status_dict"]

UTILISATION_WINDOW_S = 600.0


@dataclass
class RunState:
    """One reading of a run for display."""

    run: SwarmRunView
    agents: list[SwarmAgentView]
    assignments: list[AssignmentView]
    best: dict[str, tuple[float, float | None, str]]
    """problem -> (effective score, speedup, agent) of the best accepted submission."""
    queue: Any
    utilisation: list[Any]
    slot_seconds: float
    slot_jobs: int


def gather(ledger: Ledger, run_id: str) -> RunState:
    """Read everything the view shows."""
    store = SwarmStore(ledger)
    run = store.get_run(run_id)
    problems = set(run.config.get("problems", []))
    best = {
        s.problem: (submission_effective(s.score, s.speedup, s.passed, s.total), s.speedup, s.agent)
        for s in ledger.best_per_problem()
        if s.problem in problems
    }
    slot_s, jobs = store.usage(run_id)
    return RunState(
        run=run,
        agents=store.agents(run_id),
        assignments=store.assignments(run_id),
        best=best,
        queue=ledger.queue_stats(window_s=UTILISATION_WINDOW_S),
        utilisation=ledger.gpu_utilisation(window_s=UTILISATION_WINDOW_S),
        slot_seconds=slot_s,
        slot_jobs=jobs,
    )


def _ago(now: float, at: float | None) -> str:
    return "-" if at is None else f"{max(0.0, now - at):.0f}s"


def render(state: RunState) -> RenderableType:
    """The view: a header line, then agents, problems and slots."""
    run = state.run
    limits = run.config.get("limits", {})
    limit = f"/{limits['time_s']:.0f}s" if limits.get("time_s") else ""
    header = Text.assemble(
        (f"swarm {run.id} ", "bold"),
        (run.status, "green" if run.status == "running" else "yellow"),
        f"  active {run.active_s:.0f}s{limit}  server {run.server_url or '-'}  "
        f"slot-hours {state.slot_seconds / 3600:.2f}  slot jobs {state.slot_jobs}",
    )
    if run.stop_reason:
        header.append(f"  ({run.stop_reason})", style="dim")

    agents = Table(title="agents", expand=True)
    for col in ("agent", "state", "problem", "last call", "best", "restarts", "active", "note"):
        agents.add_column(col)
    best_by_agent: dict[tuple[str, str], float] = {}
    for problem, (score, _, who) in state.best.items():
        best_by_agent[(who, problem)] = score
    for a in state.agents:
        style = {"working": "green", "backoff": "yellow", "failed": "red", "held": "cyan"}.get(a.state, "")
        score = best_by_agent.get((a.name, a.problem or ""))
        agents.add_row(
            a.name,
            Text(a.state, style=style),
            a.problem or "-",
            a.phase or "-",
            f"{score:.3f}" if score is not None else "-",
            str(a.restarts),
            _ago(time.time(), a.activity_at),
            (a.note or "")[:60],
        )

    problems = Table(title="problems", expand=True)
    for col in ("problem", "best score", "speedup", "by", "agents on it", "assignments"):
        problems.add_column(col)
    for name in run.config.get("problems", []):
        held = [x for x in state.assignments if x.problem == name]
        score, speedup, who = state.best.get(name, (None, None, "-"))
        problems.add_row(
            name,
            f"{score:.3f}" if score is not None else "-",
            f"{speedup:.2f}x" if speedup else "-",
            who,
            str(sum(1 for x in held if x.ended_at is None)),
            str(len(held)),
        )

    q = state.queue
    slots = Table(title=f"GPU queue and slots (last {UTILISATION_WINDOW_S / 60:.0f} min)", expand=True)
    for col in ("slot", "status", "utilisation", "leases"):
        slots.add_column(col)
    for u in state.utilisation:
        slots.add_row(u.gpu_id, u.status, f"{u.utilisation * 100:.0f}%", str(u.leases))
    wait = "-" if q.wait_p95_s is None else f"p50 {q.wait_p50_s:.1f}s p95 {q.wait_p95_s:.1f}s"
    queue_line = Text(
        f"queued {dict(q.queued) or 0}  running {dict(q.running) or 0}  queue wait {wait}", style="bold"
    )
    return Group(header, agents, problems, queue_line, slots)


def status_dict(state: RunState) -> dict[str, Any]:
    """The same reading as plain data (``solforge swarm status --json``)."""
    return {
        "run": state.run.model_dump(exclude={"config"}),
        "problems": {
            name: {"best_score": b[0], "speedup": b[1], "agent": b[2]} for name, b in state.best.items()
        },
        "agents": [a.model_dump() for a in state.agents],
        "assignments": [a.model_dump() for a in state.assignments],
        "queue": state.queue.model_dump(mode="json"),
        "utilisation": [u.model_dump(mode="json") for u in state.utilisation],
        "slot_hours": state.slot_seconds / 3600.0,
        "slot_jobs": state.slot_jobs,
    }
