"""The :class:`Ledger` facade: everything the server, the tools and the planner ask of the ledger."""

from __future__ import annotations

import hashlib
import json
import logging
import math
import secrets
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from sqlalchemy import RowMapping

from solforge.problems import Definition, Solution
from solforge.problems.config import agent_name_error
from solforge.sandbox.api import BuildReport, EvalReport, EvalRequest

from . import queue
from ._db import Connector, ResolvedUrl, Tx, migrate, remove_temporary, resolve_db_url
from .changes import ChangeSignal
from .errors import (
    AgentExists,
    AgentNotFound,
    AuthenticationFailed,
    InvalidJobRequest,
    JobNotFound,
    LedgerError,
    LedgerUnavailable,
)
from .models import (
    AgentCredentials,
    AgentHistory,
    AgentStanding,
    AgentView,
    EventView,
    GpuUtilisation,
    GpuView,
    JobKind,
    JobSummary,
    JobView,
    LeaderboardEntry,
    LeaseView,
    ProblemStanding,
    QueueStats,
    RunView,
    SlotKind,
    SubmissionView,
    WorkerView,
    parse_progress,
    ts,
)

__all__ = ["DEFAULT_MAX_ATTEMPTS", "Ledger", "hash_token"]

log = logging.getLogger("solforge.planner")
T = TypeVar("T")

DEFAULT_MAX_ATTEMPTS = 3
"""Attempts per job: one run plus two retries after infrastructure faults."""
_COMPILE_SLACK_S = 60.0
"""Worker backstop beyond the sandbox's own compile limit (process start-up, cache writes)."""
_EVAL_SLACK_S = 120.0
"""Worker backstop beyond the sandbox's own total limit (baseline timing, teardown)."""


def hash_token(token: str) -> str:
    """SHA-256 hex of a bearer token.

    Tokens are 256-bit random strings, so a fast hash is enough: there is nothing to brute-force.
    """
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _problem_name(problem: str) -> str:
    """The ledger's name for ``EvalRequest.problem``: a catalogue name as is, a folder by its definition."""
    path = Path(problem)
    definition = path / "definition.json"
    if ("/" in problem or "\\" in problem or path.is_dir()) and definition.is_file():
        try:
            name = json.loads(definition.read_text(encoding="utf-8")).get("name")
        except (OSError, ValueError):
            name = None
        if isinstance(name, str) and name:
            return name
    return problem


def _agent_view(row: RowMapping) -> AgentView:
    return AgentView(
        name=row["name"],
        created_at=ts(row["created_at"]),  # type: ignore[arg-type]
        last_seen_at=ts(row["last_seen_at"]),
        disabled=bool(row["disabled"]),
        has_token=row["token_hash"] is not None,
    )


def _summary_fields(row: RowMapping) -> dict[str, Any]:
    return {
        "id": row["id"],
        "agent": row["agent"],
        "kind": row["kind"],
        "problem": row["problem"],
        "solution_name": row["solution_name"],
        "solution_hash": row["solution_hash"],
        "status": row["status"],
        "priority": int(row["priority"]),
        "attempts": int(row["attempts"]),
        "max_attempts": int(row["max_attempts"]),
        "created_at": ts(row["created_at"]),
        "started_at": ts(row["started_at"]),
        "finished_at": ts(row["finished_at"]),
        "worker_id": row["worker_id"],
        "gpu_id": row["gpu_id"],
        "cancel_requested": bool(row["cancel_requested"]),
        "progress": parse_progress(row["progress_json"]),
        "error": row["error"],
    }


def _job_view(tx: Tx, row: RowMapping) -> JobView:
    fields = _summary_fields(row)
    if row["status"] == "queued":
        ahead = tx.scalar(
            "queue_position",
            needs_gpu=bool(row["needs_gpu"]),
            priority=int(row["priority"]),
            created_at=float(row["created_at"]),
        )
        fields["position"] = int(ahead or 0)
    raw = row["result_json"]
    if raw:
        try:
            if row["kind"] == "compile":
                fields["build"] = BuildReport.model_validate_json(raw)
            else:
                fields["report"] = EvalReport.model_validate_json(raw)
        except ValueError as exc:  # a report written by another solforge version
            log.warning(
                "job %s: stored report does not parse: %s", row["id"], exc, extra={"action": "get_job"}
            )
    return JobView(**fields)


def _submission_view(row: RowMapping) -> SubmissionView:
    return SubmissionView(
        id=int(row["id"]),
        agent=row["agent"],
        problem=row["problem"],
        solution_name=row["solution_name"],
        solution_hash=row["solution_hash"],
        job_id=row["job_id"],
        score=float(row["score"]),
        speedup=None if row["speedup"] is None else float(row["speedup"]),
        passed=int(row["passed"]),
        total=int(row["total"]),
        hardware=row["hardware"],
        created_at=ts(row["created_at"]),  # type: ignore[arg-type]
    )


def _gpu_view(row: RowMapping) -> GpuView:
    return GpuView(
        id=row["id"],
        host=row["host"],
        device_index=int(row["device_index"]),
        kind=row["kind"],
        name=row["name"],
        uuid=row["uuid"],
        status=row["status"],
        status_reason=row["status_reason"],
        needs_check=bool(row["needs_check"]),
        worker_id=row["worker_id"],
        registered_at=ts(row["registered_at"]),  # type: ignore[arg-type]
        checked_at=ts(row["checked_at"]),
    )


def _quantile(sorted_values: list[float], q: float) -> float:
    """Linear-interpolated quantile of sorted values (numpy's default method)."""
    pos = (len(sorted_values) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


class Ledger:
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

    Times come from the database's clock (see :mod:`solforge.planner.tables`); ``timeout_s``
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
        if kind not in ("compile", "benchmark", "submit"):
            raise InvalidJobRequest(f"kind must be compile, benchmark or submit, not {kind!r}")
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

    # -- results -----------------------------------------------------------------------------------

    def register_problem(self, definition: Definition) -> None:
        """Record a problem's op type and category (jobs record problems by name on their own)."""
        category = getattr(definition, "category", None)
        self._run(
            lambda tx: tx.execute(
                "ensure_problem",
                name=definition.name,
                op_type=getattr(definition, "op_type", None),
                category=str(category) if category is not None else None,
            )
        )

    def record_submission(
        self, agent: str, report: EvalReport, solution: Solution, *, job_id: str | None = None
    ) -> SubmissionView:
        """Record a submission from a finished evaluation.

        Workers call this themselves for ``submit`` jobs (in the transaction that finishes the job);
        call it directly to import results evaluated elsewhere.

        Raises
        ------
        AgentNotFound
            No such agent.
        LedgerIntegrityError
            ``job_id`` already has a submission.
        """
        params = queue.submission_params(report, solution, agent=agent)

        def fn(tx: Tx) -> SubmissionView:
            if tx.one("get_agent", name=agent) is None:
                raise AgentNotFound(f"no agent named {agent!r}")
            tx.execute("ensure_problem", name=report.problem, op_type=None, category=None)
            row = tx.one("insert_submission", job_id=job_id, **params)
            assert row is not None
            queue.event(
                tx,
                "submission.recorded",
                job_id=job_id,
                agent=agent,
                submission_id=int(row["id"]),
                problem=report.problem,
                score=float(row["score"]),
            )
            return _submission_view(row)

        return self._run(fn)

    def get_submission_solution(self, submission_id: int) -> Solution:
        """The full solution of a submission (leaderboards list them without sources)."""
        row = self._run(lambda tx: tx.one("get_submission", id=submission_id), write=False)
        if row is None:
            raise LedgerError(f"no submission {submission_id}")
        return Solution.model_validate_json(row["solution_json"])

    def leaderboard(self, problem: str, *, limit: int = 20) -> list[LeaderboardEntry]:
        """A problem's leaderboard: each agent's best accepted submission, by score, then speedup, then age.

        Accepted: every workload passed. A rejected submission (a wrong answer, a REWARD_HACK) stays in
        the agent's history but never ranks.
        """
        rows = self._run(lambda tx: tx.all("leaderboard", problem=problem, limit=max(1, limit)), write=False)
        return [LeaderboardEntry(rank=i + 1, **_submission_view(r).model_dump()) for i, r in enumerate(rows)]

    def submission_for_job(self, job_id: str, agent: str) -> LeaderboardEntry | None:
        """The submission a finished submit job of ``agent`` recorded, ranked against every agent's best.

        ``rank`` is 1 + the number of *other* agents whose best submission for the problem beats
        this one (by score, then speedup). None until the job is done (or if it was not a submit job).

        Raises
        ------
        JobNotFound
            As :meth:`get_job`.
        """

        def fn(tx: Tx) -> SubmissionView | None:
            if tx.one("get_job", id=job_id, agent=agent) is None:
                raise JobNotFound(f"no job {job_id!r} belongs to agent {agent!r}")
            row = tx.one("submission_by_job", job_id=job_id)
            return None if row is None else _submission_view(row)

        sub = self._run(fn, write=False)
        if sub is None:
            return None
        key = (sub.score, sub.speedup or 0.0)
        ahead = sum(
            1
            for e in self.leaderboard(sub.problem, limit=1_000_000)
            if e.agent != sub.agent and (e.score, e.speedup or 0.0) > key
        )
        return LeaderboardEntry(rank=ahead + 1, **sub.model_dump())

    def problem_standings(self, agent: str) -> dict[str, ProblemStanding]:
        """For every problem with a submission or a job of ``agent``: the best score, the agent's best, its status."""

        def fn(tx: Tx) -> dict[str, ProblemStanding]:
            out: dict[str, ProblemStanding] = {}
            attempted = {r["problem"] for r in tx.all("agent_problems", agent=agent)}
            for r in tx.all("problem_bests", agent=agent):
                mine = None if r["mine"] is None else float(r["mine"])
                out[r["problem"]] = ProblemStanding(
                    problem=r["problem"],
                    best_score=float(r["best"]),
                    agent_best=mine,
                    submissions=int(r["n"]),
                    status="submitted"
                    if mine is not None
                    else "attempted"
                    if r["problem"] in attempted
                    else "new",
                )
            for problem in attempted - set(out):
                out[problem] = ProblemStanding(problem=problem, status="attempted")
            return out

        return self._run(fn, write=False)

    def standings(self, *, limit: int = 100) -> list[AgentStanding]:
        """The overall leaderboard: agents by problems led, then by mean best score."""
        rows = self._run(lambda tx: tx.all("agent_problem_bests"), write=False)
        per_agent: dict[str, dict[str, float]] = {}
        leader: dict[str, tuple[float, str]] = {}
        for r in rows:
            score = float(r["best"])
            per_agent.setdefault(r["agent"], {})[r["problem"]] = score
            current = leader.get(r["problem"])
            if current is None or score > current[0] or (score == current[0] and r["agent"] < current[1]):
                leader[r["problem"]] = (score, r["agent"])
        firsts: dict[str, int] = {}
        for _, who in leader.values():
            firsts[who] = firsts.get(who, 0) + 1
        ranked = sorted(
            per_agent.items(),
            key=lambda kv: (-firsts.get(kv[0], 0), -sum(kv[1].values()) / len(kv[1]), kv[0]),
        )
        return [
            AgentStanding(
                rank=i + 1,
                agent=name,
                problems=len(scores),
                firsts=firsts.get(name, 0),
                mean_score=sum(scores.values()) / len(scores),
            )
            for i, (name, scores) in enumerate(ranked[:limit])
        ]

    def best_per_problem(self) -> list[SubmissionView]:
        """The best accepted submission (every workload passed) of every problem that has one, by name."""
        rows = self._run(lambda tx: tx.all("best_per_problem"), write=False)
        return [_submission_view(r) for r in rows]

    def agent_history(self, agent: str, *, limit: int = 50) -> AgentHistory:
        """An agent's latest jobs and submissions (newest first) and its job counts by status."""

        def fn(tx: Tx) -> AgentHistory:
            row = tx.one("get_agent", name=agent)
            if row is None:
                raise AgentNotFound(f"no agent named {agent!r}")
            return AgentHistory(
                agent=_agent_view(row),
                job_counts={r["status"]: int(r["n"]) for r in tx.all("agent_job_counts", agent=agent)},
                jobs=[
                    JobSummary(**_summary_fields(r)) for r in tx.all("agent_jobs", agent=agent, limit=limit)
                ],
                submissions=[
                    _submission_view(r) for r in tx.all("agent_submissions", agent=agent, limit=limit)
                ],
            )

        return self._run(fn, write=False)

    # -- operations --------------------------------------------------------------------------------

    def queue_stats(self, *, window_s: float = 3600.0) -> QueueStats:
        """Queue depth now, and enqueue-to-start wait times of the jobs started in the last ``window_s``."""

        def fn(tx: Tx) -> QueueStats:
            queued: dict[str, int] = {}
            running: dict[str, int] = {}
            for r in tx.all("queue_counts"):
                (queued if r["status"] == "queued" else running)[r["kind"]] = int(r["n"])
            oldest = tx.one("queue_oldest")
            assert oldest is not None
            now = float(oldest["now"])
            waits = sorted(max(0.0, float(r["wait_s"])) for r in tx.all("recent_waits", window_s=window_s))
            finished: dict[str, int] = {}
            for r in tx.all("recent_finished", window_s=window_s):
                finished[r["status"]] = finished.get(r["status"], 0) + int(r["n"])
            return QueueStats(
                at=ts(now),  # type: ignore[arg-type]
                window_s=window_s,
                queued=queued,
                running=running,
                queued_by_agent={r["agent"]: int(r["n"]) for r in tx.all("queue_agents")},
                oldest_queued_s=None if oldest["oldest"] is None else max(0.0, now - float(oldest["oldest"])),
                started=len(waits),
                wait_mean_s=sum(waits) / len(waits) if waits else None,
                wait_p50_s=_quantile(waits, 0.5) if waits else None,
                wait_p95_s=_quantile(waits, 0.95) if waits else None,
                wait_max_s=waits[-1] if waits else None,
                finished=finished,
            )

        return self._run(fn, write=False)

    def gpu_utilisation(self, *, window_s: float = 3600.0) -> list[GpuUtilisation]:
        """Per slot: seconds under lease in the last ``window_s`` and the fraction of the window."""
        if window_s <= 0:
            raise InvalidJobRequest(f"window_s must be positive, got {window_s}")
        rows = self._run(lambda tx: tx.all("gpu_utilisation", window_s=window_s), write=False)
        return [
            GpuUtilisation(
                gpu_id=r["id"],
                host=r["host"],
                device_index=int(r["device_index"]),
                kind=r["kind"],
                name=r["name"],
                status=r["status"],
                status_reason=r["status_reason"],
                window_s=window_s,
                busy_s=float(r["busy_s"]),
                utilisation=min(1.0, max(0.0, float(r["busy_s"]) / window_s)),
                leases=int(r["leases"]),
            )
            for r in rows
        ]

    def gpus(self) -> list[GpuView]:
        """Every registered slot."""
        return [_gpu_view(r) for r in self._run(lambda tx: tx.all("list_gpus"), write=False)]

    def workers(self) -> list[WorkerView]:
        """Every worker that ever connected, newest first (a stale ``heartbeat_at`` without ``stopped_at``: it died)."""
        return [
            WorkerView(
                id=r["id"],
                host=r["host"],
                pid=int(r["pid"]),
                started_at=ts(r["started_at"]),  # type: ignore[arg-type]
                heartbeat_at=ts(r["heartbeat_at"]),  # type: ignore[arg-type]
                stopped_at=ts(r["stopped_at"]),
                slots=json.loads(r["slots_json"]),
                version=r["version"],
            )
            for r in self._run(lambda tx: tx.all("list_workers"), write=False)
        ]

    def set_gpu_service(self, gpu_id: str, *, in_service: bool, reason: str | None = None) -> GpuView:
        """Take a slot out of service (an operator's decision, kept across worker restarts) or put it back.

        A slot put back is health-checked before its next lease.
        """

        def fn(tx: Tx) -> GpuView:
            if in_service:
                hit = tx.one("gpu_in_service", gpu_id=gpu_id)
                kind = "gpu.in_service"
                text = None
            else:
                text = f"operator: {reason or 'taken out of service'}"
                hit = tx.one("gpu_out_of_service", gpu_id=gpu_id, reason=text)
                kind = "gpu.out_of_service"
            if hit is None:
                raise LedgerError(f"no slot {gpu_id!r}; list them with Ledger.gpus()")
            queue.event(tx, kind, gpu_id=gpu_id, reason=text)
            row = tx.one("get_gpu", gpu_id=gpu_id)
            assert row is not None
            return _gpu_view(row)

        return self._run(fn)

    def reclaim_expired(self, *, backoff_s: float = 0.0) -> int:
        """Reclaim every claim and lease past its deadline now (workers also do this every heartbeat).

        Returns the number of jobs reclaimed.
        """

        def fn(tx: Tx) -> int:
            if not tx.scalar("any_expired"):
                return 0
            return len(queue.reclaim_expired(tx, backoff_s=backoff_s))

        return self._run(fn)

    def events(self, *, job_id: str | None = None, after_id: int = 0, limit: int = 1000) -> list[EventView]:
        """The event log (oldest first), optionally one job's; page with ``after_id``."""
        if job_id is None:
            rows = self._run(lambda tx: tx.all("list_events", after_id=after_id, limit=limit), write=False)
        else:
            rows = self._run(
                lambda tx: tx.all("list_job_events", job_id=job_id, after_id=after_id, limit=limit),
                write=False,
            )
        return [
            EventView(
                id=int(r["id"]),
                at=ts(r["at"]),  # type: ignore[arg-type]
                kind=r["kind"],
                job_id=r["job_id"],
                gpu_id=r["gpu_id"],
                worker_id=r["worker_id"],
                agent=r["agent"],
                lease_id=r["lease_id"],
                detail=json.loads(r["detail_json"]) if r["detail_json"] else {},
            )
            for r in rows
        ]

    def lease_history(self) -> list[LeaseView]:
        """Every lease ever taken, by slot then time."""
        rows = self._run(lambda tx: tx.all("lease_history"), write=False)
        return [
            LeaseView(
                id=int(r["id"]),
                gpu_id=r["gpu_id"],
                job_id=r["job_id"],
                worker_id=r["worker_id"],
                acquired_at=ts(r["acquired_at"]),  # type: ignore[arg-type]
                deadline_at=ts(r["deadline_at"]),  # type: ignore[arg-type]
                released_at=ts(r["released_at"]),
                release_reason=r["release_reason"],
            )
            for r in rows
        ]

    # -- async twins -------------------------------------------------------------------------------

    async def enqueue_async(
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
        """Async version of :meth:`enqueue`."""
        return await anyio.to_thread.run_sync(
            lambda: self.enqueue(
                agent,
                kind,
                request,
                priority=priority,
                max_attempts=max_attempts,
                timeout_s=timeout_s,
                slot_kind=slot_kind,
            )
        )

    async def get_job_async(self, job_id: str, agent: str) -> JobView:
        """Async version of :meth:`get_job`."""
        return await anyio.to_thread.run_sync(self.get_job, job_id, agent)

    async def wait_job_async(
        self,
        job_id: str,
        agent: str,
        timeout_s: float,
        *,
        poll_s: float = 0.5,
        on_update: Callable[[JobView], Any] | None = None,
    ) -> JobView:
        """Async version of :meth:`wait_job`: polls without blocking the event loop.

        Parameters
        ----------
        on_update
            Called (and awaited when it returns an awaitable) with each view whose status or
            progress changed: wire it to ``ctx.report_progress``. Cancelling the calling task stops
            the wait, not the job.
        """
        deadline = time.monotonic() + max(0.0, timeout_s)
        delay = 0.05
        last: tuple[Any, ...] | None = None
        while True:
            seen = self.changes.generation
            view = await self.get_job_async(job_id, agent)
            key = (view.status, view.progress, view.position)
            if on_update is not None and key != last:
                result = on_update(view)
                if hasattr(result, "__await__"):
                    await result
            last = key
            remaining = deadline - time.monotonic()
            if view.finished or remaining <= 0:
                return view
            # Wakes at once on a write in this process (the in-process worker finishing the job).
            await anyio.to_thread.run_sync(self.changes.wait, seen, min(delay, remaining), abandon_on_cancel=True)
            delay = min(delay * 1.5, poll_s)

    async def cancel_job_async(self, job_id: str, agent: str) -> JobView:
        """Async version of :meth:`cancel_job`."""
        return await anyio.to_thread.run_sync(self.cancel_job, job_id, agent)

    async def authenticate_async(self, token: str) -> AgentView:
        """Async version of :meth:`authenticate`."""
        return await anyio.to_thread.run_sync(self.authenticate, token)

    async def leaderboard_async(self, problem: str, *, limit: int = 20) -> list[LeaderboardEntry]:
        """Async version of :meth:`leaderboard`."""
        return await anyio.to_thread.run_sync(lambda: self.leaderboard(problem, limit=limit))

    async def best_per_problem_async(self) -> list[SubmissionView]:
        """Async version of :meth:`best_per_problem`."""
        return await anyio.to_thread.run_sync(self.best_per_problem)

    async def agent_history_async(self, agent: str, *, limit: int = 50) -> AgentHistory:
        """Async version of :meth:`agent_history`."""
        return await anyio.to_thread.run_sync(lambda: self.agent_history(agent, limit=limit))

    async def queue_stats_async(self, *, window_s: float = 3600.0) -> QueueStats:
        """Async version of :meth:`queue_stats`."""
        return await anyio.to_thread.run_sync(lambda: self.queue_stats(window_s=window_s))

    async def gpu_utilisation_async(self, *, window_s: float = 3600.0) -> list[GpuUtilisation]:
        """Async version of :meth:`gpu_utilisation`."""
        return await anyio.to_thread.run_sync(lambda: self.gpu_utilisation(window_s=window_s))

    async def record_submission_async(
        self, agent: str, report: EvalReport, solution: Solution, *, job_id: str | None = None
    ) -> SubmissionView:
        """Async version of :meth:`record_submission`."""
        return await anyio.to_thread.run_sync(
            lambda: self.record_submission(agent, report, solution, job_id=job_id)
        )
