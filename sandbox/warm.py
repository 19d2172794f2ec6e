"""The caller's side of a judge process, one-shot or warm (no torch here).

:class:`JudgeProcess` starts ``python -m solforge.sandbox.judge`` and reads its events on a thread
of its own; :func:`collect` relays one evaluation's events and gathers its report. A
:class:`WarmJudge` keeps one judge running with ``--serve`` for one device (a GPU, or the CPU) and
sends it one request after another: torch, CUDA and CUPTI load once, and every evaluation finds a
candidate process already started. A judge that was stopped (a cancel, a time limit) or that died
is started again for the next evaluation.
"""

from __future__ import annotations

import contextlib
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from solforge.problems import InfrastructureError, Problem, Status, Trace

from . import child_env, isolation
from .api import EvalEvent, EvalReport, EvalRequest

__all__ = ["JUDGE_GRACE_S", "JudgeProcess", "Outcome", "WarmJudge", "collect", "judge_env", "report_of"]

JUDGE_GRACE_S = 60.0
"""Slack on top of total_timeout_s before the judge itself is killed."""
READY_TIMEOUT_S = 180.0
"""A warm judge that has not imported torch and found its device by then is broken."""
_POLL_S = 0.1


def judge_env(scratch: Path, *, device: str, gpu_index: int | None) -> dict[str, str]:
    """The judge process's environment: the caller's (a trusted child), narrowed to the GPU it serves."""
    env = child_env.trusted_child_env()
    env["SOLFORGE_SCRATCH"] = str(scratch)
    env["PYTHONUNBUFFERED"] = "1"
    if gpu_index is not None:
        # The slot's index is NVML's (PCI order); CUDA's default order is "fastest first", with ties in no
        # promised order, so without this a judge of a multi-GPU host could open another slot's GPU.
        env["CUDA_VISIBLE_DEVICES"] = str(gpu_index)
        env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    elif device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    return env


class JudgeProcess:
    """One judge process: its events arrive on a queue filled by a reader thread.

    Parameters
    ----------
    scratch
        The judge's folder (its working directory, the candidates' folders, ``judge.log``).
    serve
        Start it warm (``--serve``), for many requests; otherwise it evaluates one and exits.
    device
        ``auto``, ``cuda`` or ``cpu`` (warm judges only).
    gpu_index
        The physical GPU it may see (``CUDA_VISIBLE_DEVICES``); None: as the caller's environment has it.
    """

    def __init__(self, scratch: Path, *, serve: bool, device: str = "auto", gpu_index: int | None = None) -> None:
        self.scratch = scratch
        env = judge_env(scratch, device=device, gpu_index=gpu_index)
        argv = [sys.executable, "-m", "solforge.sandbox.judge"]
        if serve:
            argv += ["--serve", "--device", device]
        self.log_path = scratch / "judge.log"
        with self.log_path.open("ab") as log:
            self.proc = isolation.spawn_isolated(
                argv, cwd=scratch, env=env, memory_limit_bytes=None, isolate_network=False,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
            ).popen
        self.events: queue.Queue[EvalEvent | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, name="solforge-judge-events", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                self.events.put(EvalEvent.model_validate_json(line))
            except ValueError:
                continue  # the judge writes only events; a stray line is a library's, not ours
        self.events.put(None)  # end of stream: the judge exited

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def send(self, request: EvalRequest, *, close: bool = False) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(request.model_dump_json().encode() + b"\n")
        self.proc.stdin.flush()
        if close:
            self.proc.stdin.close()

    def go(self) -> None:
        """Answer a ``gpu`` event: the judge may start its GPU work (a judge that died meanwhile ends
        its event stream, which the caller reads as such)."""
        assert self.proc.stdin is not None
        with contextlib.suppress(OSError):
            self.proc.stdin.write(b"go\n")
            self.proc.stdin.flush()

    def wait(self, timeout_s: float) -> None:
        """Let the judge finish (it stops its candidates and keeps their JIT caches after its report)."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=timeout_s)

    def kill(self) -> None:
        isolation.kill_tree(self.proc.pid)
        with contextlib.suppress(Exception):
            self.proc.wait(timeout=10)
        for stream in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(Exception):
                if stream is not None:
                    stream.close()
        self._reader.join(timeout=5)

    def log_tail(self, limit: int = 3000) -> str:
        with contextlib.suppress(OSError):
            return self.log_path.read_bytes()[-limit:].decode("utf-8", "replace")
        return ""


@dataclass
class Outcome:
    """What one evaluation's events said."""

    report: EvalReport | None = None
    traces: list[Trace] = field(default_factory=list)
    error: str | None = None
    stop_reason: str | None = None
    """Set when the caller stopped it: cancelled, or past its time limit."""
    ended: bool = False
    """The judge process exited (its event stream closed)."""


def collect(judge: JudgeProcess, *, deadline: float, on_event: Callable[[EvalEvent], None] | None,
            cancel: threading.Event | None, total_timeout_s: float,
            on_gpu: Callable[[], None] | None = None, on_gpu_done: Callable[[], None] | None = None) -> Outcome:
    """Relay one evaluation's events until its report, an error, the judge's exit, a cancel or the deadline.

    ``on_gpu`` answers a ``gpu`` event (a request with ``gpu_gate``): it returns once the GPU may be
    used, and the judge is then told ``go``; the time it took does not count against the deadline.
    ``on_gpu_done`` answers ``gpu_done``: the judge needs the GPU no more for this evaluation.
    """
    outcome = Outcome()
    while True:
        if cancel is not None and cancel.is_set():
            outcome.stop_reason = "cancelled"
            return outcome
        if time.monotonic() > deadline:
            outcome.stop_reason = f"the evaluation exceeded its {total_timeout_s:.0f} s limit"
            return outcome
        try:
            event = judge.events.get(timeout=_POLL_S)
        except queue.Empty:
            continue
        if event is None:
            outcome.ended = True
            return outcome
        if event.kind == "ready":
            continue
        if event.kind == "gpu":
            waited = time.monotonic()
            if on_gpu is not None:
                on_gpu()
            deadline += time.monotonic() - waited
            judge.go()
            continue
        if event.kind == "gpu_done":
            if on_gpu_done is not None:
                on_gpu_done()
            continue
        if event.kind == "trace" and event.trace is not None:
            outcome.traces.append(event.trace)
        if on_event is not None:
            on_event(event)
        if event.kind == "report" and event.report is not None:
            outcome.report = event.report
            return outcome
        if event.kind == "error":
            outcome.error = event.message
            return outcome


def report_of(outcome: Outcome, request: EvalRequest, problem: Problem, started: float, log_tail: str) -> EvalReport:
    """The report, or a partial one when the evaluation was stopped; InfrastructureError otherwise."""
    if outcome.report is not None:
        return outcome.report
    if outcome.stop_reason is not None:
        partial = EvalReport(problem=problem.name, solution=request.solution.name, device="unknown",
                             traces=outcome.traces, note=outcome.stop_reason, seconds=time.monotonic() - started)
        if outcome.stop_reason != "cancelled":
            finished = {t.workload.uuid for t in outcome.traces}
            wanted = request.options.workloads
            partial.traces += [_timeout_trace(problem.name, request.solution.name, w, outcome.stop_reason)
                               for w in problem.workloads
                               if w.uuid not in finished and (wanted is None or w.uuid in wanted)]
        return partial
    raise InfrastructureError(f"the judge process failed: {outcome.error or 'no report'}\n{log_tail}".strip())


def _timeout_trace(problem: str, solution: str, workload, reason: str) -> Trace:  # type: ignore[no-untyped-def]
    from solforge.problems import Evaluation

    return Trace(definition=problem, solution=solution, workload=workload,
                 evaluation=Evaluation(status=Status.TIMEOUT, log=reason))


class WarmJudge:
    """A judge process kept running for one device, evaluating one request at a time.

    Parameters
    ----------
    device
        ``cuda`` (with ``gpu_index``) or ``cpu``.
    gpu_index
        The physical GPU this judge serves.

    Examples
    --------
    ::

        judge = WarmJudge(device="cuda", gpu_index=0)
        judge.start()                      # optional: warm up now, in the background
        report = evaluate(request, judge=judge)
        judge.close()
    """

    def __init__(self, *, device: str = "auto", gpu_index: int | None = None) -> None:
        self.device = device
        self.gpu_index = gpu_index
        self._process: JudgeProcess | None = None
        self._ready = False
        self._lock = threading.Lock()
        self.starts = 0
        """How many judge processes this has started (1 while nothing went wrong)."""

    def start(self) -> None:
        """Start the judge process now (it warms up on its own; the first evaluation waits for it)."""
        with self._lock:
            self._ensure_started()

    def _ensure_started(self) -> JudgeProcess:
        if self._process is not None and self._process.alive:
            return self._process
        self._discard()
        scratch = Path(tempfile.mkdtemp(prefix="solforge-judge-"))
        try:
            self._process = JudgeProcess(scratch, serve=True, device=self.device, gpu_index=self.gpu_index)
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        self._ready = False
        self.starts += 1
        return self._process

    def _wait_ready(self, judge: JudgeProcess, cancel: threading.Event | None) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not self._ready:
            if cancel is not None and cancel.is_set():
                return
            try:
                event = judge.events.get(timeout=_POLL_S)
            except queue.Empty:
                if time.monotonic() <= deadline:
                    continue
                tail = judge.log_tail()
                self._discard()
                raise InfrastructureError(f"the warm judge did not start within {READY_TIMEOUT_S:.0f} s\n{tail}") from None
            if event is None:
                tail = judge.log_tail()
                self._discard()
                raise InfrastructureError(f"the warm judge exited while starting\n{tail}")
            if event.kind == "ready":
                self._ready = True

    def evaluate(self, request: EvalRequest, problem: Problem, *, on_event: Callable[[EvalEvent], None] | None = None,
                 cancel: threading.Event | None = None,
                 gpu_lease: Callable[[], contextlib.AbstractContextManager[object]] | None = None) -> EvalReport:
        """Evaluate ``request`` in the warm judge (see :func:`solforge.sandbox.evaluate.evaluate`).

        ``gpu_lease`` is entered once the solution is built and loaded, just before the judge's first
        GPU work, and left when the judge says its GPU work is done or the report arrives: a worker's
        lease then covers the GPU work only.
        An exception it raises (the job was cancelled while it waited) stops the judge and is raised.
        """
        with self._lock, contextlib.ExitStack() as lease:
            started = time.monotonic()
            self._drop_stale()
            judge = self._ensure_started()
            self._wait_ready(judge, cancel)
            deadline = started + request.options.total_timeout_s + JUDGE_GRACE_S
            outcome = Outcome(stop_reason="cancelled")
            if self._ready:
                if gpu_lease is not None:
                    request = request.model_copy(update={"gpu_gate": True})
                judge.send(request)
                try:
                    outcome = collect(judge, deadline=deadline, on_event=on_event, cancel=cancel,
                                      total_timeout_s=request.options.total_timeout_s,
                                      on_gpu=(lambda: lease.enter_context(gpu_lease())) if gpu_lease else None,
                                      on_gpu_done=lease.close)
                except BaseException:
                    self._discard()  # it waits for a go that will not come
                    raise
            tail = judge.log_tail()
            if outcome.stop_reason is not None or outcome.ended or not judge.alive:
                self._discard()  # stopped mid-evaluation, or gone: the next evaluation starts a fresh one
            return report_of(outcome, request, problem, started, tail)

    def _drop_stale(self) -> None:
        """Events left from the previous evaluation (a judge that found its GPU broken says so after
        its report, then exits): a judge that ended is replaced."""
        judge = self._process
        while judge is not None:
            try:
                event = judge.events.get_nowait()
            except queue.Empty:
                return
            if event is None:
                self._discard()
                return
            if event.kind == "ready":  # the judge warmed up before this first evaluation
                self._ready = True

    def _discard(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            process.kill()
            shutil.rmtree(process.scratch, ignore_errors=True)

    def close(self) -> None:
        with self._lock:
            process = self._process
            if process is not None and process.alive and process.proc.stdin is not None:
                with contextlib.suppress(OSError):
                    process.proc.stdin.close()  # the judge finishes its loop and stops its spares
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.proc.wait(timeout=10)
            self._discard()

    def __enter__(self) -> WarmJudge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
