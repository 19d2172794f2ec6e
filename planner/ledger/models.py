"""What the ledger's queries return: typed, documented pydantic models (times are UTC datetimes)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from solforge.sandbox.api import BuildReport, EvalReport

__all__ = [
    "TERMINAL_STATUSES",
    "AgentCredentials",
    "AgentHistory",
    "AgentStanding",
    "AgentView",
    "EventView",
    "GpuUtilisation",
    "GpuView",
    "JobKind",
    "JobProgress",
    "JobStatus",
    "JobSummary",
    "JobView",
    "LeaderboardEntry",
    "LeaseView",
    "ProblemStanding",
    "QueueStats",
    "RunView",
    "SlotKind",
    "SubmissionView",
    "WorkerView",
]

JobKind = Literal["compile", "benchmark", "submit", "profile"]
"""compile: build only, on a worker's CPU (no lease). benchmark: evaluate on a leased slot.
submit: the final evaluation on a leased slot; a finished one becomes a submission."""
JobStatus = Literal["queued", "running", "done", "failed", "cancelled"]
"""done: the sandbox produced a report (which may hold failing statuses: the candidate's fault, never
retried). failed: the infrastructure failed on every attempt. cancelled: by its owner."""
SlotKind = Literal["cuda", "cpu"]

TERMINAL_STATUSES: frozenset[str] = frozenset({"done", "failed", "cancelled"})


def ts(value: float | None) -> datetime | None:
    """A database UNIX-seconds value as an aware UTC datetime."""
    return None if value is None else datetime.fromtimestamp(float(value), tz=UTC)


class PlannerModel(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")


class AgentView(PlannerModel):
    """An agent as the ledger knows it (never its token)."""

    name: str
    created_at: datetime
    last_seen_at: datetime | None = None
    """Last successful authentication."""
    disabled: bool = False
    has_token: bool = False
    """True when the agent can authenticate with a bearer token."""


class AgentCredentials(PlannerModel):
    """A newly issued token. It is shown once: the ledger stores only its SHA-256."""

    agent: AgentView
    token: str
    """Pass as ``Authorization: Bearer <token>`` (or to Ledger.authenticate)."""


class JobProgress(PlannerModel):
    """The latest progress a running job reported."""

    message: str | None = None
    done: int | None = None
    total: int | None = None


class JobSummary(PlannerModel):
    """A job without its payload and report (lists, history)."""

    id: str
    """32 hex characters; unguessable, but not a credential: reads check the owner too."""
    agent: str
    kind: JobKind
    problem: str
    solution_name: str
    solution_hash: str
    status: JobStatus
    priority: int
    attempts: int
    """Claims so far; a retry after an infrastructure fault adds one."""
    max_attempts: int
    created_at: datetime
    started_at: datetime | None = None
    """Start of the latest attempt."""
    finished_at: datetime | None = None
    worker_id: str | None = None
    """The worker of the latest attempt."""
    gpu_id: str | None = None
    """The slot of the latest attempt (None for compile jobs)."""
    cancel_requested: bool = False
    progress: JobProgress | None = None
    error: str | None = None
    """Why the job failed or was cancelled, or why its last attempt is being retried."""

    @property
    def finished(self) -> bool:
        """True once the job is done, failed or cancelled."""
        return self.status in TERMINAL_STATUSES

    @property
    def wait_s(self) -> float | None:
        """Seconds from enqueue to the start of the latest attempt."""
        if self.started_at is None:
            return None
        return (self.started_at - self.created_at).total_seconds()

    @property
    def run_s(self) -> float | None:
        """Seconds the latest attempt ran (None until finished)."""
        if self.started_at is None or self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()


class JobView(JobSummary):
    """A job with its queue position and, once done, its report."""

    position: int | None = None
    """While queued: jobs of the same class ahead of it by priority and age (approximate:
    fairness between agents can reorder them)."""
    report: EvalReport | None = None
    """benchmark and submit jobs, once done: the sandbox's report."""
    build: BuildReport | None = None
    """compile jobs, once done: the build report."""


class RunView(PlannerModel):
    """One evaluated workload of a job."""

    id: int
    job_id: str
    workload_uuid: str
    status: str
    latency_ms: float | None = None
    sol_score: float | None = None
    speedup: float | None = None
    hardware: str | None = None
    created_at: datetime


class SubmissionView(PlannerModel):
    """A recorded submission (without its sources)."""

    id: int
    agent: str
    problem: str
    solution_name: str
    solution_hash: str
    job_id: str | None = None
    score: float
    """Mean SOL score over the workloads, failed ones counting 0 (CPU runs carry none: 0)."""
    speedup: float | None = None
    """Geometric mean speedup over the baseline on the passed workloads."""
    passed: int
    total: int
    hardware: str | None = None
    created_at: datetime


class LeaderboardEntry(SubmissionView):
    """One agent's best submission for a problem, with its rank (1 = best)."""

    rank: int


class ProblemStanding(PlannerModel):
    """Where one problem stands, seen by one agent."""

    problem: str
    best_score: float | None = None
    """The best submission's score by anyone (None: no submission yet)."""
    agent_best: float | None = None
    """This agent's best submission score."""
    submissions: int = 0
    """Submissions by anyone."""
    status: Literal["new", "attempted", "submitted"]
    """new: this agent never queued a job for it; attempted: jobs but no submission; submitted."""


class AgentStanding(PlannerModel):
    """One agent across all problems (the overall leaderboard)."""

    rank: int
    agent: str
    problems: int
    """Problems it has submitted for."""
    firsts: int
    """Problems where its best score leads (a tie goes to the alphabetically first agent)."""
    mean_score: float
    """Mean of its best score per submitted problem."""


class AgentHistory(PlannerModel):
    """What an agent has done: its latest jobs and submissions."""

    agent: AgentView
    job_counts: dict[str, int] = Field(default_factory=dict)
    """All of the agent's jobs by status."""
    jobs: list[JobSummary] = Field(default_factory=list)
    """Newest first."""
    submissions: list[SubmissionView] = Field(default_factory=list)
    """Newest first."""


class QueueStats(PlannerModel):
    """Queue depth now and wait times over a recent window."""

    at: datetime
    """The database's clock when the stats were read."""
    window_s: float
    queued: dict[str, int] = Field(default_factory=dict)
    """Queued jobs by kind."""
    running: dict[str, int] = Field(default_factory=dict)
    """Running jobs by kind."""
    queued_by_agent: dict[str, int] = Field(default_factory=dict)
    oldest_queued_s: float | None = None
    """Age of the oldest queued job."""
    started: int = 0
    """Jobs started within the window."""
    wait_mean_s: float | None = None
    """Enqueue-to-start of the jobs started within the window."""
    wait_p50_s: float | None = None
    wait_p95_s: float | None = None
    wait_max_s: float | None = None
    finished: dict[str, int] = Field(default_factory=dict)
    """Jobs that ended within the window, by final status."""


class GpuView(PlannerModel):
    """A registered slot."""

    id: str
    host: str
    device_index: int
    kind: SlotKind
    name: str | None = None
    uuid: str | None = None
    status: Literal["available", "out_of_service"]
    status_reason: str | None = None
    needs_check: bool
    worker_id: str | None = None
    registered_at: datetime
    checked_at: datetime | None = None


class WorkerView(PlannerModel):
    """A worker process that connected to the ledger."""

    id: str
    """``<host>:<pid>:<random>``."""
    host: str
    pid: int
    started_at: datetime
    heartbeat_at: datetime
    """Renewed every ``heartbeat_s`` while it runs; stale when it died without stopping."""
    stopped_at: datetime | None = None
    slots: list[str] = Field(default_factory=list)
    version: str


class GpuUtilisation(PlannerModel):
    """How busy a slot was over a window."""

    gpu_id: str
    host: str
    device_index: int
    kind: SlotKind
    name: str | None = None
    status: str
    status_reason: str | None = None
    window_s: float
    busy_s: float
    """Seconds under lease within the window."""
    utilisation: float
    """busy_s / window_s, in [0, 1]."""
    leases: int
    """Leases that overlapped the window."""


class LeaseView(PlannerModel):
    """One lease of a slot (the lease history)."""

    id: int
    gpu_id: str
    job_id: str
    worker_id: str
    acquired_at: datetime
    deadline_at: datetime
    released_at: datetime | None = None
    release_reason: str | None = None


class EventView(PlannerModel):
    """One entry of the append-only event log."""

    id: int
    at: datetime
    kind: str
    """For example job.enqueued, job.claimed, job.done, job.retry, lease.expired, gpu.out_of_service."""
    job_id: str | None = None
    gpu_id: str | None = None
    worker_id: str | None = None
    agent: str | None = None
    lease_id: int | None = None
    detail: dict[str, Any] = Field(default_factory=dict)


def parse_progress(raw: str | None) -> JobProgress | None:
    if not raw:
        return None
    return JobProgress.model_validate(json.loads(raw))
