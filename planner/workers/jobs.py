"""One running job of a worker: its shared state, its GPU-lease gate, the renewal of its claim, and the
ledger write that records how it ended.

Separate from :mod:`.worker`, which owns the threads (slots, compile, maintenance) and decides when a
job is claimed and run: everything done to a claim once it runs is here, as functions of the ledger
and the job's :class:`ActiveJob`, so neither grows with the other.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from solforge.sandbox.api import BuildReport, EvalReport, EvalRequest

from ..errors import LedgerError, LedgerIntegrityError
from ..ledger import Ledger, queue
from ..ledger.db import Tx
from ..ledger.models import JobProgress
from .contract import JobResult, JobRunner, JobSpec, LeaseCancelled
from .gpus import Slot

__all__ = [
    "ActiveJob",
    "LedgerOp",
    "lease_gate",
    "renew_claims",
    "run_job",
    "settle_op",
    "with_known_baselines",
    "write_outcome",
]

log = logging.getLogger("solforge.planner")

LedgerOp = Callable[[Tx], object]
"""One transaction that records a job's outcome."""


@dataclass
class ActiveJob:
    """A running claim, shared by its slot thread and the maintenance thread."""

    claim: queue.Claim
    slot: Slot | None
    started: float
    cancel: threading.Event = field(default_factory=threading.Event)
    stop_reason: str | None = None
    stop_at: float = 0.0
    last_ok: float = 0.0
    settling: bool = False
    abandoned: bool = False
    progress_json: str | None = None
    progress_dirty: bool = False
    leased_at: float = 0.0
    lease_s: float = 0.0
    """Seconds this job held its slot's lease (gated runners lease only their GPU work)."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def stop(self, reason: Literal["owner", "timeout", "lost", "shutdown"]) -> None:
        with self.lock:
            if self.stop_reason is None:
                self.stop_reason = reason
                self.stop_at = time.monotonic()
        self.cancel.set()

    def heartbeat(
        self, message: str | None = None, *, done: int | None = None, total: int | None = None
    ) -> None:
        progress = JobProgress(message=message[:500] if message else None, done=done, total=total)
        with self.lock:
            self.progress_json = progress.model_dump_json(exclude_none=True)
            self.progress_dirty = True

    def enforce_limits(self, now: float, kill_grace_s: float) -> bool:
        """Cancel the job past its time limit, abandon it when its runner ignores a cancel for
        ``kill_grace_s``; returns whether its claim is still to be renewed."""
        if not self.settling and self.stop_reason is None and now - self.started > self.claim.timeout_s:
            log.warning(
                "job %s exceeded its %gs limit; cancelling",
                self.claim.job_id,
                self.claim.timeout_s,
                extra={"action": "job_timeout"},
            )
            self.stop("timeout")
        if (
            self.stop_reason is not None
            and not self.settling
            and now - self.stop_at > kill_grace_s
            and not self.abandoned
        ):
            self.abandoned = True
            log.error(
                "job %s: the runner ignored cancel for %gs; no longer renewing its claim so its lease expires",
                self.claim.job_id,
                kill_grace_s,
                extra={"action": "job_abandon"},
            )
        return not self.abandoned


def with_known_baselines(ledger: Ledger, request: EvalRequest, problem: str) -> EvalRequest:
    """The request with the baselines the ledger keeps for its problem, so none is timed twice."""
    try:
        known = ledger.connector.run(lambda tx: queue.baselines_for(tx, problem), write=False, retry_s=5.0)
    except LedgerError as exc:  # the judge then measures (or finds them in its own cache)
        log.warning("could not read the baselines of %s: %s", problem, exc, extra={"action": "baselines"})
        return request
    return request.model_copy(update={"baselines": known}) if known else request


def lease_gate(
    ledger: Ledger, active: ActiveJob, *, lease_s: float, poll_s: float
) -> Callable[[], contextlib.AbstractContextManager[None]]:
    """The context a gated runner enters around its GPU work: wait for the lease, then release it."""

    @contextlib.contextmanager
    def gate() -> Iterator[None]:
        claim = active.claim
        waiting = False
        while True:
            if active.cancel.is_set():
                raise LeaseCancelled(f"job {claim.job_id} was stopped while it waited for {claim.gpu_id}")
            seen = ledger.changes.generation
            try:
                lease_id = ledger.connector.run(
                    lambda tx: queue.acquire_lease(tx, claim, lease_s=lease_s), retry_s=5.0)
            except (LedgerIntegrityError, LedgerError):
                lease_id = None  # another lease won the same instant, or the ledger is away: try again
            if lease_id is not None:
                break
            if not waiting:
                active.heartbeat(f"built; waiting for {claim.gpu_id} (another job holds it)")
                waiting = True
            ledger.changes.wait(seen, min(0.25, poll_s))  # a release here wakes it
        active.leased_at = time.monotonic()
        try:
            yield
        finally:
            with contextlib.suppress(LedgerError):
                ledger.connector.run(lambda tx: queue.release_lease(tx, claim, reason="gpu_done"),
                                     retry_s=lease_s / 2)
            active.lease_s += time.monotonic() - active.leased_at
            ledger.changes.notify()  # the slot's other lane may take it now

    return gate


def run_job(runner: JobRunner, spec: JobSpec, active: ActiveJob) -> JobResult:
    """The runner's result; a runner that raises is an infrastructure fault, since by contract it
    reports the candidate's failures as results."""
    try:
        return runner.run(spec, active.heartbeat, active.cancel)
    except LeaseCancelled:
        return JobResult.cancelled()
    except Exception as exc:
        log.exception("job %s: the runner raised", spec.id, extra={"action": "job_run"})
        return JobResult.infra_error(f"the job runner raised {type(exc).__name__}: {exc}", suspect_gpu=True)


def renew_claims(ledger: Ledger, actives: list[ActiveJob], now: float, *, lease_s: float, worker_id: str) -> None:
    """Renew the claims (and leases) of running jobs in one transaction, storing their progress;
    stops a job whose claim was lost, or not renewed for ``lease_s``, and one its owner cancelled."""
    sent: dict[str, str | None] = {}

    def beat(tx: Tx) -> dict[str, queue.HeartbeatState]:
        states = {}
        for a in actives:
            with a.lock:
                progress = a.progress_json if a.progress_dirty else None
            sent[a.claim.job_id] = progress
            states[a.claim.job_id] = queue.heartbeat(tx, a.claim, lease_s=lease_s, progress_json=progress)
        return states

    try:
        states = ledger.connector.run(beat, retry_s=0)
    except LedgerError as exc:
        log.warning("worker %s: could not renew claims: %s", worker_id, exc, extra={"action": "heartbeat"})
        for a in actives:
            if not a.settling and now - a.last_ok > lease_s:
                log.error(
                    "job %s: no renewal for %gs; presuming the claim lost and stopping the job",
                    a.claim.job_id,
                    lease_s,
                    extra={"action": "heartbeat"},
                )
                a.stop("lost")
        return
    for a in actives:
        state = states[a.claim.job_id]
        if not state.alive:
            if not a.settling:
                log.warning(
                    "job %s: claim lost (reclaimed elsewhere); stopping it",
                    a.claim.job_id,
                    extra={"action": "heartbeat"},
                )
                a.stop("lost")
            continue
        a.last_ok = now
        with a.lock:
            if sent[a.claim.job_id] is not None and a.progress_json == sent[a.claim.job_id]:
                a.progress_dirty = False
        if state.cancel_requested and not a.settling:
            a.stop("owner")


def settle_op(
    active: ActiveJob,
    request: EvalRequest,
    result: JobResult,
    *,
    worker_id: str,
    lease_s: float,
    retry_backoff_s: float,
) -> LedgerOp:
    """The transaction that records how the job ended: why it stopped first, then what its runner said."""
    claim = active.claim
    reason = active.stop_reason
    if reason == "lost":
        return _retry_op(
            active,
            f"worker {worker_id} lost its claim: no renewal reached the ledger for {lease_s:g}s",
            backoff_s=0.0,
            release_reason="lost",
        )
    if result.outcome == "done":
        return _done_op(active, request, result, worker_id=worker_id, retry_backoff_s=retry_backoff_s)
    if reason == "owner":
        return _finish_op(active, "cancelled", None, "cancelled by its owner while running", worker_id=worker_id)
    if result.outcome == "failed":
        return _finish_op(
            active, "failed", None, (result.error or "the job cannot run")[:4000], worker_id=worker_id
        )
    if reason == "shutdown":
        return _retry_op(
            active,
            f"worker {worker_id} shut down during the attempt",
            backoff_s=0.0,
            refund=True,
            check_gpu=False,
            release_reason="shutdown",
        )
    if reason == "timeout":
        return _retry_op(
            active,
            f"attempt {claim.attempt} exceeded its {claim.timeout_s:g}s limit; the worker killed its process tree",
            backoff_s=retry_backoff_s * claim.attempt,
        )
    if result.outcome == "cancelled":
        return _retry_op(active, "the runner stopped the job without being asked", backoff_s=retry_backoff_s)
    return _retry_op(
        active, result.error or "infrastructure error", backoff_s=retry_backoff_s * claim.attempt
    )


def _finish_op(
    active: ActiveJob,
    status: Literal["done", "cancelled", "failed"],
    result_json: str | None,
    error: str | None,
    runs: list[dict[str, Any]] | None = None,
    submission: dict[str, Any] | None = None,
    report: EvalReport | None = None,
    *,
    worker_id: str,
) -> LedgerOp:
    def op(tx: Tx) -> object:
        if isinstance(report, EvalReport) and report.baselines:
            # Kept even when the claim was lost: a measured baseline is true whoever measured it.
            queue.record_baselines(tx, report.baselines, worker_id=worker_id)
        outcome = queue.finish(
            tx,
            active.claim,
            status=status,
            result_json=result_json,
            error=error,
            progress_json=active.progress_json,
            runs=runs,
            submission=submission,
        )
        log.log(
            logging.INFO if outcome != "lost" else logging.WARNING,
            "job %s %s (%s)",
            active.claim.job_id,
            status,
            outcome,
            extra={"action": "job_finish"},
        )
        return outcome

    return op


def _retry_op(
    active: ActiveJob,
    error: str,
    *,
    backoff_s: float,
    refund: bool = False,
    check_gpu: bool = True,
    release_reason: str = "retry",
) -> LedgerOp:
    def op(tx: Tx) -> object:
        status = queue.retry(
            tx,
            active.claim,
            error=error[:4000],
            backoff_s=backoff_s,
            refund=refund,
            check_gpu=check_gpu,
            release_reason=release_reason,
        )
        log.warning(
            "job %s attempt %d ended: %s -> %s",
            active.claim.job_id,
            active.claim.attempt,
            error,
            status or "claim lost",
            extra={"action": "job_retry"},
        )
        return status

    return op


def _done_op(
    active: ActiveJob, request: EvalRequest, result: JobResult, *, worker_id: str, retry_backoff_s: float
) -> LedgerOp:
    claim = active.claim
    report = result.report
    if claim.kind == "compile":
        if not isinstance(report, BuildReport):
            return _retry_op(
                active,
                f"the runner returned {type(report).__name__} for a compile job",
                backoff_s=retry_backoff_s,
            )
        return _finish_op(active, "done", report.model_dump_json(), None, worker_id=worker_id)
    if not isinstance(report, EvalReport):
        return _retry_op(
            active,
            f"the runner returned {type(report).__name__} for a {claim.kind} job",
            backoff_s=retry_backoff_s,
        )
    # A profile's one call is no timing: it leaves no runs for the agent's history or the report.
    runs = [] if claim.kind == "profile" else queue.run_params(report, request.solution.name)
    submission = (
        queue.submission_params(report, request.solution, agent=claim.agent)
        if claim.kind == "submit"
        else None
    )
    return _finish_op(
        active, "done", report.model_dump_json(), None, runs, submission, report, worker_id=worker_id
    )


def write_outcome(ledger: Ledger, active: ActiveJob, op: LedgerOp, *, retry_s: float) -> None:
    """Run ``op``, retrying for ``retry_s`` while the ledger is away; then the claim expires instead."""
    try:
        ledger.connector.run(op, retry_s=retry_s)
        ledger.changes.notify()  # a tool waiting for this job in this process looks now
    except LedgerError as exc:
        log.error(
            "job %s: could not record its outcome (%s); its claim will expire and the job will run again",
            active.claim.job_id,
            exc,
            extra={"action": "job_finish"},
        )
