"""The ledger's tables (SQLModel), the single source of truth for the schema.

The migrations in :mod:`solforge.planner.ledger.migrations` create exactly this schema; a test compares
the migrated database with :data:`metadata`. Change a table here, then add a numbered migration.

Conventions
-----------
- Every ``*_at`` column is UNIX seconds (a float) read from the **database's clock** inside the
  statement that writes it (``$NOW`` in ``queries.sql``), never from a worker's wall clock. Lease
  deadlines are compared with the same clock, so a worker host whose clock jumps changes nothing.
- Ids handed to agents (job ids) are ``uuid4().hex``: unguessable, 32 hex characters.
- JSON payloads are stored as text (``*_json``) so both backends store them the same way.
- Status and kind columns are plain strings checked by CHECK constraints; their Python types are
  the ``Literal`` aliases in :mod:`solforge.planner.ledger.models`.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, CheckConstraint, Column, Index, Integer, MetaData, Text, text
from sqlalchemy.orm import registry
from sqlmodel import Field, SQLModel

__all__ = [
    "AgentRow",
    "BaselineRow",
    "EventRow",
    "GpuRow",
    "JobPayloadRow",
    "JobRow",
    "LeaseRow",
    "ProblemRow",
    "RunRow",
    "SubmissionRow",
    "SwarmAgentRow",
    "SwarmAssignmentRow",
    "SwarmRunRow",
    "WorkerRow",
    "metadata",
]

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING_CONVENTION)
"""The ledger's own metadata (not SQLModel's global one, so other packages' tables never mix in)."""

# SQLite only auto-increments an INTEGER PRIMARY KEY; PostgreSQL gets a 64-bit identity.
_BigId = BigInteger().with_variant(Integer(), "sqlite")


def _where(condition: str) -> dict[str, object]:
    """A partial index's condition, for both backends."""
    return {"sqlite_where": text(condition), "postgresql_where": text(condition)}


class LedgerModel(SQLModel, registry=registry(metadata=metadata)):
    """Base of the ledger's tables."""


class AgentRow(LedgerModel, table=True):
    """An agent (a coding agent, the planner, a human) that owns jobs and submissions."""

    __tablename__ = "agent"

    name: str = Field(primary_key=True, max_length=64)
    token_hash: str | None = Field(default=None, max_length=64, unique=True)
    """SHA-256 hex of the agent's bearer token; the token itself is never stored."""
    created_at: float
    last_seen_at: float | None = None
    disabled: bool = False


class ProblemRow(LedgerModel, table=True):
    """A problem that jobs have been queued for (a catalogue name or a folder's definition name)."""

    __tablename__ = "problem"

    name: str = Field(primary_key=True, max_length=256)
    op_type: str | None = Field(default=None, max_length=64)
    category: str | None = Field(default=None, max_length=32)
    first_seen_at: float


class JobRow(LedgerModel, table=True):
    """A unit of queued work: compile, benchmark or submit one solution for one problem."""

    __tablename__ = "job"
    __table_args__ = (
        CheckConstraint("kind IN ('compile', 'benchmark', 'submit', 'profile')", name="kind"),
        CheckConstraint("status IN ('queued', 'running', 'done', 'failed', 'cancelled')", name="status"),
        # The hot queries touch live jobs only; partial indexes keep their cost independent of history.
        Index("ix_job_queued", "needs_gpu", "run_after", **_where("status = 'queued'")),
        Index("ix_job_running", "needs_gpu", "agent", **_where("status = 'running'")),
        Index("ix_job_deadline", "deadline_at", **_where("status = 'running'")),
        Index("ix_job_started", "needs_gpu", "started_at", "agent"),
        Index("ix_job_finished", "finished_at"),
        Index("ix_job_agent_created", "agent", "created_at"),
    )

    id: str = Field(primary_key=True, max_length=32)
    agent: str = Field(foreign_key="agent.name", max_length=64)
    kind: str = Field(max_length=16)
    problem: str = Field(max_length=256, index=True)
    solution_name: str = Field(max_length=256)
    solution_hash: str = Field(max_length=64)
    priority: int = 0
    """Higher runs first among one agent's jobs (fairness between agents comes first)."""
    status: str = Field(max_length=16)
    needs_gpu: bool
    """True for benchmark and submit jobs: they run only while holding a lease on a slot."""
    slot_kind: str | None = Field(default=None, max_length=8)
    """Only slots of this kind ('cuda' or 'cpu') may take the job; None: any."""
    error: str | None = Field(default=None, sa_column=Column(Text))
    """Why the job failed, was cancelled, or why its last attempt was retried."""
    attempts: int = 0
    """Claims so far (a retry after an infrastructure fault adds one)."""
    max_attempts: int = 3
    timeout_s: float
    """Backstop on one attempt's run time, enforced by the worker (the sandbox has its own limits)."""
    created_at: float
    run_after: float
    """Not claimed before this time (retry back-off)."""
    started_at: float | None = None
    finished_at: float | None = None
    updated_at: float
    worker_id: str | None = Field(default=None, max_length=128)
    gpu_id: str | None = Field(default=None, max_length=160)
    claim_token: str | None = Field(default=None, max_length=32)
    """Fencing token of the current (or final) claim: only its holder may heartbeat or finish the job."""
    heartbeat_at: float | None = None
    deadline_at: float | None = None
    """The claim expires (and the job is reclaimed) when the database clock passes this."""
    cancel_requested: bool = False
    progress_json: str | None = Field(default=None, sa_column=Column(Text))


class JobPayloadRow(LedgerModel, table=True):
    """A job's request and result, apart from the job row so that the queue's rows stay narrow."""

    __tablename__ = "job_payload"

    job_id: str = Field(primary_key=True, foreign_key="job.id", max_length=32)
    request_json: str = Field(sa_column=Column(Text, nullable=False))
    """The solforge.sandbox.api.EvalRequest to run."""
    result_json: str | None = Field(default=None, sa_column=Column(Text))
    """EvalReport (benchmark, submit) or BuildReport (compile) once done."""


class RunRow(LedgerModel, table=True):
    """One evaluated workload of a job: the trace as SOL-ExecBench writes it, plus indexed numbers."""

    __tablename__ = "run"

    id: int | None = Field(default=None, sa_column=Column(_BigId, primary_key=True, autoincrement=True))
    job_id: str = Field(foreign_key="job.id", max_length=32, index=True)
    agent: str = Field(max_length=64)
    problem: str = Field(max_length=256, index=True)
    solution_name: str = Field(max_length=256)
    workload_uuid: str = Field(max_length=128)
    status: str = Field(max_length=32)
    latency_ms: float | None = None
    sol_score: float | None = None
    speedup: float | None = None
    hardware: str | None = Field(default=None, max_length=128)
    trace_json: str = Field(sa_column=Column(Text, nullable=False))
    created_at: float


class BaselineRow(LedgerModel, table=True):
    """A measured baseline of one workload on one GPU model, shared by every worker and host.

    ``baseline_key`` is :func:`solforge.sandbox.baseline.baseline_key`: it covers the definition, the
    workload, the GPU model, the torch version, the timer and the way it was measured, so a judge
    uses a record only when it would have measured the same thing.
    """

    __tablename__ = "baseline"
    __table_args__ = (Index("ix_baseline_problem", "problem"),)

    baseline_key: str = Field(primary_key=True, max_length=512)
    problem: str = Field(max_length=256)
    workload_uuid: str = Field(max_length=128)
    hardware: str = Field(max_length=128)
    record_json: str = Field(sa_column=Column(Text, nullable=False))
    """The :class:`solforge.sandbox.api.BaselineRecord`."""
    worker_id: str | None = Field(default=None, max_length=128)
    created_at: float


class SubmissionRow(LedgerModel, table=True):
    """A solution an agent submitted as final, with its score from the submission evaluation."""

    __tablename__ = "submission"
    __table_args__ = (Index("ix_submission_problem_score", "problem", "score"),)

    id: int | None = Field(default=None, sa_column=Column(_BigId, primary_key=True, autoincrement=True))
    agent: str = Field(foreign_key="agent.name", max_length=64, index=True)
    problem: str = Field(max_length=256)
    solution_name: str = Field(max_length=256)
    solution_hash: str = Field(max_length=64)
    job_id: str | None = Field(default=None, foreign_key="job.id", max_length=32, unique=True)
    score: float
    """Mean SOL score over the workloads, failed ones counting 0."""
    speedup: float | None = None
    """Geometric mean of the speedups over the passed workloads."""
    passed: int
    total: int
    hardware: str | None = Field(default=None, max_length=128)
    solution_json: str = Field(sa_column=Column(Text, nullable=False))
    created_at: float


class GpuRow(LedgerModel, table=True):
    """A slot a worker can lease for one benchmark at a time: a CUDA GPU or a CPU slot."""

    __tablename__ = "gpu"
    __table_args__ = (
        CheckConstraint("kind IN ('cuda', 'cpu')", name="kind"),
        CheckConstraint("status IN ('available', 'out_of_service')", name="status"),
    )

    id: str = Field(primary_key=True, max_length=160)
    """``<host>/<kind>:<index>``, for example ``node7/cuda:3``."""
    host: str = Field(max_length=128)
    device_index: int
    kind: str = Field(max_length=8)
    name: str | None = Field(default=None, max_length=128)
    uuid: str | None = Field(default=None, max_length=64)
    status: str = Field(max_length=16)
    status_reason: str | None = Field(default=None, sa_column=Column(Text))
    needs_check: bool = True
    """Health-check before the next lease (set at registration and after an abnormal lease end)."""
    worker_id: str | None = Field(default=None, max_length=128)
    """The worker that registered it last."""
    registered_at: float
    checked_at: float | None = None


class LeaseRow(LedgerModel, table=True):
    """A worker's exclusive hold on a slot for one job; also the slot's lease history."""

    __tablename__ = "lease"
    __table_args__ = (
        # The invariant "one benchmark at a time per GPU", enforced by the database itself.
        Index(
            "uq_lease_active_gpu",
            "gpu_id",
            unique=True,
            **_where("released_at IS NULL"),
        ),
        Index("ix_lease_gpu_acquired", "gpu_id", "acquired_at"),
        Index("ix_lease_released", "released_at"),
    )

    id: int | None = Field(default=None, sa_column=Column(_BigId, primary_key=True, autoincrement=True))
    gpu_id: str = Field(foreign_key="gpu.id", max_length=160)
    job_id: str = Field(foreign_key="job.id", max_length=32, index=True)
    worker_id: str = Field(max_length=128)
    token: str = Field(max_length=32)
    acquired_at: float
    heartbeat_at: float
    deadline_at: float
    released_at: float | None = None
    release_reason: str | None = Field(default=None, max_length=32)
    """done, failed, cancelled, retry, expired, lost or shutdown."""


class WorkerRow(LedgerModel, table=True):
    """A worker process that has connected to the ledger."""

    __tablename__ = "worker"

    id: str = Field(primary_key=True, max_length=128)
    host: str = Field(max_length=128)
    pid: int
    started_at: float
    heartbeat_at: float
    stopped_at: float | None = None
    slots_json: str = Field(sa_column=Column(Text, nullable=False))
    version: str = Field(max_length=32)


class EventRow(LedgerModel, table=True):
    """The append-only event log: every state change, written in the transaction that makes it.

    Triggers (created by the migrations) refuse UPDATE and DELETE on this table.
    """

    __tablename__ = "event"
    __table_args__ = (Index("ix_event_kind_at", "kind", "at"),)

    id: int | None = Field(default=None, sa_column=Column(_BigId, primary_key=True, autoincrement=True))
    at: float
    kind: str = Field(max_length=48)
    job_id: str | None = Field(default=None, max_length=32, index=True)
    gpu_id: str | None = Field(default=None, max_length=160, index=True)
    worker_id: str | None = Field(default=None, max_length=128)
    agent: str | None = Field(default=None, max_length=64)
    lease_id: int | None = Field(default=None, sa_column=Column(BigInteger))
    detail_json: str | None = Field(default=None, sa_column=Column(Text))


# -- the swarm planner (solforge.planner.swarm) ---------------------------------------------------


class SwarmRunRow(LedgerModel, table=True):
    """One swarm run: its configuration, its planner process, and how it ended.

    ``solforge swarm stop`` from another process sets ``stop_requested``; the planner polls it.
    """

    __tablename__ = "swarm_run"
    __table_args__ = (
        CheckConstraint("status IN ('running', 'stopping', 'stopped', 'finished', 'failed')", name="status"),
    )

    id: str = Field(primary_key=True, max_length=32)
    status: str = Field(max_length=16)
    config_json: str = Field(sa_column=Column(Text, nullable=False))
    """The SwarmConfig the run was started with (resume reads it back)."""
    created_at: float
    updated_at: float
    ended_at: float | None = None
    heartbeat_at: float | None = None
    """The planner's last tick; a stale heartbeat with status running means the planner died."""
    active_s: float = 0.0
    """Seconds the run has been running, over all its planner processes (the time limit counts these)."""
    pid: int | None = None
    host: str | None = Field(default=None, max_length=128)
    server_url: str | None = Field(default=None, max_length=256)
    stop_requested: bool = False
    stop_reason: str | None = Field(default=None, sa_column=Column(Text))


class SwarmAgentRow(LedgerModel, table=True):
    """An agent of a swarm run: its ledger identity (``name``), process and current state."""

    __tablename__ = "swarm_agent"
    __table_args__ = (
        CheckConstraint(
            "state IN ('idle', 'working', 'backoff', 'held', 'stopped', 'failed')", name="state"
        ),
    )

    name: str = Field(primary_key=True, foreign_key="agent.name", max_length=64)
    run_id: str = Field(foreign_key="swarm_run.id", max_length=32, index=True)
    idx: int
    state: str = Field(max_length=16)
    problem: str | None = Field(default=None, max_length=256)
    pid: int | None = None
    workspace: str = Field(sa_column=Column(Text, nullable=False))
    log_path: str = Field(sa_column=Column(Text, nullable=False))
    restarts: int = 0
    """Restarts after a crash or silence, over the whole run."""
    started_at: float | None = None
    """When its current process started."""
    activity_at: float | None = None
    """Its last sign of life: an MCP call (the agent's last_seen_at) or log output."""
    phase: str | None = Field(default=None, max_length=64)
    """The last tool it called, as read from its log."""
    note: str | None = Field(default=None, sa_column=Column(Text))
    """Why it is in its state (held: the reason; failed: the last exit)."""
    updated_at: float


class SwarmAssignmentRow(LedgerModel, table=True):
    """One agent working on one problem, from assignment to release: the run's assignment history."""

    __tablename__ = "swarm_assignment"
    __table_args__ = (
        # At most one open assignment per agent, and per (run, problem, share): a problem is given to
        # a second agent only under an explicit share number, which the policy hands out on purpose.
        Index("uq_swarm_assignment_open_agent", "agent", unique=True, **_where("ended_at IS NULL")),
        Index(
            "uq_swarm_assignment_open_problem",
            "run_id",
            "problem",
            "share",
            unique=True,
            **_where("ended_at IS NULL"),
        ),
        Index("ix_swarm_assignment_run_started", "run_id", "started_at"),
    )

    id: int | None = Field(default=None, sa_column=Column(_BigId, primary_key=True, autoincrement=True))
    run_id: str = Field(foreign_key="swarm_run.id", max_length=32)
    agent: str = Field(foreign_key="agent.name", max_length=64)
    problem: str = Field(max_length=256)
    share: int = 0
    """0: the problem's only agent; 1, 2, ...: extra agents the policy put on it explicitly."""
    reason: str = Field(sa_column=Column(Text, nullable=False))
    value: float | None = None
    """The policy's value of another attempt on the problem when it was assigned."""
    started_at: float
    ended_at: float | None = None
    end_reason: str | None = Field(default=None, max_length=32)
    """finished, solved, stalled, timeout, crashed, held, stopped, interrupted."""
