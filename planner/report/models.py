"""The report's data: typed pydantic models, gathered from the ledger and rendered to HTML.

Times inside series are seconds since the window's start (``*_s``); absolute times are UTC datetimes.
A value the ledger cannot supply (no submission, a CPU run without a SOL score) is None, never 0.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from solforge.sandbox.sol.catalogue import CatalogueSol

__all__ = [
    "AgentSummary",
    "Headline",
    "ProblemSummary",
    "QueueBucket",
    "ReportData",
    "ReportWindow",
    "ScalingPoint",
    "ScoreStep",
    "SlotUsage",
]


class ReportModel(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")


class ReportWindow(ReportModel):
    """The stretch of the ledger the report covers."""

    start: datetime | None = None
    """First activity counted (a job enqueued, a lease taken, a submission); None for an empty ledger."""
    end: datetime | None = None
    since: datetime | None = None
    """The lower bound asked for (``--since``); None: from the beginning."""
    until: datetime | None = None
    """The upper bound asked for; None: up to the database's clock when the report was made."""
    run_id: str | None = None
    """The swarm run the report is restricted to, when one was asked for."""

    @property
    def span_s(self) -> float:
        """Seconds from ``start`` to ``end`` (0 for an empty window)."""
        if self.start is None or self.end is None:
            return 0.0
        return max(0.0, (self.end - self.start).total_seconds())


class Headline(ReportModel):
    """The figures the public result was stated in, for this window."""

    problems_attempted: int = 0
    """Problems with a job or a submission in the window."""
    problems_submitted: int = 0
    """Problems with at least one accepted submission (every workload passed)."""
    problems_with_speedup: int = 0
    """Problems whose best submission passed at least one workload with a measured speedup."""
    problems_beating_baseline: int = 0
    """Problems whose best submission's speedup is above 1."""
    problems_above_2x: int = 0
    """Problems whose best submission's speedup is above 2."""
    geomean_speedup: float | None = None
    """Geometric mean of the best submissions' speedups over ``problems_with_speedup``."""
    median_sol_score: float | None = None
    """Median of the best submission score over ``problems_submitted``."""
    agents: int = 0
    """Agents with a job or a submission in the window."""
    jobs: int = 0
    submissions: int = 0
    gpu_hours: float = 0.0
    """Hours CUDA slots spent under lease (benchmark and submit jobs)."""
    cpu_slot_hours: float = 0.0
    """Hours CPU benchmark slots spent under lease (GPU-less hosts, tests)."""


class ProblemSummary(ReportModel):
    """One problem's best result and the effort spent on it."""

    problem: str
    best_agent: str | None = None
    best_score: float | None = None
    speedup: float | None = None
    """The best submission's geometric-mean speedup over the baseline (its passed workloads)."""
    latency_ms: float | None = None
    """Geometric mean over the best submission's passed workloads of the kernel's time."""
    baseline_ms: float | None = None
    """Same mean of the baseline's time (the faster of eager and torch.compile, or a named one)."""
    t_sol_ms: float | None = None
    """Same mean of the speed-of-light time."""
    passed: int | None = None
    workloads: int | None = None
    attempts: int = 0
    """Benchmark and submit jobs for the problem in the window."""
    compile_jobs: int = 0
    submissions: int = 0
    agents: int = 0
    """Distinct agents that queued a job or submitted for the problem."""


class AgentSummary(ReportModel):
    """What one agent did in the window."""

    agent: str
    jobs: int = 0
    jobs_by_kind: dict[str, int] = Field(default_factory=dict)
    failed_jobs: int = 0
    """Jobs whose infrastructure failed on every attempt (not the candidate's failures)."""
    submissions: int = 0
    problems: int = 0
    """Problems it submitted for."""
    firsts: int = 0
    """Problems where its accepted submission is the best (ties: higher speedup, then the earlier)."""
    best_score: float | None = None
    mean_best_score: float | None = None
    """Mean over its submitted problems of its best score there."""
    best_speedup: float | None = None
    gpu_hours: float = 0.0
    """Slot hours under lease for its jobs (CUDA and CPU slots alike)."""


class ScoreStep(ReportModel):
    """A problem's best score rising: one point per improvement."""

    problem: str
    points: list[tuple[float, float]] = Field(default_factory=list)
    """(seconds since the window's start, best score so far), one per new best."""


class SlotUsage(ReportModel):
    """How busy one slot was, in total and per time bucket."""

    gpu_id: str
    kind: str
    name: str | None = None
    busy_s: float = 0.0
    utilisation: float = 0.0
    """busy_s over the window's span."""
    leases: int = 0
    buckets: list[float] = Field(default_factory=list)
    """Busy fraction of each bucket of :attr:`ReportData.bucket_s`."""


class QueueBucket(ReportModel):
    """The queue in one time bucket."""

    start_s: float
    slot_depth: float
    """Mean number of benchmark and submit jobs waiting over the bucket."""
    compile_depth: float
    wait_p50_s: float | None = None
    """Enqueue-to-start wait of the slot jobs that started in the bucket."""
    wait_p95_s: float | None = None
    started: int = 0


class ScalingPoint(ReportModel):
    """One swarm run, as a point of the scaling section: how many evaluations its GPUs delivered."""

    run: str
    slots: int
    """Slots that held a lease for the run's jobs (GPUs, or CPU slots on a host without one)."""
    agents: int
    minutes: float
    evaluations: int
    evaluations_per_gpu_hour: float | None = None
    """Over the run's steady window (first lease to last release) and its slots."""
    lease_utilisation: float | None = None
    queue_wait_p95_s: float | None = None
    overlapping_leases: int = 0

    @property
    def evaluations_per_hour(self) -> float | None:
        """All slots together."""
        return None if self.evaluations_per_gpu_hour is None else self.evaluations_per_gpu_hour * self.slots


class ReportData(ReportModel):
    """Everything the HTML report shows."""

    title: str = "solforge report"
    generated_at: datetime
    ledger: str
    """The ledger's URL with any password hidden."""
    window: ReportWindow
    headline: Headline
    problems: list[ProblemSummary] = Field(default_factory=list)
    """By best score, best first; problems without a submission last."""
    agents: list[AgentSummary] = Field(default_factory=list)
    """By problems led, then mean best score."""
    speedups: list[float] = Field(default_factory=list)
    """The best submission's speedup of every problem that has one."""
    scores: list[float] = Field(default_factory=list)
    """The best score of every problem with a submission."""
    best_over_time: list[ScoreStep] = Field(default_factory=list)
    bucket_s: float = 0.0
    """Width of the time buckets of the utilisation and queue series."""
    slots: list[SlotUsage] = Field(default_factory=list)
    queue: list[QueueBucket] = Field(default_factory=list)
    wait_p50_s: float | None = None
    """Enqueue-to-start wait of every slot job that started in the window."""
    wait_p95_s: float | None = None
    wait_max_s: float | None = None
    notes: list[str] = Field(default_factory=list)
    """Caveats found while gathering (CPU-only timings, submissions without runs)."""
    scaling: list[ScalingPoint] | None = None
    """The ledger's finished swarm runs by slots (``solforge report --scaling``; None: left out)."""
    catalogue: CatalogueSol | None = None
    """The shipped baselines of one GPU model against the speed of light (not from the ledger; None: left out)."""
