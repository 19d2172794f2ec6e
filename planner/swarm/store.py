"""The swarm's state in the ledger: runs, their agents, assignments, stop requests and usage.

Everything a run knows lives in the ledger's ``swarm_*`` tables (:mod:`solforge.planner.ledger.tables`),
so ``solforge swarm status|stop|resume`` work from any process that can open the ledger, and a
crashed planner loses nothing. Every change that matters is also appended to the ledger's event
log (kinds ``swarm.*``) in the same transaction.

The queries are in ``queries.sql`` beside this module, in the ledger's named-query format; they
run on the ledger's own connection pool, in its transactions, with its retries.
"""

from __future__ import annotations

import functools
import json
import shlex
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict
from sqlalchemy import RowMapping, TextClause, text

from ..errors import LedgerError
from ..ledger import Ledger
from ..ledger.db import Tx, default_ledger_path, resolve_db_url
from ..ledger.queue import event
from ..ledger.sql import parse_queries

__all__ = [
    "AgentState",
    "AssignmentView",
    "JobOutcomeRow",
    "RunStatus",
    "SwarmAgentView",
    "SwarmRunView",
    "SwarmStore",
    "db_option",
    "missing_ledger",
]

T = TypeVar("T")

RunStatus = str
"""running, stopping, stopped, finished (a limit was reached or every problem is done) or failed."""
AgentState = str
"""idle, working, backoff (waiting to restart), held (no work for it now), stopped or failed."""


def db_option(ledger: Ledger) -> str:
    """`` --db LEDGER`` for a command a user is told to run, or ``""`` for the default ledger.

    A hint without it would look in the default ledger and not find the run.
    """
    path = ledger.resolved.sqlite_file
    if path is not None and path.resolve() == default_ledger_path().expanduser().resolve():
        return ""
    return f" --db {shlex.quote(str(path) if path is not None else ledger.url)}"


def missing_ledger(url: str | None) -> Path | None:
    """The SQLite file ``url`` names when it does not exist (a mistyped ``--db``), else None."""
    path = resolve_db_url(url).sqlite_file
    return path if path is not None and not path.is_file() else None


@functools.cache
def _queries(dialect: str) -> dict[str, TextClause]:
    source = resources.files(__package__).joinpath("queries.sql").read_text(encoding="utf-8")
    return {name: text(sql) for name, sql in parse_queries(source)[dialect].items()}


class _View(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="ignore")


class SwarmRunView(_View):
    """A run as the ledger holds it (times are UNIX seconds on the database's clock)."""

    id: str
    status: RunStatus
    config: dict[str, Any]
    created_at: float
    updated_at: float
    ended_at: float | None = None
    heartbeat_at: float | None = None
    active_s: float = 0.0
    """Seconds the run has been running, over all its planner processes."""
    pid: int | None = None
    host: str | None = None
    server_url: str | None = None
    stop_requested: bool = False
    stop_reason: str | None = None
    now: float
    """The database's clock when this was read."""

    @property
    def live(self) -> bool:
        """Whether a planner process holds the run (status running or stopping)."""
        return self.status in ("running", "stopping")


class SwarmAgentView(_View):
    """An agent of a run."""

    name: str
    run_id: str
    idx: int
    state: AgentState
    problem: str | None = None
    pid: int | None = None
    workspace: str
    log_path: str
    restarts: int = 0
    started_at: float | None = None
    activity_at: float | None = None
    phase: str | None = None
    note: str | None = None
    last_seen_at: float | None = None
    """The agent's last authenticated MCP call (from the ledger's agent table)."""


class AssignmentView(_View):
    """One agent on one problem, from assignment to release."""

    id: int
    run_id: str
    agent: str
    problem: str
    share: int
    reason: str
    value: float | None = None
    started_at: float
    ended_at: float | None = None
    end_reason: str | None = None


class JobOutcomeRow(_View):
    """One workload of one evaluated job of a run's agent (see ``swarm_job_outcomes``)."""

    id: str
    agent: str
    problem: str
    kind: str
    solution_hash: str
    created_at: float
    finished_at: float
    run_status: str | None = None
    sol_score: float | None = None
    speedup: float | None = None


class SwarmStore:
    """Reads and writes a ledger's swarm tables.

    Parameters
    ----------
    ledger
        The open ledger; its connection pool, retries and error mapping are used as they are.
    """

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self._queries = {**ledger.connector.queries, **_queries(ledger.dialect)}

    def _run(self, fn: Callable[[Tx], T], *, write: bool = True) -> T:
        def wrapped(tx: Tx) -> T:
            return fn(Tx(tx.conn, self._queries, tx.dialect))

        return self.ledger.connector.run(wrapped, write=write, retry_s=self.ledger.retry_s)

    # -- runs --------------------------------------------------------------------------------------

    def create_run(self, run_id: str, config: dict[str, Any], *, pid: int, host: str) -> SwarmRunView:
        """Record a new run, status running, held by process ``pid`` on ``host``."""

        def fn(tx: Tx) -> None:
            tx.execute("insert_swarm_run", id=run_id, config_json=json.dumps(config), pid=pid, host=host)
            event(tx, "swarm.started", run_id=run_id, pid=pid, host=host)

        self._run(fn)
        return self.get_run(run_id)

    def _no_run(self, run_id: str) -> str:
        return (
            f"no swarm run {run_id!r} in the ledger {self.ledger.url}; "
            f"`solforge swarm status --all{db_option(self.ledger)}` lists its runs"
        )

    def claim_run(self, run_id: str, config: dict[str, Any], *, pid: int, host: str) -> None:
        """Take over a stopped or crashed run (resume): status running, this process's pid."""

        def fn(tx: Tx) -> None:
            if (
                tx.execute("claim_swarm_run", id=run_id, pid=pid, host=host, config_json=json.dumps(config))
                != 1
            ):
                raise LedgerError(self._no_run(run_id))
            event(tx, "swarm.resumed", run_id=run_id, pid=pid, host=host)

        self._run(fn)

    def get_run(self, run_id: str) -> SwarmRunView:
        """One run. Raises :class:`LedgerError` when there is none by that id."""
        row = self._run(lambda tx: tx.one("get_swarm_run", id=run_id), write=False)
        if row is None:
            raise LedgerError(self._no_run(run_id))
        return _run_view(row)

    def runs(self, *, limit: int = 20) -> list[SwarmRunView]:
        """The latest runs, newest first."""
        return [
            _run_view(r) for r in self._run(lambda tx: tx.all("list_swarm_runs", limit=limit), write=False)
        ]

    def heartbeat(
        self, run_id: str, active_s: float, *, server_url: str | None = None
    ) -> tuple[bool, str | None]:
        """Stamp the planner's tick; returns whether a stop was requested, and why."""

        def fn(tx: Tx) -> RowMapping | None:
            return tx.one("swarm_run_heartbeat", id=run_id, active_s=active_s, server_url=server_url)

        row = self._run(fn)
        if row is None:
            raise LedgerError(f"swarm run {run_id!r} disappeared from the ledger")
        return bool(row["stop_requested"]), row["stop_reason"]

    def set_status(self, run_id: str, status: RunStatus, *, reason: str | None = None) -> None:
        """Move a run to ``status`` (stopped, finished and failed stamp ended_at) and log it."""
        ended = status in ("stopped", "finished", "failed")

        def fn(tx: Tx) -> None:
            tx.execute("set_swarm_run_status", id=run_id, status=status, ended=ended, reason=reason)
            event(tx, f"swarm.{status}", run_id=run_id, reason=reason)

        self._run(fn)

    def request_stop(self, run_id: str, reason: str) -> SwarmRunView | None:
        """Ask the run's planner to stop; None when the run is not live (nothing to ask)."""

        def fn(tx: Tx) -> RowMapping | None:
            row = tx.one("request_swarm_stop", id=run_id, reason=reason)
            if row is not None:
                event(tx, "swarm.stop_requested", run_id=run_id, reason=reason)
            return row

        return None if self._run(fn) is None else self.get_run(run_id)

    # -- agents ------------------------------------------------------------------------------------

    def add_agent(self, run_id: str, name: str, idx: int, *, workspace: str, log_path: str) -> None:
        """Add an agent (already registered in the ledger) to a run."""

        def fn(tx: Tx) -> None:
            tx.execute(
                "insert_swarm_agent",
                name=name,
                run_id=run_id,
                idx=idx,
                workspace=workspace,
                log_path=log_path,
            )
            event(tx, "swarm.agent_added", agent=name, run_id=run_id, idx=idx, workspace=workspace)

        self._run(fn)

    def agents(self, run_id: str) -> list[SwarmAgentView]:
        """A run's agents in index order."""
        rows = self._run(lambda tx: tx.all("swarm_agents", run_id=run_id), write=False)
        return [SwarmAgentView.model_validate(dict(r)) for r in rows]

    def save_agent(self, agent: SwarmAgentView, *, event_kind: str | None = None, **detail: Any) -> None:
        """Write an agent's mutable fields; with ``event_kind``, log that event in the same transaction."""

        def fn(tx: Tx) -> None:
            tx.execute(
                "save_swarm_agent",
                name=agent.name,
                run_id=agent.run_id,
                state=agent.state,
                problem=agent.problem,
                pid=agent.pid,
                restarts=agent.restarts,
                started_at=agent.started_at,
                activity_at=agent.activity_at,
                phase=agent.phase,
                note=agent.note,
            )
            if event_kind is not None:
                event(tx, event_kind, agent=agent.name, run_id=agent.run_id, **detail)

        self._run(fn)

    # -- assignments -------------------------------------------------------------------------------

    def open_assignment(
        self, run_id: str, agent: str, problem: str, *, share: int, reason: str, value: float | None
    ) -> AssignmentView:
        """Give ``problem`` to ``agent``.

        Raises
        ------
        LedgerIntegrityError
            The agent has an open assignment, or the problem is taken under that share number.
        """

        def fn(tx: Tx) -> RowMapping:
            row = tx.one(
                "open_swarm_assignment",
                run_id=run_id,
                agent=agent,
                problem=problem,
                share=share,
                reason=reason,
                value=value,
            )
            assert row is not None
            event(
                tx,
                "swarm.assigned",
                agent=agent,
                run_id=run_id,
                problem=problem,
                share=share,
                value=value,
                reason=reason,
                assignment_id=int(row["id"]),
            )
            return row

        row = self._run(fn)
        return AssignmentView(
            id=int(row["id"]),
            run_id=run_id,
            agent=agent,
            problem=problem,
            share=share,
            reason=reason,
            value=value,
            started_at=float(row["started_at"]),
        )

    def close_assignment(
        self, run_id: str, agent: str, end_reason: str, *, detail: str | None = None
    ) -> None:
        """End the agent's open assignment (if any) and log why."""

        def fn(tx: Tx) -> None:
            row = tx.one("close_swarm_assignment", agent=agent, end_reason=end_reason[:32])
            if row is not None:
                event(
                    tx,
                    "swarm.released",
                    agent=agent,
                    run_id=run_id,
                    problem=row["problem"],
                    assignment_id=int(row["id"]),
                    end_reason=end_reason,
                    held_s=round(float(row["ended_at"]) - float(row["started_at"]), 1),
                    detail=detail,
                )

        self._run(fn)

    def assignments(self, run_id: str) -> list[AssignmentView]:
        """A run's assignment history, oldest first."""
        rows = self._run(lambda tx: tx.all("swarm_assignments", run_id=run_id), write=False)
        return [AssignmentView.model_validate(dict(r)) for r in rows]

    def finalize(self, run_id: str, status: RunStatus, *, reason: str, note: str | None = None) -> None:
        """End a run in one transaction: open assignments closed, agents stopped, status set."""
        ended = status in ("stopped", "finished", "failed")

        def fn(tx: Tx) -> None:
            tx.execute("close_swarm_assignments", run_id=run_id, end_reason="stopped")
            tx.execute("stop_swarm_agents", run_id=run_id, note=note)
            tx.execute("set_swarm_run_status", id=run_id, status=status, ended=ended, reason=reason)
            event(tx, f"swarm.{status}", run_id=run_id, reason=reason)

        self._run(fn)

    # -- facts for the policy ----------------------------------------------------------------------

    def job_outcomes(self, run_id: str, *, after: float) -> list[JobOutcomeRow]:
        """Per-workload results of the run's agents' evaluated jobs finished at or after ``after``."""
        rows = self._run(lambda tx: tx.all("swarm_job_outcomes", run_id=run_id, after=after), write=False)
        return [JobOutcomeRow.model_validate(dict(r)) for r in rows]

    def open_jobs(self, run_id: str) -> list[tuple[str, str, str, str]]:
        """(id, agent, kind, status) of the run's agents' queued and running jobs."""
        rows = self._run(lambda tx: tx.all("swarm_open_jobs", run_id=run_id), write=False)
        return [(r["id"], r["agent"], r["kind"], r["status"]) for r in rows]

    def usage(self, run_id: str) -> tuple[float, int]:
        """(slot-seconds under lease, slot jobs queued) of the run's agents, over the whole run."""
        row = self._run(lambda tx: tx.one("swarm_usage", run_id=run_id), write=False)
        assert row is not None
        return float(row["slot_seconds"] or 0.0), int(row["slot_jobs"] or 0)

    def run_evaluations(self, run_id: str) -> int:
        """How many of a run's slot jobs finished ``done``."""
        row = self._run(lambda tx: tx.one("run_evaluations", run_id=run_id), write=False)
        return int(row["n"]) if row is not None else 0

    def run_leases(self, run_id: str) -> list[dict[str, Any]]:
        """Every lease a run's jobs held (gpu_id, job_id, kind, status of the job, acquired_at, released_at: now
        while held)."""
        return [dict(r) for r in self._run(lambda tx: tx.all("run_leases", run_id=run_id), write=False)]

    def run_lanes(self, run_id: str) -> dict[str, int]:
        """Jobs each slot that held a run's leases worked on at once (its worker's ``lanes``, by slot id)."""
        rows = self._run(lambda tx: tx.all("run_worker_starts", run_id=run_id), write=False)
        lanes: dict[str, int] = {}
        for row in rows:
            detail = json.loads(row["detail_json"] or "{}")
            lanes.update({str(k): int(v) for k, v in (detail.get("lanes") or {}).items()})
        return lanes

    def slot_queue(self, *, live_s: float = 120.0) -> tuple[int, int]:
        """(slot jobs queued, slots in service under a live worker), ledger-wide."""
        row = self._run(lambda tx: tx.one("slot_queue", live_s=live_s), write=False)
        assert row is not None
        return int(row["queued"] or 0), int(row["slots"] or 0)

    def job_request_json(self, job_id: str) -> str | None:
        """The stored request (EvalRequest JSON) of a job."""
        row = self._run(lambda tx: tx.one("job_request", job_id=job_id), write=False)
        return None if row is None else str(row["request_json"])

    def agent_submissions(self, agent: str, problem: str) -> list[dict[str, Any]]:
        """An agent's submissions of one problem (hash, score, speedup, passed, total, job id)."""
        rows = self._run(lambda tx: tx.all("agent_submissions_on", agent=agent, problem=problem), write=False)
        return [dict(r) for r in rows]

    def log_event(
        self, kind: str, *, agent: str | None = None, job_id: str | None = None, **detail: Any
    ) -> None:
        """Append one ``swarm.*`` event (a decision with its reason, a restart, a hold)."""
        self._run(lambda tx: event(tx, kind, agent=agent, job_id=job_id, **detail))


def _run_view(row: RowMapping) -> SwarmRunView:
    data = dict(row)
    data["config"] = json.loads(data.pop("config_json") or "{}")
    data["stop_requested"] = bool(data["stop_requested"])
    return SwarmRunView.model_validate(data)
