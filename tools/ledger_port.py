"""The questions the tools ask the ledger (``solforge.planner.Ledger``), in one place.

Every function takes the caller's :class:`ToolContext`, so the caller's agent name is always the one
the ledger checks jobs against: no tool can name another agent. Ledger calls run in worker threads
(the ledger's ``*_async`` twins), never on the event loop.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

import anyio

from solforge.problems import CATALOGUE_DIR
from solforge.sandbox.sol.score import geomean_or_none

from .base import ToolContext, ToolResult
from .errors import JobNotFound, ServiceUnavailable

if TYPE_CHECKING:
    from solforge.planner import Ledger
    from solforge.planner.ledger.models import JobProgress, JobView, WorkerView
    from solforge.problems import Problem, Solution
    from solforge.sandbox.api import BuildReport, EvalReport, ProfileRequest



HISTORY_LIMIT = 1000
"""Jobs and submissions of the caller read to derive per-problem status."""
OPEN_JOBS_LIMIT = 200
"""The caller's latest jobs searched for an identical compile job still queued or running."""
LIVE_WORKER_S = 90.0
"""A worker whose last heartbeat is older than this (workers beat every few seconds) counts as dead."""


class SubmissionInfo(ToolResult):
    """What a submission earned."""

    accepted: bool
    """False when a workload failed or a hack was detected; a rejected submission is still logged."""
    score: float | None = None
    """Mean SOL score over every workload (failed ones count 0)."""
    speedup: float | None = None
    passed: int | None = None
    total: int | None = None
    rank: int | None = None
    """Your position on the problem's leaderboard (1 = best)."""
    entries: int | None = None
    """Agents on the problem's leaderboard."""
    best_score: float | None = None
    """The problem's best score (anyone's), after this submission."""
    reason: str | None = None
    """Why it was rejected."""


@dataclass(frozen=True)
class ProblemScore:
    """What the ledger knows about one problem, for the caller."""

    best_score: float | None
    your_best: float | None
    status: Literal["new", "attempted", "submitted"]
    best_on_cpu: bool = False
    """The best submission was timed on a CPU (no SOL score; it counts 0)."""


@dataclass
class JobSnapshot:
    """A job as the tools see it."""

    job_id: str
    kind: str
    state: str
    problem: str
    solution: str
    queue_position: int | None = None
    progress: str | None = None
    elapsed_s: float | None = None
    error: str | None = None
    report: EvalReport | None = None
    build: BuildReport | None = None
    submission: SubmissionInfo | None = None

    @property
    def terminal(self) -> bool:
        return self.state in ("done", "failed", "cancelled")


async def ledger_for(ctx: ToolContext) -> Ledger:
    return await ctx.services.ledger()  # type: ignore[no-any-return]


def _problem_ref(problem: Problem) -> str:
    """What a job request names: the catalogue name (every worker host has it), else the folder path."""
    folder = problem.folder
    if folder is None or folder.resolve().parent == CATALOGUE_DIR.resolve():
        return problem.name
    return str(folder.resolve())


def _elapsed(view: JobView) -> float | None:
    start = view.started_at or view.created_at
    if start is None:
        return None
    end = view.finished_at or datetime.now(UTC)
    if start.tzinfo is None:
        start = start.replace(tzinfo=UTC)
    if end.tzinfo is None:
        end = end.replace(tzinfo=UTC)
    return max(0.0, (end - start).total_seconds())


def progress_text(progress: JobProgress | None) -> str | None:
    """What a job's progress reads as. The judge's messages state their own count ("workload 3/16
    (num_tokens=4)"); a bare count stands in only when a runner sent no message."""
    if progress is None:
        return None
    if progress.message:
        return progress.message
    return f"{progress.done}/{progress.total}" if progress.done is not None and progress.total else None


def snapshot(view: JobView) -> JobSnapshot:
    """A JobView of the ledger as the tools see it."""
    return JobSnapshot(
        job_id=view.id,
        kind=view.kind,
        state=view.status,
        problem=view.problem,
        solution=view.solution_name,
        queue_position=view.position,
        progress=progress_text(view.progress),
        elapsed_s=_elapsed(view),
        error=view.error,
        report=view.report,
        build=view.build,
    )


async def _ensure_agent(ledger: Ledger, agent: str) -> None:
    import anyio

    await anyio.to_thread.run_sync(ledger.ensure_agent, agent)


async def enqueue(
    ctx: ToolContext,
    kind: Literal["compile", "benchmark", "submit", "profile"],
    problem: Problem,
    solution: Solution,
    *,
    workloads: list[str] | None = None,
    rounds: int | None = None,
    target_arch: str | None = None,
    profile: ProfileRequest | None = None,
) -> str:
    """Queue a job for the caller and return its id.

    The caller's identity was established by the transport (token or --agent), so an agent the
    ledger does not know yet is created here.
    """
    from solforge.planner.errors import AgentNotFound
    from solforge.sandbox.api import EvalOptions, EvalRequest

    ledger = await ledger_for(ctx)
    options: dict[str, Any] = {"workloads": workloads, "target_arch": target_arch or ctx.settings.target_arch}
    if rounds is not None:
        options["rounds"] = rounds
    if ctx.settings.cache_dir is not None:
        options["cache_dir"] = ctx.settings.cache_dir
    if kind == "compile":
        options["compile_timeout_s"] = ctx.settings.compile_timeout_s
    if profile is not None:
        options.update(profile=profile, time_baseline=False)
    request = EvalRequest(problem=_problem_ref(problem), solution=solution, options=EvalOptions(**options))
    slot_kind = "cuda" if kind == "profile" else None  # a profiler needs a GPU, on a cluster with CPU slots too
    try:
        view = await ledger.enqueue_async(ctx.agent, kind, request, slot_kind=slot_kind)
    except AgentNotFound:
        await _ensure_agent(ledger, ctx.agent)
        view = await ledger.enqueue_async(ctx.agent, kind, request, slot_kind=slot_kind)
    return str(view.id)


async def open_compile_job(ctx: ToolContext, problem: Problem, solution: Solution) -> str | None:
    """The id of the caller's compile job for the same problem and solution content, while queued or running.

    The ledger's job list carries the solution's content hash (the same hash the build cache uses),
    so a repeated compile_kernel joins the job already there, even from another server process.
    """
    from solforge.planner.errors import AgentNotFound

    ledger = await ledger_for(ctx)
    try:
        history = await ledger.agent_history_async(ctx.agent, limit=OPEN_JOBS_LIMIT)
    except AgentNotFound:
        return None
    digest = solution.content_hash()
    for job in history.jobs:  # newest first
        if (
            job.kind == "compile"
            and job.status in ("queued", "running")
            and job.solution_hash == digest
            and job.problem == problem.name
        ):
            return str(job.id)
    return None


async def live_workers(ctx: ToolContext) -> int:
    """Workers registered with the ledger that have not stopped and beat within ``LIVE_WORKER_S``.

    Zero means nothing takes jobs from the queue (for example ``solforge serve --no-workers`` with no
    ``solforge worker`` running). The ledger does not record a worker's compile slots apart from its
    start event, so a live worker started with ``compile_slots=0`` still counts here.
    """
    return len(await _live_workers(ctx))


async def live_gpu_slots(ctx: ToolContext) -> int:
    """CUDA slots of the live workers (see :func:`live_workers`): what a profile can run on."""
    return sum(1 for w in await _live_workers(ctx) for slot in w.slots if "/cuda:" in slot)


async def _live_workers(ctx: ToolContext) -> list[WorkerView]:
    import anyio

    ledger = await ledger_for(ctx)
    workers = await anyio.to_thread.run_sync(ledger.workers)
    now = datetime.now(UTC)
    live = []
    for w in workers:
        beat = w.heartbeat_at if w.heartbeat_at.tzinfo is not None else w.heartbeat_at.replace(tzinfo=UTC)
        if w.stopped_at is None and (now - beat).total_seconds() <= LIVE_WORKER_S:
            live.append(w)
    return live


@contextlib.contextmanager
def _owned(ctx: ToolContext, job_id: str) -> Iterator[None]:
    """Turn the ledger's JobNotFound into the agent-facing one (same for unknown ids and others' jobs)."""
    try:
        yield
    except JobNotFound as exc:
        raise JobNotFound(
            f"no job {job_id!r} belongs to you (agent {ctx.agent!r}); use a job_id that run_benchmark, "
            "submit_solution or compile_kernel returned to you"
        ) from exc


async def job_for(ctx: ToolContext, job_id: str) -> JobSnapshot:
    """The caller's job ``job_id``.

    Raises
    ------
    JobNotFound
        When no job with that id belongs to the caller (another agent's job looks the same).
    """
    ledger = await ledger_for(ctx)
    with _owned(ctx, job_id):
        return snapshot(await ledger.get_job_async(job_id, ctx.agent))


async def wait_for(ctx: ToolContext, job_id: str, timeout_s: float) -> JobSnapshot:
    """Wait up to ``timeout_s`` for the caller's job to finish, then return it either way."""
    ledger = await ledger_for(ctx)
    with _owned(ctx, job_id):
        return snapshot(await ledger.wait_job_async(job_id, ctx.agent, timeout_s, poll_s=0.25))


async def cancel_job_for(ctx: ToolContext, job_id: str) -> JobSnapshot:
    """Cancel the caller's job (a running one is killed by its worker within seconds) and return its state."""
    ledger = await ledger_for(ctx)
    with _owned(ctx, job_id):
        view = await ledger.cancel_job_async(job_id, ctx.agent)
        if not view.finished:
            # A running job is stopped at its worker's next heartbeat; give it a moment to land.
            view = await ledger.wait_job_async(job_id, ctx.agent, 5.0, poll_s=0.25)
    return snapshot(view)


def submission_verdict(report: EvalReport | None) -> tuple[bool, str | None]:
    if report is None or not report.traces:
        return False, "the evaluation produced no results"
    statuses = [t.evaluation.status.value if t.evaluation else "UNKNOWN" for t in report.traces]
    hacks = [t.workload.uuid for t, s in zip(report.traces, statuses, strict=True) if s == "REWARD_HACK"]
    if hacks:
        return False, (
            f"REWARD_HACK detected on {len(hacks)} workloads ({', '.join(hacks[:3])}): the submission is rejected "
            "and logged against your agent; read_docs(topic='protocol') section 3 lists what counts"
        )
    failed = [(t.workload.uuid, s) for t, s in zip(report.traces, statuses, strict=True) if s != "PASSED"]
    if failed:
        shown = ", ".join(f"{u} {s}" for u, s in failed[:3])
        return False, f"{len(failed)} of {len(statuses)} workloads failed ({shown}); failed workloads score 0"
    return True, None


async def scores_by_problem(ctx: ToolContext) -> tuple[dict[str, ProblemScore], bool]:
    """Best scores and the caller's status per problem, and whether a ledger answered."""
    from solforge.planner.errors import AgentNotFound

    if not ctx.services.has_ledger:
        return {}, False
    try:
        ledger = await ledger_for(ctx)
    except ServiceUnavailable:
        return {}, False  # listing still works while the ledger is down
    best_rows = {s.problem: s for s in await ledger.best_per_problem_async()}
    best = {name: s.score for name, s in best_rows.items()}
    mine: dict[str, float] = {}
    attempted: set[str] = set()
    try:
        history = await ledger.agent_history_async(ctx.agent, limit=HISTORY_LIMIT)
    except AgentNotFound:
        history = None
    if history is not None:
        attempted = {j.problem for j in history.jobs if j.kind in ("benchmark", "submit")}
        for s in history.submissions:
            if s.passed == s.total and s.total > 0:
                mine[s.problem] = max(mine.get(s.problem, 0.0), s.score)
    out: dict[str, ProblemScore] = {}
    for name in set(best) | attempted | set(mine):
        status: Literal["new", "attempted", "submitted"] = (
            "submitted" if name in mine else "attempted" if name in attempted else "new"
        )
        on_cpu = name in best_rows and (best_rows[name].hardware or "").lower() == "cpu"
        out[name] = ProblemScore(best_score=best.get(name), your_best=mine.get(name), status=status,
                                 best_on_cpu=on_cpu)
    return out, True


async def baselines_for(
    ctx: ToolContext, problem: str, device_ok: Callable[[str], bool] | None = None
) -> tuple[dict[str, float], str | None, list[str]]:
    """Baseline times (ms) per workload from the caller's latest finished run of ``problem``.

    With ``device_ok``, only a run on a device it accepts counts (times from a CPU or another GPU
    are not comparable with a GPU's T_SOL). Returns the times, their device, and the devices of
    newer runs that were passed over.
    """
    from solforge.planner.errors import AgentNotFound

    passed_over: list[str] = []
    if not ctx.services.has_ledger:
        return {}, None, passed_over
    try:
        ledger = await ledger_for(ctx)
        history = await ledger.agent_history_async(ctx.agent, limit=HISTORY_LIMIT)
    except (ServiceUnavailable, AgentNotFound):
        return {}, None, passed_over
    for job in history.jobs:  # newest first
        if job.problem != problem or job.kind == "compile" or job.status != "done":
            continue
        try:
            view = await ledger.get_job_async(job.id, ctx.agent)
        except JobNotFound:
            continue
        if view.report is None:
            continue
        times = {
            t.workload.uuid: float(t.evaluation.performance.baseline_latency_ms)
            for t in view.report.traces
            if t.evaluation and t.evaluation.performance and t.evaluation.performance.baseline_latency_ms
        }
        if not times:
            continue
        if device_ok is None or device_ok(view.report.device):
            return times, view.report.device, passed_over
        if view.report.device not in passed_over:
            passed_over.append(view.report.device)
    return {}, None, passed_over


def _iso(value: datetime | None) -> str | None:
    return value.isoformat(timespec="seconds") if value is not None else None


async def leaderboard_rows(ctx: ToolContext, problem: str, limit: int) -> tuple[list[dict[str, Any]], int]:
    """Ranked rows for one problem (each agent's best submission), and how many there are."""
    ledger = await ledger_for(ctx)
    board = await ledger.leaderboard_async(problem, limit=HISTORY_LIMIT)
    rows = [
        {
            "rank": e.rank,
            "agent": e.agent,
            "score": round(e.score, 4),
            "speedup": round(e.speedup, 3) if e.speedup else None,
            "solution": e.solution_name,
            "hardware": e.hardware,
            "submitted_at": _iso(e.created_at),
        }
        for e in board[:limit]
    ]
    return rows, len(board)


async def overall_rows(ctx: ToolContext, limit: int) -> tuple[list[dict[str, Any]], int]:
    """Agents ranked by the sum of their best score per problem, and how many agents there are."""
    import anyio

    ledger = await ledger_for(ctx)

    def collect() -> dict[str, tuple[float, int, list[float]]]:
        totals: dict[str, tuple[float, int, list[float]]] = {}
        for best in ledger.best_per_problem():
            for entry in ledger.leaderboard(best.problem, limit=HISTORY_LIMIT):
                score, count, speedups = totals.get(entry.agent, (0.0, 0, []))
                if entry.speedup:
                    speedups.append(entry.speedup)
                totals[entry.agent] = (score + entry.score, count + 1, speedups)
        return totals

    totals = await anyio.to_thread.run_sync(collect)
    ordered = sorted(totals.items(), key=lambda kv: (-kv[1][0], kv[0]))
    rows = []
    for i, (agent, (score, count, speedups)) in enumerate(ordered[:limit], 1):
        geo = geomean_or_none(speedups)
        rows.append(
            {
                "rank": i,
                "agent": agent,
                "score": round(score, 4),
                "problems": count,
                "speedup": round(geo, 3) if geo else None,
            }
        )
    return rows, len(ordered)


async def benchmark_verdict(ctx: ToolContext, problem: Problem, solution: Solution) -> str | None:
    """A warning when the caller submits a solution whose latest benchmark failed, or that it never ran."""
    ledger = await ledger_for(ctx)
    digest = solution.content_hash()
    try:
        history = await ledger.agent_history_async(ctx.agent, limit=200)
    except Exception:  # an agent the ledger does not know yet has no history
        return "this solution was never benchmarked: run_benchmark shows its failures before a submission counts"
    runs = [j for j in history.jobs if j.kind == "benchmark" and j.solution_hash == digest and j.problem == problem.name]
    done = [j for j in runs if j.status == "done"]
    if not done:
        return "this solution was never benchmarked: run_benchmark shows its failures before a submission counts"
    latest = done[0]  # newest first
    statuses = [r.status for r in await anyio.to_thread.run_sync(ledger.job_runs, latest.id, ctx.agent)]
    failed = [s for s in statuses if s != "PASSED"]
    if failed:
        kinds = ", ".join(sorted(set(failed)))
        return (f"its latest run_benchmark (job {latest.id}) failed on {len(failed)} of {len(statuses)} workloads "
                f"({kinds}): a submission with a failing workload is rejected")
    return None
