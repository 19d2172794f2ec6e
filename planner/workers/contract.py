"""What a worker and a job runner agree on: the job as a runner receives it, how a run ended, the
heartbeat, and the runner protocol itself.

The worker (:mod:`.worker`) claims, leases and records; a runner (:mod:`.runners`, or a test's fake)
only runs. Both import this module and nothing of each other.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from solforge.sandbox.api import BuildReport, EvalReport, EvalRequest

from ..ledger.models import JobKind
from .gpus import Slot

__all__ = ["Heartbeat", "JobResult", "JobRunner", "JobSpec", "LeaseCancelled"]


@dataclass(frozen=True)
class JobSpec:
    """What a runner is asked to do."""

    id: str
    kind: JobKind
    agent: str
    problem: str
    """The ledger's problem name."""
    request: EvalRequest
    """As enqueued (compile jobs have ``compile_only``, submit jobs ``submission`` set)."""
    attempt: int
    """1 for the first claim."""
    max_attempts: int
    timeout_s: float
    """The worker cancels the job at this many seconds."""
    slot: Slot | None
    """The slot (None for compile jobs): run on this GPU, or on the CPU for a CPU slot."""
    gpu_lease: Callable[[], contextlib.AbstractContextManager[None]] | None = None
    """For a runner that leases its GPU work itself (``leases_gpu_work``): entering it waits for the
    slot's lease (raising :class:`LeaseCancelled` when the job is cancelled meanwhile), leaving
    it releases the lease. None when the slot was leased with the claim."""


class LeaseCancelled(Exception):
    """The job was cancelled while it waited for its slot's lease."""


@dataclass(frozen=True)
class JobResult:
    """How a run ended.

    - ``done``: the sandbox produced a report (an EvalReport, or a BuildReport for compile jobs).
      Failing statuses inside the report are the candidate's result, recorded and never retried.
    - ``infra_error``: the harness failed (a crash, a lost GPU, an unparseable reply); the job is
      retried while it has attempts left.
    - ``cancelled``: the runner stopped because ``cancel`` was set.
    - ``failed``: the job cannot run anywhere (its problem does not exist, its request does not
      parse): failed at once, without retries.
    """

    outcome: Literal["done", "infra_error", "cancelled", "failed"]
    report: EvalReport | BuildReport | None = None
    error: str | None = None
    suspect_gpu: bool = False
    """The fault may be the slot's: health-check it before its next lease (the worker does so for
    every infrastructure failure on a slot anyway)."""

    @classmethod
    def done(cls, report: EvalReport | BuildReport) -> JobResult:
        return cls("done", report=report)

    @classmethod
    def infra_error(cls, error: str, *, suspect_gpu: bool = False) -> JobResult:
        return cls("infra_error", error=error, suspect_gpu=suspect_gpu)

    @classmethod
    def cancelled(cls) -> JobResult:
        return cls("cancelled")

    @classmethod
    def failed(cls, error: str) -> JobResult:
        return cls("failed", error=error)


class Heartbeat(Protocol):
    """Report a running job's progress. Cheap and non-blocking: it is written on the next heartbeat."""

    def __call__(
        self, message: str | None = None, *, done: int | None = None, total: int | None = None
    ) -> None: ...


class JobRunner(Protocol):
    """Runs one job to completion, in child processes that ``cancel`` kills."""

    def run(self, job: JobSpec, heartbeat: Heartbeat, cancel: threading.Event) -> JobResult:
        """Run ``job`` and return how it ended.

        Must return promptly (a second or so) once ``cancel`` is set, after killing whatever it
        started. Exceptions are treated as infrastructure errors.

        A runner whose ``leases_gpu_work`` attribute is True gets its job claimed without the slot's
        lease and enters ``job.gpu_lease()`` around its GPU work only; other runners hold the lease
        for the whole job. A runner may also have ``start(slots)`` (called when the worker starts)
        and ``close()`` (when it stops), to keep processes warm.
        """
        ...
