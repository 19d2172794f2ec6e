"""The caller's side of an evaluation: start the judge process, relay its events, return the report.

This module imports neither torch nor the solution: the CLI, the MCP server's workers and the
planner call it, and the judge and candidate processes do the work.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from solforge.problems import InfrastructureError, Status, Trace, load_problem

from .api import EvalEvent, EvalReport, EvalRequest

JUDGE_GRACE_S = 60.0
"""Slack on top of total_timeout_s before the judge itself is killed."""


def _judge_env(request: EvalRequest, scratch: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["SOLFORGE_SCRATCH"] = str(scratch)
    env["PYTHONUNBUFFERED"] = "1"
    if request.options.gpu_index is not None:
        env["CUDA_VISIBLE_DEVICES"] = str(request.options.gpu_index)
    elif request.options.device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env


def evaluate(
    request: EvalRequest,
    *,
    on_event: Callable[[EvalEvent], None] | None = None,
    cancel: threading.Event | None = None,
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

    Raises
    ------
    InfrastructureError
        If the judge itself failed (not the candidate): a harness bug, a broken GPU, a full disk.
    ProblemNotFound
        If the problem does not exist (checked here, before any process starts).
    """
    from . import isolation

    problem = load_problem(request.problem)  # fail fast, in the caller, on an unknown problem
    if problem.folder is not None and Path(request.problem).is_dir():
        # The judge runs in its own scratch folder: a relative problem path must not depend on ours.
        request = request.model_copy(update={"problem": str(Path(request.problem).resolve())})
    scratch = Path(tempfile.mkdtemp(prefix="solforge-eval-"))
    started = time.monotonic()
    deadline = started + request.options.total_timeout_s + JUDGE_GRACE_S
    try:
        with (scratch / "judge.log").open("wb") as judge_log:
            proc = isolation.spawn_isolated(
                [sys.executable, "-m", "solforge.sandbox.judge"],
                cwd=scratch,
                env=_judge_env(request, scratch),
                memory_limit_bytes=None,
                isolate_network=False,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=judge_log,
            ).popen
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(request.model_dump_json().encode())
    proc.stdin.close()

    report: EvalReport | None = None
    traces: list[Trace] = []
    error: str | None = None
    stop_reason: str | None = None

    def watchdog() -> None:
        nonlocal stop_reason
        while proc.poll() is None:
            if cancel is not None and cancel.is_set():
                stop_reason = "cancelled"
            elif time.monotonic() > deadline:
                stop_reason = f"the evaluation exceeded its {request.options.total_timeout_s:.0f} s limit"
            if stop_reason:
                isolation.kill_tree(proc.pid)
                return
            time.sleep(0.1)

    guard = threading.Thread(target=watchdog, name="solforge-eval-watchdog", daemon=True)
    guard.start()
    try:
        for line in proc.stdout:
            try:
                event = EvalEvent.model_validate_json(line)
            except ValueError:
                continue  # the judge writes only events; a stray line is a library's, not ours
            if event.kind == "report" and event.report is not None:
                report = event.report
            elif event.kind == "error":
                error = event.message
            elif event.kind == "trace" and event.trace is not None:
                traces.append(event.trace)
            if on_event is not None:
                on_event(event)
        proc.wait()
    finally:
        isolation.kill_tree(proc.pid)
        guard.join(timeout=5)
        log_tail = ""
        with contextlib.suppress(OSError):
            log_tail = (scratch / "judge.log").read_bytes()[-3000:].decode("utf-8", "replace")
        shutil.rmtree(scratch, ignore_errors=True)

    if report is not None:
        return report
    if stop_reason is not None:
        partial = EvalReport(problem=problem.name, solution=request.solution.name, device="unknown", traces=traces,
                             note=stop_reason, seconds=time.monotonic() - started)
        if stop_reason != "cancelled":
            partial.traces += [
                _timeout_trace(problem.name, request.solution.name, w, stop_reason)
                for w in problem.workloads
                if w.uuid not in {t.workload.uuid for t in traces}
                and (request.options.workloads is None or w.uuid in request.options.workloads)
            ]
        return partial
    raise InfrastructureError(
        f"the judge process failed (exit {proc.returncode}): {error or 'no report'}\n{log_tail}".strip()
    )


def _timeout_trace(problem: str, solution: str, workload, reason: str) -> Trace:  # type: ignore[no-untyped-def]
    from solforge.problems import Evaluation

    return Trace(definition=problem, solution=solution, workload=workload,
                 evaluation=Evaluation(status=Status.TIMEOUT, log=reason))
