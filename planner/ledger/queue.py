"""The job queue and GPU leases as transaction-level steps over the named queries.

Each function runs inside one open :class:`~solforge.planner.ledger.db.Tx` and writes the events that
record what it changed in that same transaction, so the event log and the state never disagree.
The :class:`~solforge.planner.Ledger` facade and the :class:`~solforge.planner.Worker` compose them.

Lifecycle of a job::

    queued --claim--> running --finish--> done | failed | cancelled
       ^                 |
       +--- retry -------+   infrastructure fault, shutdown, or an expired claim (reclaim),
                             while attempts < max_attempts; otherwise failed (or cancelled)

A claim carries a random *token*. Heartbeats, finishing and retrying are fenced by it: a worker
whose claim was reclaimed (it hung, lost the database, or its clock was wrong) can change nothing,
so a job is recorded as finished exactly once. A benchmark's claim and its slot lease share the
token and the deadline; the partial unique index ``uq_lease_active_gpu`` makes a second live lease
on one slot impossible whatever the code above it does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from solforge.problems import Solution, Status
from solforge.sandbox.api import BaselineRecord, EvalReport
from solforge.sandbox.sol.score import counted_speedup, geomean_or_none

from .db import Tx
from .models import TERMINAL_STATUSES

__all__ = [
    "Claim",
    "HeartbeatState",
    "acquire_lease",
    "baselines_for",
    "claim_next",
    "event",
    "finish",
    "heartbeat",
    "reclaim_expired",
    "record_baselines",
    "record_health",
    "release_lease",
    "retry",
    "run_params",
    "submission_params",
]


@dataclass(frozen=True)
class Claim:
    """A worker's hold on one running job (and, for GPU jobs, on its slot)."""

    job_id: str
    token: str
    agent: str
    kind: str
    problem: str
    request_json: str
    attempt: int
    max_attempts: int
    timeout_s: float
    worker_id: str
    gpu_id: str | None
    lease_id: int | None


@dataclass(frozen=True)
class HeartbeatState:
    """What a heartbeat learned about one claim."""

    alive: bool
    """False: the claim was reclaimed or finished elsewhere; stop the job and drop its result."""
    cancel_requested: bool


def event(
    tx: Tx,
    kind: str,
    /,
    *,
    job_id: str | None = None,
    gpu_id: str | None = None,
    worker_id: str | None = None,
    agent: str | None = None,
    lease_id: int | None = None,
    **detail: Any,
) -> None:
    """Append one event to the log, in the current transaction."""
    tx.execute(
        "insert_event",
        kind=kind,
        job_id=job_id,
        gpu_id=gpu_id,
        worker_id=worker_id,
        agent=agent,
        lease_id=lease_id,
        detail_json=json.dumps(detail, default=str) if detail else None,
    )


def claim_next(
    tx: Tx,
    *,
    worker_id: str,
    gpu_id: str | None,
    slot_kind: str | None,
    token: str,
    lease_s: float,
    fair_window_s: float,
    lease: bool = True,
) -> Claim | None:
    """Claim the next job for a slot (``gpu_id``) or for a compile slot (``gpu_id=None``).

    For a slot: the slot must be available and already health-checked. With ``lease`` it must also
    be free of live leases, and the job is claimed and the slot leased in this one transaction;
    without, the job is claimed for the slot and :func:`acquire_lease` takes the lease later, when
    its GPU work starts (a worker builds while another job holds the GPU). Returns None when there
    is nothing to do (or the slot is busy or being leased by another worker right now).
    """
    needs_gpu = gpu_id is not None
    if needs_gpu:
        gpu = tx.one("lock_gpu", gpu_id=gpu_id)
        if gpu is None or gpu["status"] != "available" or gpu["needs_check"]:
            return None
        if lease and tx.one("active_lease", gpu_id=gpu_id) is not None:
            return None
    row = tx.one(
        "claim_job",
        needs_gpu=needs_gpu,
        slot_kind=slot_kind,
        worker_id=worker_id,
        gpu_id=gpu_id,
        token=token,
        lease_s=lease_s,
        fair_window_s=fair_window_s,
    )
    if row is None:
        return None
    request_json = tx.scalar("get_request", job_id=row["id"])
    lease_id: int | None = None
    if needs_gpu and lease:
        row_lease = tx.one(
            "insert_lease", gpu_id=gpu_id, job_id=row["id"], worker_id=worker_id, token=token, lease_s=lease_s
        )
        assert row_lease is not None  # RETURNING always yields the inserted row
        lease_id = int(row_lease["id"])
        event(tx, "lease.acquired", job_id=row["id"], gpu_id=gpu_id, worker_id=worker_id, lease_id=lease_id)
    event(
        tx,
        "job.claimed",
        job_id=row["id"],
        gpu_id=gpu_id,
        worker_id=worker_id,
        agent=row["agent"],
        lease_id=lease_id,
        attempt=int(row["attempts"]),
    )
    return Claim(
        job_id=row["id"],
        token=token,
        agent=row["agent"],
        kind=row["kind"],
        problem=row["problem"],
        request_json=str(request_json),
        attempt=int(row["attempts"]),
        max_attempts=int(row["max_attempts"]),
        timeout_s=float(row["timeout_s"]),
        worker_id=worker_id,
        gpu_id=gpu_id,
        lease_id=lease_id,
    )


def acquire_lease(tx: Tx, claim: Claim, *, lease_s: float) -> int | None:
    """Lease the claim's slot now, for its GPU work; None while another lease holds the slot.

    The claim must still be live (fenced by its token) and the slot in service; the partial unique
    index ``uq_lease_active_gpu`` refuses a second live lease whatever happens above it.
    """
    assert claim.gpu_id is not None
    gpu = tx.one("lock_gpu", gpu_id=claim.gpu_id)
    if gpu is None or gpu["status"] != "available":
        return None
    if tx.one("active_lease", gpu_id=claim.gpu_id) is not None:
        return None
    if tx.one("claim_is_live", id=claim.job_id, token=claim.token) is None:
        return None
    row = tx.one("insert_lease", gpu_id=claim.gpu_id, job_id=claim.job_id, worker_id=claim.worker_id,
                 token=claim.token, lease_s=lease_s)
    assert row is not None
    lease_id = int(row["id"])
    event(tx, "lease.acquired", job_id=claim.job_id, gpu_id=claim.gpu_id, worker_id=claim.worker_id,
          lease_id=lease_id)
    return lease_id


def release_lease(tx: Tx, claim: Claim, *, reason: str) -> None:
    """End the claim's lease (its GPU work is over) and keep the claim."""
    row = tx.one("release_lease", job_id=claim.job_id, token=claim.token, reason=reason)
    if row is not None:
        event(tx, "lease.released", job_id=claim.job_id, gpu_id=claim.gpu_id, worker_id=claim.worker_id,
              lease_id=int(row["id"]), reason=reason)


def heartbeat(tx: Tx, claim: Claim, *, lease_s: float, progress_json: str | None) -> HeartbeatState:
    """Renew a claim and its lease; report whether it is still ours and whether to cancel."""
    row = tx.one(
        "heartbeat_job", id=claim.job_id, token=claim.token, lease_s=lease_s, progress_json=progress_json
    )
    if row is None:
        return HeartbeatState(alive=False, cancel_requested=False)
    if claim.gpu_id is not None:
        tx.execute("heartbeat_lease", id=claim.job_id, token=claim.token, lease_s=lease_s)
    return HeartbeatState(alive=True, cancel_requested=bool(row["cancel_requested"]))


def _already_finished(tx: Tx, claim: Claim) -> bool:
    current = tx.one("get_job_any", id=claim.job_id)
    return bool(current and current["claim_token"] == claim.token and current["status"] in TERMINAL_STATUSES)


def _discarded(tx: Tx, claim: Claim, outcome: str) -> None:
    current = tx.one("get_job_any", id=claim.job_id)
    event(
        tx,
        "job.result_discarded",
        job_id=claim.job_id,
        gpu_id=claim.gpu_id,
        worker_id=claim.worker_id,
        agent=claim.agent,
        outcome=outcome,
        reason="the claim was reclaimed before the result arrived",
        job_status=current["status"] if current else None,
    )


def finish(
    tx: Tx,
    claim: Claim,
    *,
    status: Literal["done", "cancelled", "failed"],
    result_json: str | None,
    error: str | None,
    progress_json: str | None = None,
    runs: list[dict[str, Any]] | None = None,
    submission: dict[str, Any] | None = None,
) -> Literal["recorded", "already", "lost"]:
    """Record a job's final state with its runs and submission, and release its lease.

    Returns
    -------
    str
        ``recorded``; ``already`` when this very claim had recorded it (a retried commit);
        ``lost`` when the claim was reclaimed meanwhile (nothing is written but a
        ``job.result_discarded`` event).
    """
    row = tx.one(
        "finish_job",
        id=claim.job_id,
        token=claim.token,
        status=status,
        error=error,
        progress_json=progress_json,
    )
    if row is None:
        if _already_finished(tx, claim):
            return "already"
        _discarded(tx, claim, status)
        return "lost"
    if result_json is not None:
        tx.execute("set_result", job_id=claim.job_id, result_json=result_json)
    for run in runs or []:
        tx.execute("insert_run", job_id=claim.job_id, agent=claim.agent, **run)
    if submission is not None:
        sub = tx.one("insert_submission", job_id=claim.job_id, **submission)
        assert sub is not None
        event(
            tx,
            "submission.recorded",
            job_id=claim.job_id,
            agent=claim.agent,
            submission_id=int(sub["id"]),
            problem=sub["problem"],
            score=float(sub["score"]),
        )
    if claim.gpu_id is not None:
        lease = tx.one("release_lease", job_id=claim.job_id, token=claim.token, reason=status)
        if lease is not None:
            event(
                tx,
                "lease.released",
                job_id=claim.job_id,
                gpu_id=claim.gpu_id,
                worker_id=claim.worker_id,
                lease_id=int(lease["id"]),
                reason=status,
            )
    event(
        tx,
        f"job.{status}",
        job_id=claim.job_id,
        gpu_id=claim.gpu_id,
        worker_id=claim.worker_id,
        agent=claim.agent,
        attempt=claim.attempt,
        error=error,
    )
    return "recorded"


def retry(
    tx: Tx,
    claim: Claim,
    *,
    error: str,
    backoff_s: float,
    refund: bool = False,
    check_gpu: bool = True,
    release_reason: str = "retry",
) -> str | None:
    """End an attempt that the infrastructure failed: queue the job again, or fail it.

    Parameters
    ----------
    error
        Why the attempt ended; kept on the job and in the event.
    backoff_s
        The job is not claimed again before this many seconds.
    refund
        Give the attempt back (the worker is shutting down: not the job's fault).
    check_gpu
        Health-check the slot before its next lease.
    release_reason
        Recorded on the released lease.

    Returns
    -------
    str or None
        The job's new status (queued, failed or cancelled); None when the claim was lost.
    """
    row = tx.one(
        "retry_job", id=claim.job_id, token=claim.token, error=error, backoff_s=backoff_s, refund=int(refund)
    )
    if row is None:
        if not _already_finished(tx, claim):
            _discarded(tx, claim, "retry")
        return None
    if claim.gpu_id is not None:
        lease = tx.one("release_lease", job_id=claim.job_id, token=claim.token, reason=release_reason)
        if check_gpu:
            tx.execute("gpu_needs_check", gpu_id=claim.gpu_id)
        if lease is not None:
            event(
                tx,
                "lease.released",
                job_id=claim.job_id,
                gpu_id=claim.gpu_id,
                worker_id=claim.worker_id,
                lease_id=int(lease["id"]),
                reason=release_reason,
            )
    status = str(row["status"])
    event(
        tx,
        {"queued": "job.retry", "failed": "job.failed", "cancelled": "job.cancelled"}[status],
        job_id=claim.job_id,
        gpu_id=claim.gpu_id,
        worker_id=claim.worker_id,
        agent=claim.agent,
        error=error,
        attempts=int(row["attempts"]),
        max_attempts=int(row["max_attempts"]),
        refunded=refund,
    )
    return status


def reclaim_expired(tx: Tx, *, backoff_s: float, by_worker: str | None = None) -> list[dict[str, Any]]:
    """Take back every claim and lease whose deadline passed on the database's clock.

    Each job is queued again (its attempt counts), or failed when its attempts are spent, or
    cancelled when its owner asked; its slot is marked for a health check before the next lease.

    Returns
    -------
    list of dict
        One ``{id, status, attempts, worker_id, gpu_id, agent, error}`` per reclaimed job.
    """
    rows = [dict(r) for r in tx.all("reclaim_expired_jobs", backoff_s=backoff_s)]
    for r in rows:
        for lease in tx.all("release_job_leases", job_id=r["id"], reason="expired"):
            tx.execute("gpu_needs_check", gpu_id=lease["gpu_id"])
            event(
                tx,
                "lease.expired",
                job_id=r["id"],
                gpu_id=lease["gpu_id"],
                worker_id=lease["worker_id"],
                lease_id=int(lease["id"]),
                reclaimed_by=by_worker,
            )
        event(
            tx,
            "job.reclaimed",
            job_id=r["id"],
            gpu_id=r["gpu_id"],
            worker_id=r["worker_id"],
            agent=r["agent"],
            new_status=r["status"],
            attempts=int(r["attempts"]),
            max_attempts=int(r["max_attempts"]),
            error=r["error"],
            reclaimed_by=by_worker,
        )
        if r["status"] != "queued":
            event(tx, f"job.{r['status']}", job_id=r["id"], agent=r["agent"], error=r["error"])
    for lease in tx.all("release_expired_leases"):
        tx.execute("gpu_needs_check", gpu_id=lease["gpu_id"])
        event(
            tx,
            "lease.expired",
            job_id=lease["job_id"],
            gpu_id=lease["gpu_id"],
            worker_id=lease["worker_id"],
            lease_id=int(lease["id"]),
            reclaimed_by=by_worker,
            orphan=True,
        )
    return rows


def record_health(tx: Tx, *, gpu_id: str, ok: bool, reason: str | None, worker_id: str | None) -> str:
    """Store a health check's verdict; a sick slot is taken out of service with the reason.

    Returns the slot's status afterwards.
    """
    if ok:
        row = tx.one("gpu_healthy", gpu_id=gpu_id)
        status = str(row["status"]) if row else "missing"
        event(tx, "gpu.health_ok", gpu_id=gpu_id, worker_id=worker_id, status=status)
        return status
    text = f"health: {reason or 'failed its health check'}"
    tx.execute("gpu_out_of_service", gpu_id=gpu_id, reason=text)
    event(tx, "gpu.out_of_service", gpu_id=gpu_id, worker_id=worker_id, reason=text)
    return "out_of_service"


# ---------------------------------------------------------------------------------------------------
# Turning reports into rows


def run_params(report: EvalReport, solution_name: str) -> list[dict[str, Any]]:
    """``insert_run`` parameters for every trace of a report (the job and agent are added by finish)."""
    out = []
    for trace in report.traces:
        ev = trace.evaluation
        perf = ev.performance if ev else None
        out.append(
            {
                "problem": report.problem or trace.definition,
                "solution_name": trace.solution or solution_name,
                "workload_uuid": trace.workload.uuid,
                "status": str(ev.status) if ev else "UNKNOWN",
                "latency_ms": perf.latency_ms if perf else None,
                "sol_score": perf.sol_score if perf else None,
                "speedup": perf.speedup if perf else None,
                "hardware": ev.environment.hardware if ev else None,
                "trace_json": json.dumps(trace.to_json_dict()),
            }
        )
    return out


def submission_params(report: EvalReport, solution: Solution, *, agent: str) -> dict[str, Any]:
    """``insert_submission`` parameters: docs/design.md section 3's aggregation of a report.

    score: the mean SOL score over the workloads, failed ones (and CPU runs, which carry no score)
    counting 0. speedup: the geometric mean over the passed workloads that have one.
    """
    total = len(report.traces)
    scores: list[float] = []
    speedups: list[float | None] = []
    passed = 0
    for trace in report.traces:
        ev = trace.evaluation
        if ev is None or ev.status is not Status.PASSED:
            scores.append(0.0)
            continue
        passed += 1
        perf = ev.performance
        scores.append(float(perf.sol_score) if perf and perf.sol_score is not None else 0.0)
        if perf is not None:
            speedups.append(counted_speedup(perf.speedup, perf.baseline_latency_ms, perf.sol_latency_ms))
    return {
        "agent": agent,
        "problem": report.problem,
        "solution_name": solution.name,
        "solution_hash": solution.content_hash(),
        "score": sum(scores) / total if total else 0.0,
        "speedup": geomean_or_none(speedups),
        "passed": passed,
        "total": total,
        "hardware": report.device,
        "solution_json": json.dumps(solution.to_json_dict()),
    }


def record_baselines(tx: Tx, records: list[BaselineRecord], *, worker_id: str | None) -> None:
    """Keep baselines a judge measured; a key already kept stays as it was."""
    for record in records:
        tx.execute("insert_baseline", baseline_key=record.key, problem=record.problem, workload_uuid=record.workload,
                   hardware=record.hardware, record_json=record.model_dump_json(exclude={"source"}),
                   worker_id=worker_id)


def baselines_for(tx: Tx, problem: str) -> list[BaselineRecord]:
    """Every baseline kept for ``problem`` (a judge uses those whose key matches its own)."""
    out = []
    for row in tx.all("baselines_for_problem", problem=problem):
        try:
            out.append(BaselineRecord.model_validate_json(row["record_json"]))
        except ValueError:
            continue  # written by a newer solforge: this judge measures its own
    return out
