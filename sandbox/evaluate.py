"""The caller's side of an evaluation: start the judge (or use a warm one), relay its events, return the report.

This module imports neither torch nor the solution: the CLI, the MCP server's workers and the
planner call it, and the judge and candidate processes do the work.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from solforge.problems import Problem, load_problem

from .api import EvalEvent, EvalReport, EvalRequest
from .warm import JUDGE_GRACE_S, JudgeProcess, WarmJudge, collect, report_of

__all__ = ["JUDGE_GRACE_S", "evaluate"]


def evaluate(
    request: EvalRequest,
    *,
    on_event: Callable[[EvalEvent], None] | None = None,
    cancel: threading.Event | None = None,
    judge: WarmJudge | None = None,
    gpu_lease: Callable[[], AbstractContextManager[object]] | None = None,
) -> EvalReport:
    """Evaluate ``request.solution`` on ``request.problem`` in child processes and return the report.

    Parameters
    ----------
    request
        The problem (catalogue name or folder), the solution and the options.
    on_event
        Called from this thread with every progress, build and trace event as it arrives.
    cancel
        Setting it kills the judge and candidate process trees; the report then carries the
        traces finished so far and a note saying it was cancelled.
    judge
        A warm judge to run in (a worker keeps one per GPU); None starts a judge for this
        evaluation alone, which imports torch and starts its candidate process first.
    gpu_lease
        Entered around the evaluation's GPU work (a worker's lease on the GPU): in a warm judge only
        once the solution is built and loaded, in a judge of its own around the whole evaluation.

    Raises
    ------
    InfrastructureError
        If the judge itself failed (not the candidate): a harness bug, a broken GPU, a full disk.
    ProblemNotFound
        If the problem does not exist (checked here, before any process starts).
    """
    problem = load_problem(request.problem)  # fail fast, in the caller, on an unknown problem
    if problem.folder is not None and Path(request.problem).is_dir():
        # The judge runs in its own scratch folder: a relative problem path must not depend on ours.
        request = request.model_copy(update={"problem": str(Path(request.problem).resolve())})
    if judge is not None:
        return judge.evaluate(request, problem, on_event=on_event, cancel=cancel, gpu_lease=gpu_lease)
    with gpu_lease() if gpu_lease is not None else contextlib.nullcontext():
        return _one_shot(request, problem, on_event, cancel)


def _one_shot(request: EvalRequest, problem: Problem, on_event: Callable[[EvalEvent], None] | None,
              cancel: threading.Event | None) -> EvalReport:
    """A judge process for this evaluation alone: it imports torch, evaluates and exits."""
    started = time.monotonic()
    scratch = Path(tempfile.mkdtemp(prefix="solforge-eval-"))
    try:
        process = JudgeProcess(scratch, serve=False, gpu_index=request.options.gpu_index,
                               device=request.options.device)
        try:
            process.send(request, close=True)
            outcome = collect(process, deadline=started + request.options.total_timeout_s + JUDGE_GRACE_S,
                              on_event=on_event, cancel=cancel, total_timeout_s=request.options.total_timeout_s)
            tail = process.log_tail()
        finally:
            process.kill()
        return report_of(outcome, request, problem, started, tail)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
