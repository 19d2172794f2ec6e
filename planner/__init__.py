"""solforge.planner: the ledger, the job queue, GPU leases and the workers that run jobs.

Quick start::

    from solforge.planner import Ledger, Worker, SandboxRunner

    ledger = Ledger.open()                          # SQLite in ~/.local/share/solforge (or $SOLFORGE_HOME)
    ledger.ensure_agent("local")
    worker = Worker(ledger, SandboxRunner())        # in-process: every local GPU, or one CPU slot
    worker.start()
    job = ledger.enqueue("local", "benchmark", request)      # request: solforge.sandbox.api.EvalRequest
    job = ledger.wait_job(job.id, "local", timeout_s=45)     # JobView; .report once done
    worker.stop()

On many hosts, point every process at one PostgreSQL database: the server with
``Ledger.open("postgresql://...")`` and one ``solforge worker --db postgresql://... [--gpus 0,1]``
per GPU host (:func:`solforge.server.cli_worker.run_worker_cli`).

The packages
------------
Dependencies point one way: ``workers`` use the ``ledger``; ``swarm`` and ``report`` use both; the ledger
uses neither. ::

    ledger/         the shared record: the Ledger facade, its connector (SQLite or PostgreSQL), the tables,
                    alembic migrations and the named SQL, the queue (claims, leases, fairness, retries),
                    the typed views it returns and the *_async twins (its map: ledger/__init__.py)
    workers/        what runs jobs: the Worker and its job handling, the runner contract, the runners
                    (warm judges per slot, or any child process), GPU and CPU slots with their health
                    checks, and ``solforge eval`` handing its job to a running local worker
    swarm/          the swarm: policy, launchers, supervision, the live view
    report/         the self-contained HTML report
    errors.py       the ledger's exceptions (their root is solforge.problems.errors.SolforgeError)
    testing.py      test support: a fake evaluation process and a throwaway PostgreSQL

``solforge worker`` itself is :mod:`solforge.server.cli_worker`.

The rules
---------
Jobs
    ``compile`` jobs build on any worker's CPU and take no lease; ``benchmark`` and ``submit`` jobs
    run only while holding a lease on a slot (a CUDA GPU, or a CPU slot on a GPU-less host), one
    job per slot. A finished ``submit`` job becomes a submission on the leaderboard. A GPU slot works
    on several jobs at once (``WorkerConfig.lanes_per_gpu``: 2 to 8 by the host's CPUs per GPU), each in
    a warm judge of its own: the others build and load their solutions while one holds the lease, which
    covers the GPU work only.
Fairness (which queued job a free slot takes)
    1. the agent with the fewest **running** jobs of that class (slot jobs or compile jobs);
    2. then the agent with the fewest jobs of that class **started in the last** ``fair_window_s``
       (600 s by default), so an agent that just had a turn waits behind one that did not;
    3. then the job's **priority** (higher first: it orders an agent's own jobs);
    4. then **age** (oldest first), then id.
    One agent queueing 1,000 jobs therefore gets one slot at a time while others wait, not 1,000.
Retries
    A job whose candidate fails still finishes (``done``, with the failing statuses in its report)
    and is never retried. A job whose *infrastructure* fails (the worker died, its claim expired,
    the GPU fell off, the runner crashed or exceeded ``timeout_s``) is queued again after a
    back-off, up to ``max_attempts`` claims, then ``failed`` with the reason. A worker shutting
    down requeues its jobs without spending an attempt.
Leases and clocks
    A claim and its slot lease share a random token and a deadline. Deadlines are computed and
    compared **by the database, on its clock** (``statement_timestamp()`` on PostgreSQL, the
    host's clock on SQLite, which is one host); workers never compare their wall clock with
    them, and measure their own limits (job time limits, heartbeat intervals) on the monotonic
    clock. A worker clock jump therefore changes nothing. A forward jump of the database clock
    can expire claims early: they are requeued and the old holder, fenced out by its token,
    notices at its next heartbeat and kills its job, so the job is still recorded once. A
    backward jump delays the reclaim of a dead worker's jobs by the size of the jump.
Slots
    Before a lease, a slot that needs it (newly registered, or after a lease ended abnormally, or
    not checked for ``health_interval_s``) is health-checked (NVML for GPUs; CPU slots are always
    healthy). A sick slot is taken out of service with the reason; a worker restart re-checks it,
    and ``Ledger.set_gpu_service`` is the operator's switch.
Agents
    Agents read and cancel only their own jobs; leaderboards are public. Tokens are stored as
    SHA-256 hashes. Job ids are ``uuid4().hex``.
Events
    Every state change appends to the event log (``Ledger.events``) in the same transaction; the
    database refuses to update or delete events.
"""

from __future__ import annotations

from .errors import (
    AgentExists,
    AgentNotFound,
    AuthenticationFailed,
    InvalidJobRequest,
    JobNotFound,
    LedgerError,
    LedgerIntegrityError,
    LedgerUnavailable,
)
from .ledger import DEFAULT_MAX_ATTEMPTS, Ledger
from .ledger.models import (
    TERMINAL_STATUSES,
    AgentCredentials,
    AgentHistory,
    AgentStanding,
    AgentView,
    EventView,
    GpuUtilisation,
    GpuView,
    JobKind,
    JobProgress,
    JobStatus,
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
)
from .workers.contract import Heartbeat, JobResult, JobRunner, JobSpec
from .workers.gpus import HealthCheck, HealthReport, Slot, default_health_check, discover_slots
from .workers.runners import SandboxRunner, SubprocessRunner
from .workers.worker import Worker, WorkerConfig

__all__ = [
    "DEFAULT_MAX_ATTEMPTS",
    "TERMINAL_STATUSES",
    "AgentCredentials",
    "AgentExists",
    "AgentHistory",
    "AgentNotFound",
    "AgentStanding",
    "AgentView",
    "AuthenticationFailed",
    "EventView",
    "GpuUtilisation",
    "GpuView",
    "HealthCheck",
    "HealthReport",
    "Heartbeat",
    "InvalidJobRequest",
    "JobKind",
    "JobNotFound",
    "JobProgress",
    "JobResult",
    "JobRunner",
    "JobSpec",
    "JobStatus",
    "JobSummary",
    "JobView",
    "LeaderboardEntry",
    "LeaseView",
    "Ledger",
    "LedgerError",
    "LedgerIntegrityError",
    "LedgerUnavailable",
    "ProblemStanding",
    "QueueStats",
    "RunView",
    "SandboxRunner",
    "Slot",
    "SlotKind",
    "SubmissionView",
    "SubprocessRunner",
    "Worker",
    "WorkerConfig",
    "WorkerView",
    "default_health_check",
    "discover_slots",
]
