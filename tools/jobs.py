"""run_benchmark, wait_job, cancel_job and submit_solution: queued GPU work with a bounded wait.

A benchmark can take minutes while MCP clients give a call about a minute, so these tools queue a job
in the ledger, wait up to ``wait_s`` (at most 50 s) while sending progress notifications, and answer
either the result or a ``job_id`` to pass to wait_job. A job belongs to the agent that queued it: no
other agent can wait on it, read it or cancel it.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import Field

from solforge.sandbox.sol.score import counted_speedup, geomean_or_none

from .base import (
    DEFAULT_MAX_CHARS,
    DEFAULT_WAIT_S,
    MAX_MAX_CHARS,
    MAX_WAIT_S,
    ToolContext,
    ToolModel,
    ToolResult,
    clip,
    error_blocks,
    key_error_line,
)
from .errors import ToolInputError
from .ledger_port import (
    HISTORY_LIMIT,
    JobSnapshot,
    SubmissionInfo,
    benchmark_verdict,
    cancel_job_for,
    enqueue,
    job_for,
    ledger_for,
    submission_verdict,
    wait_for,
)
from .solutions import SolutionInput, solution_and_problem

if TYPE_CHECKING:
    from solforge.sandbox.api import EvalReport

JOB_ID_PATTERN = r"^[0-9a-f]{32}$"
UNSTABLE_IQR = 0.10
"""A timing whose interquartile range exceeds this fraction of its median is flagged as unstable."""
REPEAT_LOG_CHARS = 200
"""What a row whose error repeats an earlier row's keeps: a pointer and the error's last line."""
POLL_S = 1.0
"""How often a waiting tool looks at its job (and may send a progress notification)."""


class RunBenchmarkInput(SolutionInput):
    """The solution to benchmark, and how."""

    workloads: list[str] | None = Field(default=None, max_length=256)
    """Workload uuids to run (from get_problem); leave it out to run every workload of the problem."""
    rounds: int = Field(default=3, ge=1, le=10)
    """Correctness rounds per workload, each with fresh random inputs."""
    wait_s: float = Field(default=DEFAULT_WAIT_S, ge=0.0, le=MAX_WAIT_S)
    """Seconds to wait for the result; then a job_id for wait_job."""
    max_chars: int = Field(default=DEFAULT_MAX_CHARS, ge=1000, le=MAX_MAX_CHARS)
    """Largest answer in characters (rows and error logs are cut to fit)."""


class SubmitSolutionInput(SolutionInput):
    """The solution to submit as final."""

    wait_s: float = Field(default=DEFAULT_WAIT_S, ge=0.0, le=MAX_WAIT_S)
    """Seconds to wait for the verdict; then a job_id for wait_job."""
    max_chars: int = Field(default=DEFAULT_MAX_CHARS, ge=1000, le=MAX_MAX_CHARS)
    """Largest answer in characters (rows and error logs are cut to fit)."""


class WaitJobInput(ToolModel):
    """Which job, and how long to wait."""

    job_id: str = Field(pattern=JOB_ID_PATTERN)
    """The job_id run_benchmark or submit_solution returned to you (32 hex characters)."""
    wait_s: float = Field(default=DEFAULT_WAIT_S, ge=0.0, le=MAX_WAIT_S)
    """Seconds to wait for the job; 0 looks without waiting."""
    max_chars: int = Field(default=DEFAULT_MAX_CHARS, ge=1000, le=MAX_MAX_CHARS)
    """Largest answer in characters (rows and error logs are cut to fit)."""


class CancelJobInput(ToolModel):
    """Which job to cancel."""

    job_id: str = Field(pattern=JOB_ID_PATTERN)
    """The job_id of one of your queued or running jobs."""


class WorkloadResult(ToolResult):
    """One workload's outcome."""

    uuid: str
    axes: dict[str, int]
    status: str
    """PASSED, INCORRECT_NUMERICAL, INCORRECT_SHAPE, INCORRECT_DTYPE, RUNTIME_ERROR, COMPILE_ERROR, TIMEOUT, REWARD_HACK."""
    latency_ms: float | None = None
    latency_iqr_ms: float | None = None
    """Interquartile range of the timed calls; above 10% of latency_ms the timing is unstable (flagged)."""
    baseline_ms: float | None = None
    """T_b: the faster of eager PyTorch and torch.compile on this device."""
    sol_ms: float | None = None
    """T_SOL: the speed-of-light time on this GPU."""
    bound: str | None = None
    """memory or compute: which limit sets T_SOL."""
    score: float | None = None
    """SOL score 1/(1+(T-T_SOL)/(T_b-T_SOL)): 0.5 at the baseline, 1 at speed of light."""
    speedup: float | None = None
    """baseline_ms / latency_ms."""
    max_abs_error: float | None = None
    """Largest absolute error against the reference (for a wrong answer, from the failing round)."""
    matched_ratio: float | None = None
    """Fraction of output elements within tolerance (for a wrong answer, from the failing round)."""
    log: str | None = None
    """Why it failed: the end of the log (the exception comes last); a repeat names the row that shows it."""

    @property
    def timing_unstable(self) -> bool:
        if not self.latency_ms or self.latency_iqr_ms is None:
            return False
        return self.latency_iqr_ms > UNSTABLE_IQR * self.latency_ms


async def submission_for_job(ctx: ToolContext, snap: JobSnapshot) -> SubmissionInfo | None:
    """What a finished submit job earned: its score and the caller's place on the problem's leaderboard."""
    if snap.state != "done":
        return None
    ledger = await ledger_for(ctx)
    history = await ledger.agent_history_async(ctx.agent, limit=HISTORY_LIMIT)
    mine = next((s for s in history.submissions if s.job_id == snap.job_id), None)
    accepted, reason = submission_verdict(snap.report)
    board = await ledger.leaderboard_async(snap.problem, limit=HISTORY_LIMIT)
    rank = next((e.rank for e in board if e.agent == ctx.agent), None)
    return SubmissionInfo(
        accepted=accepted,
        score=round(mine.score, 4) if mine else None,
        speedup=round(mine.speedup, 3) if mine and mine.speedup else None,
        passed=mine.passed if mine else None,
        total=mine.total if mine else None,
        rank=rank,
        entries=len(board),
        best_score=round(board[0].score, 4) if board else None,
        reason=reason,
    )


class JobResult(ToolResult):
    """A job's state, and its result once it is done."""

    job_id: str
    kind: Literal["benchmark", "submit", "compile", "profile"]
    state: Literal["queued", "running", "done", "failed", "cancelled"]
    problem: str
    solution: str
    queue_position: int | None = None
    """Jobs ahead of this one (queued state)."""
    progress: str | None = None
    elapsed_s: float | None = None
    device: str | None = None
    """The GPU it ran on, or 'cpu' (CPU timings carry no SOL score)."""
    timer: str | None = None
    note: str | None = None
    ran: bool | None = None
    """False when the solution was only built, not run (a GPU-only language on a server without a GPU)."""
    compile_ok: bool | None = None
    compile_errors: list[str] = Field(default_factory=list)
    passed: int | None = None
    total: int | None = None
    mean_score: float | None = None
    """Mean SOL score over the workloads run (failed ones count 0)."""
    geomean_speedup: float | None = None
    """Geometric mean of the speedups over the passed workloads."""
    workloads: list[WorkloadResult] = Field(default_factory=list)
    workloads_omitted: int = 0
    """Rows left out to fit max_chars (the worst are kept)."""
    submission: SubmissionInfo | None = None
    profile: str | None = None
    """profile_kernel: each kernel of one call (time, DRAM and SM use, occupancy, stalls, what bounds it),
    or the requested page of one kernel's raw sections."""
    error: str | None = None
    """Why the job failed (an infrastructure fault, not your code) or was cancelled."""
    warning: str | None = None
    """submit_solution: the solution's latest benchmark failed, or it never ran one."""
    next_step: str

    def render(self) -> str:
        head = f"job {self.job_id} ({self.kind} {self.solution} on {self.problem}): {self.state}"
        if self.elapsed_s is not None:
            head += f" after {self.elapsed_s:.0f} s"
        out = [head]
        if self.warning:
            out.append(f"WARNING: {self.warning}")
        if self.state in ("queued", "running"):
            if self.queue_position is not None and self.state == "queued":
                out.append(f"{_plural(self.queue_position, 'job')} ahead in the queue")
            if self.progress:
                out.append(f"progress: {self.progress}")
        if self.device:
            out.append(f"device: {self.device}" + (f", timer {self.timer}" if self.timer else ""))
        if self.note:
            out.append(f"note: {self.note}")
        if self.error:
            out.append(f"error: {self.error}")
        if self.compile_ok is False:
            out.append("build failed:")
            out += [f"  {e}" for e in self.compile_errors]
        if self.state == "done" and self.kind != "compile" and self.total == 0:
            out.append(
                "nothing ran: no workload was evaluated, so there are no correctness or timing results"
            )
        if self.total:
            summary = f"passed {self.passed}/{self.total}"
            if self.mean_score is not None:
                summary += f", mean SOL score {self.mean_score:.3f}"
            if self.geomean_speedup is not None:
                summary += f", geomean speedup {self.geomean_speedup:.2f}x"
            out.append(summary)
        if self.workloads:
            out.append(
                "workload | axes | status | latency ms | baseline ms | T_SOL ms (bound) | score | speedup"
            )
            for w in self.workloads:
                axes = ",".join(f"{k}={v}" for k, v in w.axes.items())
                bound = f" ({w.bound})" if w.bound else ""
                latency = _num(w.latency_ms)
                if w.timing_unstable and w.latency_ms and w.latency_iqr_ms is not None:
                    latency += f" (IQR {100 * w.latency_iqr_ms / w.latency_ms:.0f}%!)"
                out.append(
                    f"{w.uuid} | {axes} | {w.status} | {latency} | {_num(w.baseline_ms)} | "
                    f"{_num(w.sol_ms)}{bound} | {_num(w.score, 3)} | {_num(w.speedup, 2)}"
                )
                if w.log:
                    out += [f"    {line}" for line in w.log.splitlines()]
            if any(w.timing_unstable for w in self.workloads):
                out.append(
                    f"(IQR n%!: that row's timings spread by more than {UNSTABLE_IQR:.0%} of the median; "
                    "treat its latency, score and speedup as rough and run again before comparing)"
                )
            if self.workloads_omitted:
                out.append(
                    f"({_plural(self.workloads_omitted, 'more workload')}; "
                    "call wait_job with a larger max_chars)"
                )
        if self.profile:
            out.append(self.profile)
        if self.submission is not None:
            s = self.submission
            if s.accepted and self.device == "cpu":
                # A CPU run has no speed-of-light score: its 0 only ranks it below every GPU submission.
                out.append(
                    f"submission accepted: correct on {s.passed} of {s.total} workloads; timed on the CPU, so no "
                    f"SOL score (it counts 0, below any GPU submission); rank {s.rank} of {s.entries}"
                )
            elif s.accepted:
                out.append(
                    f"submission accepted: score {_num(s.score, 3)}, rank {s.rank} of {s.entries}"
                    f" (problem best {_num(s.best_score, 3)})"
                )
            else:
                out.append(f"submission rejected: {s.reason}")
        out.append(f"Next: {self.next_step}")
        return "\n".join(out)


def _num(value: float | None, digits: int = 4) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}g}" if digits != 3 and digits != 2 else f"{value:.{digits}f}"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


_SANDBOX_DIR = str(Path(__file__).resolve().parents[1] / "sandbox") + "/"
"""solforge's sandbox sources (a sibling of tools/ in both the editable and the installed layout)."""
_FRAME_RE = re.compile(r'^\s*File "([^"]*)", line \d+')
_BUILD_DIR_RE = re.compile(r'[^\s"\']*/builds/[0-9a-f]{16,}/src/')


def _is_harness_frame(path: str) -> bool:
    return path.startswith(_SANDBOX_DIR) or path.startswith("<frozen ")


def _clean_log(log: str) -> str:
    """The log with line breaks kept, the harness's own traceback frames folded, build-cache paths cut.

    What the agent needs is its solution's frames and the exception line; the frames of the sandbox
    that called the solution only push those out of the budget.
    """
    lines = _BUILD_DIR_RE.sub("", log.strip()).splitlines()
    out: list[str] = []
    hidden = 0
    i = 0
    while i < len(lines):
        match = _FRAME_RE.match(lines[i])
        if match and _is_harness_frame(match.group(1)):
            indent = len(lines[i]) - len(lines[i].lstrip())
            i += 1
            # The frame's source line and caret markers are indented deeper than its File line.
            while i < len(lines) and len(lines[i]) - len(lines[i].lstrip()) > indent:
                i += 1
            hidden += 1
            continue
        if hidden:
            out.append(f"  [{_plural(hidden, 'solforge harness frame')} left out]")
            hidden = 0
        out.append(lines[i].rstrip())
        i += 1
    return "\n".join(out)


def _tail(text: str, limit: int) -> str:
    """The last ``limit`` characters of ``text`` (marker included), cut at a line start where one is near."""
    if len(text) <= limit:
        return text
    marker = "[... {} earlier characters cut; ask with a larger max_chars to see them]\n"
    keep = max(0, limit - len(marker) - 8)
    start = len(text) - keep
    newline = text.find("\n", start)
    if newline != -1 and newline - start < keep // 4:
        start = newline + 1
    return marker.format(start) + text[start:]




def workload_results(report: EvalReport) -> list[WorkloadResult]:
    """One row per trace of an evaluation report; failed rows carry their whole (cleaned) log."""
    rows: list[WorkloadResult] = []
    for trace in report.traces:
        ev = trace.evaluation
        if ev is None:
            continue
        perf = ev.performance
        corr = ev.correctness
        failed = ev.status.value != "PASSED"
        log_text = _clean_log(ev.log) if ev.log and failed else None
        rows.append(
            WorkloadResult(
                uuid=trace.workload.uuid,
                axes=trace.workload.axes,
                status=ev.status.value,
                latency_ms=perf.latency_ms if perf else None,
                latency_iqr_ms=perf.latency_iqr_ms if perf else None,
                baseline_ms=perf.baseline_latency_ms if perf else None,
                sol_ms=perf.sol_latency_ms if perf else None,
                bound=perf.sol_bound if perf else None,
                score=perf.sol_score if perf else None,
                speedup=perf.speedup if perf else None,
                max_abs_error=corr.max_absolute_error if corr else None,
                matched_ratio=corr.matched_ratio if corr else None,
                log=log_text,
            )
        )
    return rows


def _budget_logs(rows: list[WorkloadResult], max_chars: int) -> None:
    """Bound the logs of rows already in display order.

    The first failing row keeps up to a quarter of the budget (the end of its log); a row failing
    the same way as an earlier one names that row and keeps the error's last line; other distinct
    errors keep a shorter tail.
    """
    first_limit = max(600, max_chars // 4)
    other_limit = max(300, max_chars // 16)
    seen: dict[str, str] = {}
    for row in rows:
        if not row.log:
            continue
        full = row.log
        if full in seen:
            row.log = clip(f"same error as {seen[full]}: {key_error_line(full)}", REPEAT_LOG_CHARS)[0]
            continue
        row.log = _tail(full, first_limit if not seen else other_limit)
        seen[full] = row.uuid


def result_from_snapshot(snap: JobSnapshot, max_chars: int) -> JobResult:
    """The agent's view of a job, bounded by ``max_chars``."""
    result = JobResult(
        job_id=snap.job_id,
        kind=snap.kind,  # type: ignore[arg-type]
        state=snap.state,  # type: ignore[arg-type]
        problem=snap.problem,
        solution=snap.solution,
        queue_position=snap.queue_position,
        progress=snap.progress,
        elapsed_s=round(snap.elapsed_s, 1) if snap.elapsed_s is not None else None,
        error=snap.error,
        next_step="",
    )
    if snap.build is not None and snap.report is None:
        result.compile_ok = snap.build.ok
        if not snap.build.ok:
            result.compile_errors = error_blocks(snap.build.log)
    report = snap.report
    if report is not None:
        result.device = report.device
        result.timer = report.timer
        result.note = report.note
        result.ran = report.ran
        if report.build is not None and not report.build.ok:
            result.compile_ok = False
            result.compile_errors = error_blocks(report.build.log)
        rows = workload_results(report)
        result.total = len(rows)
        result.passed = sum(1 for r in rows if r.status == "PASSED")
        scores = [r.score if (r.status == "PASSED" and r.score is not None) else 0.0 for r in rows]
        if rows and any(r.score is not None for r in rows):
            result.mean_score = round(sum(scores) / len(scores), 4)
        result.geomean_speedup = geomean_or_none(counted_speedup(r.speedup, r.baseline_ms, r.sol_ms)
                                                 for r in rows if r.status == "PASSED")
        # Failed and slowest-relative-to-SOL workloads first: they are what the agent must look at.
        rows.sort(key=lambda r: (r.status == "PASSED", r.score if r.score is not None else -1.0))
        if report.build is not None and not report.build.ok:
            # One build failed for every workload: compile_errors says it once, rows only name their status.
            for row in rows:
                row.log = None
        else:
            _budget_logs(rows, max_chars)
        result.workloads = rows
        if report.profile is not None:
            result.profile = report.profile.text
            if report.profile.pages:
                result.profile += f"\n(page {report.profile.page} of {report.profile.pages})"
            if report.profile.note and report.profile.note not in result.profile:
                result.note = report.profile.note
        while len(result.render()) > max_chars - 200 and result.workloads:
            result.workloads.pop()
            result.workloads_omitted += 1
    result.submission = snap.submission
    result.next_step = _next_step(result)
    return result


def _next_step(r: JobResult) -> str:
    if r.state in ("queued", "running"):
        return f"call wait_job(job_id={r.job_id!r}) to keep waiting, or cancel_job to stop it."
    if r.state == "cancelled":
        return "queue a new run_benchmark when you have the next version."
    if r.state == "failed":
        again = {"compile": "compile_kernel", "profile": "profile_kernel"}.get(r.kind, "run_benchmark")
        return f"the harness failed, not necessarily your code: retry {again} once; if it repeats, report it."
    if r.compile_ok is False:
        return "fix the build (compile_kernel shows the full log) and run again."
    if r.kind == "compile":
        return "the build is good: run_benchmark with the same solution to check correctness and time it."
    if r.kind == "profile" and r.profile and r.passed == r.total:
        return ("change what the bound line names, then run_benchmark to time it; profile_kernel(kernel=N) pages "
                "one kernel's raw Nsight Compute sections (no second run).")
    if not r.total:
        why = f" ({r.note})" if r.note else ""
        if r.ran is False:
            return (
                f"nothing was run{why}: this server cannot evaluate this language; compile_kernel still checks "
                "the build, and a pytorch or triton version can be checked here."
            )
        return f"nothing was run{why}: no correctness or timing results; check the workloads you asked for."
    if r.kind == "submit":
        if r.submission and r.submission.accepted:
            return "pick the next problem (list_problems(status='new')) or improve this one and submit again."
        return "fix what failed (run_benchmark on all workloads first), then submit again."
    if r.passed != r.total:
        return "fix the failing workloads first (their log says why); correctness comes before speed."
    if r.device == "cpu":
        return "this server has no GPU: timings are CPU timings without SOL scores; correctness results still hold."
    return (
        f"get_sol_score(job_id={r.job_id!r}) for the speed-of-light breakdown; iterate, then submit_solution."
    )


async def wait_result(ctx: ToolContext, job_id: str, wait_s: float, max_chars: int) -> JobResult:
    deadline = time.monotonic() + wait_s
    snap = await job_for(ctx, job_id)
    step = 0
    while not snap.terminal and time.monotonic() < deadline:
        step += 1
        await ctx.progress(
            float(step),
            None,
            snap.progress
            or (f"queued, {snap.queue_position} ahead" if snap.state == "queued" else snap.state),
        )
        snap = await wait_for(ctx, job_id, min(POLL_S, max(0.0, deadline - time.monotonic())))
    if snap.terminal and snap.kind == "submit" and snap.submission is None:
        snap.submission = await submission_for_job(ctx, snap)
    return result_from_snapshot(snap, max_chars)


async def run_benchmark(args: RunBenchmarkInput, ctx: ToolContext) -> JobResult:
    """Queue a benchmark of a solution and wait a bounded time for its result.

    Raises
    ------
    ToolInputError, FormatError, ProblemNotFound
        Before anything is queued, for a malformed solution, an unknown problem or unknown workloads.
    ServiceUnavailable
        When this server has no ledger.
    """
    if args.workloads is not None and not args.workloads:
        raise ToolInputError(
            "workloads is an empty list, so there is nothing to run: leave workloads out to run every "
            "workload, or list uuids from get_problem"
        )
    solution, problem = solution_and_problem(args, ctx)
    if args.workloads is not None:
        known = {w.uuid for w in problem.workloads}
        unknown = [w for w in args.workloads if w not in known]
        if unknown:
            raise ToolInputError(
                f"workloads {unknown[:5]} are not workloads of {problem.name}; get_problem lists them "
                f"(first: {sorted(known)[:3]})"
            )
    job_id = await enqueue(ctx, "benchmark", problem, solution, workloads=args.workloads, rounds=args.rounds)
    return await wait_result(ctx, job_id, args.wait_s, args.max_chars)


async def submit_solution(args: SubmitSolutionInput, ctx: ToolContext) -> JobResult:
    """Queue the final evaluation of a solution (secret seeds, every workload) and wait a bounded time.

    Raises
    ------
    ToolInputError, FormatError, ProblemNotFound
        Before anything is queued.
    ServiceUnavailable
        When this server has no ledger.
    """
    solution, problem = solution_and_problem(args, ctx)
    warning = await benchmark_verdict(ctx, problem, solution)
    job_id = await enqueue(ctx, "submit", problem, solution, workloads=None, rounds=None)
    result = await wait_result(ctx, job_id, args.wait_s, args.max_chars)
    result.warning = warning
    return result


async def wait_job(args: WaitJobInput, ctx: ToolContext) -> JobResult:
    """Wait a bounded time for one of the caller's jobs.

    Raises
    ------
    JobNotFound
        When no job with that id belongs to the caller.
    """
    return await wait_result(ctx, args.job_id, args.wait_s, args.max_chars)


async def cancel_job(args: CancelJobInput, ctx: ToolContext) -> JobResult:
    """Cancel one of the caller's jobs (a running one's processes are killed).

    Raises
    ------
    JobNotFound
        When no job with that id belongs to the caller.
    """
    snap = await cancel_job_for(ctx, args.job_id)
    return result_from_snapshot(snap, DEFAULT_MAX_CHARS)
