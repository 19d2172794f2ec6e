"""The :class:`Ledger` facade: everything the server, the tools and the planner ask of the ledger."""

from __future__ import annotations

import logging
import math
import secrets
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import RowMapping

from solforge.problems.config import agent_name_error
from solforge.sandbox.api import EvalRequest

from ..errors import (
    AgentExists,
    AgentNotFound,
    AuthenticationFailed,
    InvalidJobRequest,
    JobNotFound,
    LedgerUnavailable,
)
from . import queue
from .async_api import LedgerAsync
from .changes import ChangeSignal
from .common import DEFAULT_MAX_ATTEMPTS, T, _agent_view, _job_view, _problem_name, hash_token
from .db import Connector, ResolvedUrl, Tx, migrate, remove_temporary, resolve_db_url
from .models import AgentCredentials, AgentView, JobKind, JobView, RunView, SlotKind, ts
from .operations import LedgerOperations
from .results import LedgerResults

__all__ = ["DEFAULT_MAX_ATTEMPTS", "Ledger", "hash_token"]

log = logging.getLogger("solforge.planner")
_COMPILE_SLACK_S = 60.0
"""Worker backstop beyond the sandbox's own compile limit (process start-up, cache writes)."""
_EVAL_SLACK_S = 120.0
"""Worker backstop beyond the sandbox's own total limit (baseline timing, teardown)."""


class Ledger(LedgerResults, LedgerOperations, LedgerAsync):
    """The shared record of agents, jobs, runs, submissions, GPUs, leases and events.

    Open one with :meth:`open`; it is thread-safe (each call takes a pooled connection) and cheap
    to share across a process. Every method has an ``_async`` twin that runs it in a worker thread,
    so an event loop (the MCP server) never blocks on the database.

    Examples
    --------
    >>> ledger = Ledger.open()                                  # ~/.local/share/solforge/ledger.db
    >>> ledger = Ledger.open("postgresql://solforge@db/solforge")  # many hosts
    >>> ledger.ensure_agent("local")
    >>> job = ledger.enqueue("local", "benchmark", EvalRequest(problem="rmsnorm_h4096", solution=sol))
    >>> job = ledger.wait_job(job.id, "local", timeout_s=45)     # returns when done or after 45 s
    >>> job.status, job.report.all_passed if job.report else None

    Notes
    -----
    Agents see only their own jobs: ``get_job``, ``wait_job``, ``cancel_job`` and ``job_runs`` take
    the caller's agent name and raise :class:`JobNotFound` for an unknown id and for another
    agent's job alike. Leaderboards and submissions are public to every agent.

    Times come from the database's clock (see :mod:`solforge.planner.ledger.tables`); ``timeout_s``
    arguments are measured on this process's monotonic clock.
    """

    def __init__(self, connector: Connector, *, retry_s: float = 10.0) -> None:
        """Wrap an open connector; use :meth:`open` instead."""
        self.connector = connector
        self.retry_s = retry_s
        self.changes = ChangeSignal()
        """Notified after every write made through this object (and by its in-process workers)."""

    # -- lifecycle ---------------------------------------------------------------------------------

    @classmethod
    def open(
        cls, url: str | Path | None = None, *, migrate_schema: bool = True, retry_s: float = 10.0
    ) -> Ledger:
        """Open (and by default migrate) a ledger.

        Parameters
        ----------
        url
            None: the default SQLite file (``$SOLFORGE_HOME/ledger.db`` or
            ``~/.local/share/solforge/ledger.db``); a path or ``sqlite:///path``: that SQLite file;
            ``sqlite://``: a throwaway ledger deleted on :meth:`close`;
            ``postgresql://user:pw@host:5432/db``: a shared PostgreSQL ledger.
        migrate_schema
            Apply pending migrations first (under a cross-process lock, so many workers may start
            at once).
        retry_s
            How long each call keeps retrying while the database is unreachable (a restarting
            server) before raising :class:`LedgerUnavailable`.

        Raises
        ------
        ValueError
            Unsupported URL scheme.
        LedgerUnavailable
            The database cannot be reached.
        LedgerError
            The database's schema is newer than this solforge.
        """
        connector = Connector(resolve_db_url(url))
        try:
            if migrate_schema:
                deadline = time.monotonic() + retry_s
                while True:
                    try:
                        migrate(connector)
                        break
                    except LedgerUnavailable:
                        if time.monotonic() > deadline:
                            raise
                        time.sleep(0.5)
        except BaseException:
            connector.dispose()
            remove_temporary(connector.resolved)
            raise
        log.info("ledger open: %s", connector.resolved.display, extra={"action": "open"})
        return cls(connector, retry_s=retry_s)

    @property
    def url(self) -> str:
        """The database URL, password hidden."""
        return self.connector.resolved.display

    @property
    def resolved(self) -> ResolvedUrl:
        return self.connector.resolved

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self.connector.dialect

    def close(self) -> None:
        """Close pooled connections (and delete a throwaway ledger)."""
        self.connector.dispose()
        remove_temporary(self.connector.resolved)

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self, fn: Callable[[Tx], T], *, write: bool = True) -> T:
        result = self.connector.run(fn, write=write, retry_s=self.retry_s)
        if write:
            self.changes.notify()
        return result

    def now(self) -> float:
        """The database's clock, UNIX seconds."""
        return float(self._run(lambda tx: tx.scalar("db_now"), write=False))

    # -- agents ------------------------------------------------------------------------------------

    @staticmethod
    def _check_agent_name(name: str) -> None:
        problem = agent_name_error(name)
        if problem:
            raise InvalidJobRequest(problem)

    def register_agent(self, name: str, *, issue_token: bool = True) -> AgentCredentials | AgentView:
        """Create an agent.

        Parameters
        ----------
        name
            Unique, 1-64 characters of letters, digits and ``- _ . @ :``.
        issue_token
            Issue a bearer token (returned once, in :class:`AgentCredentials`); False creates a
            token-less agent (stdio, the local user) and returns its :class:`AgentView`.

        Raises
        ------
        AgentExists
            The name is taken (use :meth:`rotate_token` for a new token).
        """
        self._check_agent_name(name)
        token = secrets.token_urlsafe(32) if issue_token else None

        def fn(tx: Tx) -> RowMapping:
            row = tx.one("insert_agent", name=name, token_hash=hash_token(token) if token else None)
            if row is None:
                raise AgentExists(
                    f"an agent named {name!r} already exists; pick another name or rotate its token"
                )
            queue.event(tx, "agent.registered", agent=name, token=bool(token))
            return row

        view = _agent_view(self._run(fn))
        return AgentCredentials(agent=view, token=token) if token else view

    def ensure_agent(self, name: str) -> AgentView:
        """The agent by that name, created (without a token) when missing. Idempotent."""
        self._check_agent_name(name)

        def fn(tx: Tx) -> RowMapping:
            row = tx.one("insert_agent", name=name, token_hash=None)
            if row is not None:
                queue.event(tx, "agent.registered", agent=name, token=False)
                return row
            existing = tx.one("get_agent", name=name)
            assert existing is not None
            return existing

        return _agent_view(self._run(fn))

    def get_agent(self, name: str) -> AgentView:
        """One agent. Raises :class:`AgentNotFound`."""
        row = self._run(lambda tx: tx.one("get_agent", name=name), write=False)
        if row is None:
            raise AgentNotFound(f"no agent named {name!r}; register it with register_agent or ensure_agent")
        return _agent_view(row)

    def rotate_token(self, name: str) -> AgentCredentials:
        """Issue a new token for an agent; the old one stops working at once."""
        token = secrets.token_urlsafe(32)

        def fn(tx: Tx) -> RowMapping:
            row = tx.one("set_agent_token", name=name, token_hash=hash_token(token))
            if row is None:
                raise AgentNotFound(f"no agent named {name!r}")
            queue.event(tx, "agent.token_rotated", agent=name)
            return row

        return AgentCredentials(agent=_agent_view(self._run(fn)), token=token)

    def set_agent_disabled(self, name: str, disabled: bool = True) -> AgentView:
        """Disable (or re-enable) an agent: a disabled agent cannot authenticate or enqueue."""

        def fn(tx: Tx) -> RowMapping:
            row = tx.one("set_agent_disabled", name=name, disabled=disabled)
            if row is None:
                raise AgentNotFound(f"no agent named {name!r}")
            queue.event(tx, "agent.disabled" if disabled else "agent.enabled", agent=name)
            return row

        return _agent_view(self._run(fn))

    def has_agent_tokens(self) -> bool:
        """Whether any enabled agent holds a token (a shared HTTP server must then require one)."""
        return bool(self._run(lambda tx: tx.scalar("any_agent_token"), write=False))

    def authenticate(self, token: str) -> AgentView:
        """The enabled agent holding ``token``. Raises :class:`AuthenticationFailed`."""
        if not token:
            raise AuthenticationFailed()
        row = self._run(lambda tx: tx.one("agent_by_token", token_hash=hash_token(token)))
        if row is None:
            raise AuthenticationFailed()
        return _agent_view(row)

    # -- jobs --------------------------------------------------------------------------------------

    def enqueue(
        self,
        agent: str,
        kind: JobKind,
        request: EvalRequest,
        *,
        priority: int = 0,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        timeout_s: float | None = None,
        slot_kind: SlotKind | None = None,
    ) -> JobView:
        """Queue a compile, benchmark or submit job for ``agent`` and return it (status queued).

        Parameters
        ----------
        agent
            The owner (must exist and be enabled). Only it can read or cancel the job.
        kind
            ``compile``: build only (``options.compile_only`` is set), on any worker's CPU, no GPU
            lease. ``benchmark``: evaluate on a leased slot. ``submit``: the final evaluation
            (``options.submission`` is set) on a leased slot; once done it is recorded as a
            submission and appears on the leaderboard.
        request
            What to evaluate (solforge.sandbox.api.EvalRequest). ``problem`` is a catalogue name,
            or a folder path that every worker host can read.
        priority
            -1000..1000; higher runs first among this agent's own jobs. It does not jump other
            agents: fairness between agents comes first (see :mod:`solforge.planner`).
        max_attempts
            1..20 claims before a job whose infrastructure keeps failing is marked failed. A
            candidate's own failure (compile error, wrong answer, timeout) is a finished report,
            never retried.
        timeout_s
            Worker-side backstop for one attempt; default: the sandbox's own limit plus slack
            (``compile_timeout_s + 60`` or ``total_timeout_s + 120``). When it passes, the worker
            kills the process tree and retries the job on a health-checked slot.
        slot_kind
            ``cuda`` or ``cpu`` to require that kind of slot; None: any (benchmark and submit only).

        Raises
        ------
        InvalidJobRequest
            A bad argument (the message names it), or the agent is disabled.
        AgentNotFound
            No such agent.
        """
        if kind not in ("compile", "benchmark", "submit", "profile"):
            raise InvalidJobRequest(f"kind must be compile, benchmark, submit or profile, not {kind!r}")
        if (kind == "profile") != (request.options.profile is not None):
            raise InvalidJobRequest("a profile job, and only a profile job, sets options.profile")
        if not -1000 <= priority <= 1000:
            raise InvalidJobRequest(f"priority {priority} is out of range; use -1000..1000 (default 0)")
        if not 1 <= max_attempts <= 20:
            raise InvalidJobRequest(f"max_attempts {max_attempts} is out of range; use 1..20 (default 3)")
        if slot_kind not in (None, "cuda", "cpu"):
            raise InvalidJobRequest(f"slot_kind must be cuda, cpu or None, not {slot_kind!r}")
        if kind == "compile" and slot_kind is not None:
            raise InvalidJobRequest(
                "compile jobs run on a worker's CPU and take no slot; leave slot_kind None"
            )
        options = request.options
        if kind == "compile":
            request = request.model_copy(
                update={"options": options.model_copy(update={"compile_only": True})}
            )
        elif kind == "submit":
            request = request.model_copy(update={"options": options.model_copy(update={"submission": True})})
        if timeout_s is None:
            timeout_s = (
                options.compile_timeout_s + _COMPILE_SLACK_S
                if kind == "compile"
                else options.total_timeout_s + _EVAL_SLACK_S
            )
        if not (timeout_s > 0 and math.isfinite(timeout_s)):
            raise InvalidJobRequest(f"timeout_s must be a positive number of seconds, got {timeout_s}")
        job_id = uuid.uuid4().hex
        problem = _problem_name(request.problem)
        params = {
            "id": job_id,
            "agent": agent,
            "kind": kind,
            "problem": problem,
            "solution_name": request.solution.name,
            "solution_hash": request.solution.content_hash(),
            "priority": priority,
            "needs_gpu": kind != "compile",
            "slot_kind": slot_kind,
            "request_json": request.model_dump_json(),
            "max_attempts": max_attempts,
            "timeout_s": float(timeout_s),
        }

        def fn(tx: Tx) -> JobView:
            owner = tx.one("get_agent", name=agent)
            if owner is None:
                raise AgentNotFound(
                    f"no agent named {agent!r}; register it with register_agent or ensure_agent"
                )
            if owner["disabled"]:
                raise InvalidJobRequest(f"agent {agent!r} is disabled and cannot queue jobs")
            tx.execute("ensure_problem", name=problem, op_type=None, category=None)
            tx.execute("insert_job", **{k: v for k, v in params.items() if k != "request_json"})
            tx.execute("insert_job_payload", id=job_id, request_json=params["request_json"])
            queue.event(
                tx,
                "job.enqueued",
                job_id=job_id,
                agent=agent,
                kind=kind,
                problem=problem,
                solution=request.solution.name,
                priority=priority,
            )
            row = tx.one("get_job", id=job_id, agent=agent)
            assert row is not None
            return _job_view(tx, row)

        return self._run(fn)

    def get_job(self, job_id: str, agent: str) -> JobView:
        """A job of ``agent`` with its status, progress, queue position and (once done) report.

        Raises
        ------
        JobNotFound
            No such job, or it belongs to another agent (the two are indistinguishable on purpose).
        """

        def fn(tx: Tx) -> JobView:
            row = tx.one("get_job", id=job_id, agent=agent)
            if row is None:
                raise JobNotFound(
                    f"no job {job_id!r} belongs to agent {agent!r}; check the id (agent_history lists your jobs)"
                )
            return _job_view(tx, row)

        return self._run(fn, write=False)

    def wait_job(self, job_id: str, agent: str, timeout_s: float, *, poll_s: float = 0.5) -> JobView:
        """Wait up to ``timeout_s`` for a job to finish; return it either way (check ``.finished``).

        Polls the ledger, starting at 50 ms and backing off to ``poll_s``. A timeout is not an
        error: the caller hands the pending job back to its agent to poll again.

        Raises
        ------
        JobNotFound
            As :meth:`get_job`.
        """
        deadline = time.monotonic() + max(0.0, timeout_s)
        delay = 0.05
        while True:
            seen = self.changes.generation
            view = self.get_job(job_id, agent)
            remaining = deadline - time.monotonic()
            if view.finished or remaining <= 0:
                return view
            self.changes.wait(seen, min(delay, remaining))  # wakes at once on a write in this process
            delay = min(delay * 1.5, poll_s)

    def cancel_job(self, job_id: str, agent: str) -> JobView:
        """Cancel a job of ``agent``.

        A queued job is cancelled at once. A running job is flagged; its worker notices on its next
        heartbeat (a few seconds), kills the job's process tree and marks it cancelled. A finished
        job is returned unchanged. Call :meth:`wait_job` to see the cancellation land.

        Raises
        ------
        JobNotFound
            As :meth:`get_job`.
        """

        def fn(tx: Tx) -> JobView:
            if tx.one("cancel_queued", id=job_id, agent=agent) is not None:
                queue.event(
                    tx, "job.cancelled", job_id=job_id, agent=agent, by="owner", while_status="queued"
                )
            else:
                running = tx.one("request_cancel", id=job_id, agent=agent)
                if running is not None:
                    queue.event(
                        tx,
                        "job.cancel_requested",
                        job_id=job_id,
                        agent=agent,
                        worker_id=running["worker_id"],
                        gpu_id=running["gpu_id"],
                    )
            row = tx.one("get_job", id=job_id, agent=agent)
            if row is None:
                raise JobNotFound(f"no job {job_id!r} belongs to agent {agent!r}")
            return _job_view(tx, row)

        return self._run(fn)

    def job_runs(self, job_id: str, agent: str) -> list[RunView]:
        """The evaluated workloads of a job of ``agent`` (empty until it is done)."""

        def fn(tx: Tx) -> list[RunView]:
            if tx.one("get_job", id=job_id, agent=agent) is None:
                raise JobNotFound(f"no job {job_id!r} belongs to agent {agent!r}")
            return [
                RunView(
                    id=int(r["id"]),
                    job_id=r["job_id"],
                    workload_uuid=r["workload_uuid"],
                    status=r["status"],
                    latency_ms=r["latency_ms"],
                    sol_score=r["sol_score"],
                    speedup=r["speedup"],
                    hardware=r["hardware"],
                    created_at=ts(r["created_at"]),
                )
                for r in tx.all("job_runs", job_id=job_id)
            ]

        return self._run(fn, write=False)

