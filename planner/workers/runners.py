"""Job runners: :class:`SandboxRunner` (production) and :class:`SubprocessRunner` (any child process).

Both keep candidate code out of the worker process (docs/design.md section 6): the sandbox runs it in its
own child processes; SubprocessRunner runs a command. Neither imports torch.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import psutil

from solforge.problems import FormatError, InfrastructureError, ProblemNotFound
from solforge.sandbox.api import BuildReport, EvalEvent, EvalReport, EvalRequest

from .contract import Heartbeat, JobResult, JobSpec
from .gpus import Slot

__all__ = ["SandboxRunner", "SubprocessRunner", "kill_process_tree"]

log = logging.getLogger("solforge.planner")

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def _die_with_parent() -> None:
    """preexec_fn: the child gets SIGKILL when the worker thread that started it dies (Linux)."""
    if _libc is not None:
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def kill_process_tree(pid: int) -> None:
    """SIGKILL a process, its process group and every descendant (snapshotted first)."""
    try:
        descendants = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        descendants = []
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    for proc in descendants:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


class SandboxRunner:
    """Runs jobs through solforge.sandbox: ``build_solution`` for compile jobs, ``evaluate`` otherwise.

    The leased slot decides the device: a CUDA slot sets ``device="cuda"`` and ``gpu_index``, a CPU
    slot ``device="cpu"``. Each lane of a slot gets a warm judge (:class:`solforge.sandbox.warm.WarmJudge`),
    started with the worker, so an evaluation pays neither torch's start-up nor its candidate
    process's, and a job loads its solution while another holds the GPU. The sandbox is imported only
    when a job runs or a judge starts, so the planner stays light.

    Parameters
    ----------
    cache_dir
        Build and baseline cache used when a request names none.
    warm
        Keep a warm judge per slot; False starts a judge for every evaluation (as ``solforge eval``
        does without a worker).
    """

    leases_gpu_work = True
    """The worker claims jobs without the slot's lease; :meth:`run` builds first, then leases."""

    def __init__(self, cache_dir: Path | None = None, *, warm: bool = True) -> None:
        self.cache_dir = cache_dir
        self.warm = warm
        self._judges: dict[str, list[Any]] = {}
        """Every warm judge of each slot."""
        self._idle: dict[str, list[Any]] = {}
        """Those not evaluating now."""
        self._lock = threading.Lock()

    def _new_judge(self, slot: Slot) -> Any:
        from solforge.sandbox.warm import WarmJudge

        judge = WarmJudge(device="cuda", gpu_index=slot.index) if slot.kind == "cuda" else WarmJudge(device="cpu")
        self._judges.setdefault(slot.id, []).append(judge)
        return judge

    @contextlib.contextmanager
    def _judge_for(self, slot: Slot | None) -> Iterator[Any]:
        """A warm judge of the slot that no other job is using (None for one-shot evaluations).

        A slot's lanes each get their own judge: one job loads its solution and prepares while another
        holds the GPU's lease, where a shared judge would make it wait for the other's report. The
        judge used last is handed out first, so that one agent's evaluations in a row keep to one judge
        (its loaded problems, its spares started for the recent languages)."""
        if not self.warm or slot is None:
            yield None
            return
        with self._lock:
            idle = self._idle.setdefault(slot.id, [])
            judge = idle.pop() if idle else self._new_judge(slot)
        try:
            yield judge
        finally:
            with self._lock:
                if judge in self._judges.get(slot.id, []):  # not closed meanwhile
                    self._idle.setdefault(slot.id, []).append(judge)

    PRESTARTED_JUDGES = 2
    """Judges started with the worker per slot, at most one per lane; a further lane's judge starts when
    that many jobs first run at once: eight judges importing torch together would slow the first
    evaluation of a lone agent, which needs one."""

    def start(self, slots: Sequence[Slot], *, lanes: Mapping[str, int] | None = None) -> None:
        """Start warm judges now, one per lane of each slot (``lanes``: by slot id, default one) up to
        :attr:`PRESTARTED_JUDGES`, so that the first jobs find them up; on a GPU host, build the
        precompiled torch header for cuda_cpp solutions in the background (once per machine)."""
        if any(slot.kind == "cuda" for slot in slots):
            threading.Thread(target=self._prepare_pch, name="solforge-pch", daemon=True).start()
        if not self.warm:
            return
        for slot in slots:
            with self._lock:
                lanes_of_slot = max(1, (lanes or {}).get(slot.id, 1))
                wanted = min(lanes_of_slot, self.PRESTARTED_JUDGES) - len(self._judges.get(slot.id, []))
                fresh = [self._new_judge(slot) for _ in range(wanted)]
                self._idle.setdefault(slot.id, []).extend(fresh)
            for judge in fresh:
                try:
                    judge.start()
                except Exception as exc:  # the first job starts it again and reports what fails
                    log.warning("slot %s: a warm judge did not start: %s", slot.id, exc)

    def _prepare_pch(self) -> None:
        from solforge.problems.config import cache_dir
        from solforge.sandbox.build import pch

        try:
            folder = pch.prepare(self.cache_dir or cache_dir())
            log.info("precompiled torch/extension.h: %s", folder or "not available on this machine")
        except Exception as exc:  # only a speed-up: builds read the header without it
            log.warning("the precompiled torch header was not built: %s", exc)

    def close(self) -> None:
        """Stop the warm judges (and the candidate processes they keep ready)."""
        with self._lock:
            judges = [judge for slot_judges in self._judges.values() for judge in slot_judges]
            self._judges, self._idle = {}, {}
        for judge in judges:
            with contextlib.suppress(Exception):
                judge.close()

    def run(self, job: JobSpec, heartbeat: Heartbeat, cancel: threading.Event) -> JobResult:
        """Run one job; see :class:`~solforge.planner.workers.contract.JobRunner`."""
        options = job.request.options
        updates: dict[str, object] = {}
        if options.cache_dir is None and self.cache_dir is not None:
            updates["cache_dir"] = self.cache_dir
        if job.slot is not None:
            if job.slot.kind == "cuda":
                updates.update(device="cuda", gpu_index=job.slot.index)
            else:
                updates["device"] = "cpu"
        request = job.request.model_copy(update={"options": options.model_copy(update=updates)})
        try:
            if job.kind == "compile":
                return self._compile(request, heartbeat, cancel)
            from solforge.sandbox.evaluate import evaluate

            if job.gpu_lease is not None:
                # Build before the lease (CPU work: the GPU stays free for another job), for the
                # target the judge will ask for, so that its own build is a cache hit.
                request = self._prebuild(request, job.slot, heartbeat, cancel)
                if cancel.is_set():
                    return JobResult.cancelled()

            def on_event(event: EvalEvent) -> None:
                if event.kind == "progress":
                    heartbeat(event.message, done=event.done, total=event.total)
                elif event.kind == "build" and event.build is not None:
                    heartbeat("built" if event.build.ok else "build failed")

            with self._judge_for(job.slot) as judge:
                report = evaluate(request, on_event=on_event, cancel=cancel, judge=judge, gpu_lease=job.gpu_lease)
        except InfrastructureError as exc:
            return JobResult.infra_error(str(exc), suspect_gpu=job.slot is not None)
        except (ProblemNotFound, FormatError) as exc:
            return JobResult.failed(f"{type(exc).__name__}: {exc}")
        if cancel.is_set():
            return JobResult.cancelled()
        return JobResult.done(report)

    def _prebuild(self, request: EvalRequest, slot: Slot | None, heartbeat: Heartbeat,
                  cancel: threading.Event) -> EvalRequest:
        """Build the solution into the cache now and pin the request to the target it was built for."""
        from solforge.sandbox.build import resolve_target_arch

        options = request.options
        gpu = slot.index if slot is not None and slot.kind == "cuda" else None
        arch = resolve_target_arch(options.target_arch, gpu) if gpu is not None or options.target_arch else None
        pinned = request.model_copy(update={"options": options.model_copy(update={"target_arch": arch})})
        built = self._compile(pinned, heartbeat, cancel)
        if built.outcome == "infra_error":
            raise InfrastructureError(built.error or "the build failed")
        return pinned

    def _compile(self, request: EvalRequest, heartbeat: Heartbeat, cancel: threading.Event) -> JobResult:
        """build_solution in a helper thread, so that a cancel returns at once.

        The build itself runs in the sandbox's isolated child and stops at its own ``timeout_s``;
        a cancelled build's report is dropped.
        """
        from solforge.problems.config import cache_dir
        from solforge.sandbox.build import build_solution

        opts = request.options
        box: list[BuildReport | BaseException] = []

        def build() -> None:
            try:
                box.append(
                    build_solution(
                        request.solution,
                        target_arch=opts.target_arch,
                        cache_dir=opts.cache_dir or cache_dir(),
                        timeout_s=opts.compile_timeout_s,
                        keep_spare=True,  # an agent's next changed source skips the worker's torch import
                    )
                )
            except BaseException as exc:  # handed to the worker thread below
                box.append(exc)

        heartbeat("compiling")
        thread = threading.Thread(target=build, name="solforge-compile", daemon=True)
        thread.start()
        while thread.is_alive():
            if cancel.wait(0.1):
                return JobResult.cancelled()
        result = box[0]
        if isinstance(result, InfrastructureError):
            return JobResult.infra_error(str(result))
        if isinstance(result, FormatError):
            return JobResult.failed(f"FormatError: {result}")
        if isinstance(result, BaseException):
            raise result
        return JobResult.done(result)


class SubprocessRunner:
    """Runs each job as a child process that speaks the sandbox judge's protocol.

    The child gets the job's EvalRequest as JSON on stdin and writes EvalEvent JSON lines on stdout:
    ``progress`` lines become heartbeats, and the final ``report`` (or ``build`` for a compile job)
    is the result. A non-zero exit or no result is an infrastructure error. On cancel the whole
    process tree is SIGKILLed; the child also dies with the worker (``PR_SET_PDEATHSIG``).

    This is the seam's honest fake: tests run real processes that really hang, crash and get
    killed, without a GPU or the sandbox (see :mod:`solforge.planner.testing`).

    Parameters
    ----------
    argv
        Builds the command for a job.
    env
        Extra environment variables for the child.
    stderr_tail_bytes
        How much of the child's stderr to keep for error messages.
    """

    def __init__(
        self,
        argv: Callable[[JobSpec], Sequence[str]],
        *,
        env: Mapping[str, str] | None = None,
        stderr_tail_bytes: int = 8000,
    ) -> None:
        self.argv = argv
        self.env = dict(env or {})
        self.stderr_tail_bytes = stderr_tail_bytes

    def run(self, job: JobSpec, heartbeat: Heartbeat, cancel: threading.Event) -> JobResult:
        """Run one job; see :class:`~solforge.planner.workers.contract.JobRunner`."""
        argv = list(self.argv(job))
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                preexec_fn=_die_with_parent,
                env={**os.environ, **self.env},
            )
        except OSError as exc:
            return JobResult.infra_error(f"could not start {argv[0]}: {exc}")
        final: list[EvalReport | BuildReport] = []
        bad: list[str] = []
        stderr_tail: deque[bytes] = deque()

        def read_stdout() -> None:
            assert proc.stdout is not None
            for raw in proc.stdout:
                line = raw.strip()
                if not line:
                    continue
                try:
                    event = EvalEvent.model_validate_json(line)
                except ValueError:
                    if len(bad) < 5:
                        bad.append(line[:200].decode("utf-8", "replace"))
                    continue
                if event.kind == "progress":
                    heartbeat(event.message, done=event.done, total=event.total)
                elif event.kind == "report" and event.report is not None:
                    final.append(event.report)
                elif event.kind == "build" and event.build is not None and job.kind == "compile":
                    final.append(event.build)
                elif event.kind == "error" and len(bad) < 5:
                    bad.append(event.message or "error event")

        def read_stderr() -> None:
            assert proc.stderr is not None
            size = 0
            for chunk in iter(lambda: proc.stderr.read(4096), b""):  # type: ignore[union-attr]
                stderr_tail.append(chunk)
                size += len(chunk)
                while size > self.stderr_tail_bytes and len(stderr_tail) > 1:
                    size -= len(stderr_tail.popleft())

        def write_stdin() -> None:
            assert proc.stdin is not None
            with contextlib.suppress(BrokenPipeError, OSError):
                proc.stdin.write(job.request.model_dump_json().encode())
                proc.stdin.close()

        threads = [threading.Thread(target=f, daemon=True) for f in (read_stdout, read_stderr, write_stdin)]
        for t in threads:
            t.start()
        cancelled = False
        while True:
            try:
                rc = proc.wait(timeout=0.05)
                break
            except subprocess.TimeoutExpired:
                if cancel.is_set():
                    kill_process_tree(proc.pid)
                    cancelled = True
        if not cancelled and rc != 0:
            kill_process_tree(proc.pid)  # orphans that kept the pipes open
        for t in threads:
            t.join(2.0)
        if cancelled:
            return JobResult.cancelled()
        stderr = b"".join(stderr_tail).decode("utf-8", "replace").strip()
        if rc != 0 or not final:
            detail = stderr[-2000:] or "; ".join(bad) or "no output"
            what = f"exited with status {rc}" if rc != 0 else "exited without a report"
            return JobResult.infra_error(f"job process {what}: {detail}")
        return JobResult.done(final[-1])
