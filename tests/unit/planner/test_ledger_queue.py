"""Claims, leases, fairness, retries and reclaiming, driven step by step (no worker threads)."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

from solforge.planner import Ledger
from solforge.planner.ledger import queue as q
from solforge.planner.ledger.db import Tx
from solforge.planner.testing import fake_request

LEASE_S = 30.0


def _register_slot(ledger: Ledger, gpu_id: str = "h/cpu:0") -> str:
    def fn(tx: Tx) -> None:
        tx.execute(
            "upsert_gpu",
            id=gpu_id,
            host="h",
            device_index=int(gpu_id[-1]),
            kind="cpu",
            name="cpu",
            uuid=None,
            worker_id="test",
        )
        q.record_health(tx, gpu_id=gpu_id, ok=True, reason=None, worker_id="test")

    ledger.connector.run(fn)
    return gpu_id


def _claim(
    ledger: Ledger, gpu_id: str | None, worker: str = "w", *, window_s: float = 600.0
) -> q.Claim | None:
    return ledger.connector.run(
        lambda tx: q.claim_next(
            tx,
            worker_id=worker,
            gpu_id=gpu_id,
            slot_kind="cpu" if gpu_id else None,
            token=uuid.uuid4().hex,
            lease_s=LEASE_S,
            fair_window_s=window_s,
        ),
        retry_s=0,
    )


def _done(ledger: Ledger, claim: q.Claim) -> str:
    return ledger.connector.run(lambda tx: q.finish(tx, claim, status="done", result_json=None, error=None))


def test_racing_workers_claim_one_job_exactly_once(ledger: Ledger) -> None:
    gpus = [_register_slot(ledger, f"h/cpu:{i}") for i in range(8)]
    job = ledger.enqueue("alice", "benchmark", fake_request())
    barrier = threading.Barrier(8)
    won: list[q.Claim] = []

    def race(gpu: str) -> None:
        barrier.wait()
        claim = _claim(ledger, gpu, worker=gpu)
        if claim:
            won.append(claim)

    threads = [threading.Thread(target=race, args=(g,)) for g in gpus]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(won) == 1 and won[0].job_id == job.id
    assert [e.kind for e in ledger.events(job_id=job.id)].count("job.claimed") == 1


def test_racing_workers_never_lease_one_slot_twice(ledger: Ledger) -> None:
    gpu = _register_slot(ledger)
    for _ in range(8):
        ledger.enqueue("alice", "benchmark", fake_request())
    barrier = threading.Barrier(8)
    won: list[q.Claim] = []

    def race(i: int) -> None:
        barrier.wait()
        try:
            claim = _claim(ledger, gpu, worker=f"w{i}")
        except Exception:  # a unique-index refusal is a lost race, as for the worker
            return
        if claim:
            won.append(claim)

    threads = [threading.Thread(target=race, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(won) == 1
    assert sum(1 for lease in ledger.lease_history() if lease.released_at is None) == 1
    assert _claim(ledger, gpu) is None  # busy until released
    assert _done(ledger, won[0]) == "recorded"
    assert _claim(ledger, gpu) is not None


def test_fairness_interleaves_a_flooding_agent_with_the_others(ledger: Ledger) -> None:
    gpu = _register_slot(ledger)

    def enqueue(agent: str, name: str, priority: int = 0) -> Any:
        # Ages are the database's clock, in milliseconds on SQLite: jobs queued within one millisecond are
        # equally old and their order is the id's. Spaced out, each job has an age of its own.
        time.sleep(0.002)
        return ledger.enqueue(agent, "benchmark", fake_request(name=name), priority=priority)

    flood = [enqueue("alice", f"a{i}") for i in range(10)]
    late = [enqueue("bob", f"b{i}") for i in range(2)]
    urgent = enqueue("alice", "a-urgent", priority=10)
    order = []
    while (claim := _claim(ledger, gpu)) is not None:
        order.append(claim.job_id)
        _done(ledger, claim)
    names = {j.id: j.solution_name for j in [*flood, *late, urgent]}
    # alice's urgent job jumps her own queue, never bob's turn
    assert [names[i] for i in order[:6]] == ["a-urgent", "b0", "a0", "b1", "a1", "a2"]
    assert len(order) == 13


def test_fairness_counts_running_jobs_first(ledger: Ledger) -> None:
    gpus = [_register_slot(ledger, f"h/cpu:{i}") for i in range(3)]
    for i in range(3):
        ledger.enqueue("alice", "benchmark", fake_request(name=f"a{i}"))
    ledger.enqueue("bob", "benchmark", fake_request(name="b0"))
    got = [_claim(ledger, g, window_s=0.0) for g in gpus]
    assert [c.agent for c in got if c] == ["alice", "bob", "alice"]


def test_compile_jobs_take_no_lease(ledger: Ledger) -> None:
    ledger.enqueue("alice", "compile", fake_request())
    assert _claim(ledger, _register_slot(ledger)) is None  # a slot never takes a compile job
    claim = _claim(ledger, None)
    assert claim is not None and claim.kind == "compile" and claim.lease_id is None
    assert ledger.lease_history() == []


def test_an_expired_claim_is_requeued_then_failed_when_attempts_run_out(ledger: Ledger) -> None:
    gpu = _register_slot(ledger)
    job = ledger.enqueue("alice", "benchmark", fake_request(), max_attempts=2)
    for attempt in (1, 2):
        claim = _claim(ledger, gpu)
        assert claim is not None and claim.attempt == attempt
        _expire_everything(ledger)
        assert ledger.reclaim_expired() == 1
        assert ledger.gpus()[0].needs_check  # health-checked before the next lease
        assert _claim(ledger, gpu) is None
        _register_slot(ledger)  # the health check
    view = ledger.get_job(job.id, "alice")
    assert (
        view.status == "failed" and "lease expired" in (view.error or "") and "attempt 2 of 2" in view.error
    )
    kinds = [e.kind for e in ledger.events(job_id=job.id)]
    assert (
        kinds.count("lease.expired") == 2 and kinds.count("job.reclaimed") == 2 and kinds[-1] == "job.failed"
    )
    assert all(lease.release_reason == "expired" for lease in ledger.lease_history())


def test_a_fenced_out_worker_changes_nothing(ledger: Ledger) -> None:
    """A forward jump of the database clock expires a live claim: its holder can then write nothing."""
    gpu = _register_slot(ledger)
    job = ledger.enqueue("alice", "benchmark", fake_request())
    stale = _claim(ledger, gpu, worker="stale")
    assert stale is not None
    _expire_everything(ledger)
    ledger.reclaim_expired()
    _register_slot(ledger)
    fresh = _claim(ledger, gpu, worker="fresh")
    assert fresh is not None and fresh.attempt == 2
    beat = ledger.connector.run(lambda tx: q.heartbeat(tx, stale, lease_s=LEASE_S, progress_json=None))
    assert not beat.alive
    assert _done(ledger, stale) == "lost"
    assert ledger.connector.run(lambda tx: q.retry(tx, stale, error="x", backoff_s=0)) is None
    assert _done(ledger, fresh) == "recorded"
    assert _done(ledger, fresh) == "already"  # a retried commit is recognised
    kinds = [e.kind for e in ledger.events(job_id=job.id)]
    assert kinds.count("job.done") == 1 and kinds.count("job.result_discarded") == 2
    assert ledger.get_job(job.id, "alice").worker_id == "fresh"


def test_cancel_of_a_running_job_is_seen_by_its_heartbeat(ledger: Ledger) -> None:
    gpu = _register_slot(ledger)
    job = ledger.enqueue("alice", "benchmark", fake_request())
    claim = _claim(ledger, gpu)
    assert claim is not None
    assert ledger.cancel_job(job.id, "alice").cancel_requested
    beat = ledger.connector.run(
        lambda tx: q.heartbeat(tx, claim, lease_s=LEASE_S, progress_json='{"message":"x"}')
    )
    assert beat.alive and beat.cancel_requested
    assert ledger.get_job(job.id, "alice").progress.message == "x"  # type: ignore[union-attr]
    ledger.connector.run(
        lambda tx: q.finish(tx, claim, status="cancelled", result_json=None, error="by owner")
    )
    assert ledger.get_job(job.id, "alice").status == "cancelled"


def test_a_cancelled_job_whose_worker_died_ends_cancelled(ledger: Ledger) -> None:
    gpu = _register_slot(ledger)
    job = ledger.enqueue("alice", "benchmark", fake_request())
    assert _claim(ledger, gpu) is not None
    ledger.cancel_job(job.id, "alice")
    _expire_everything(ledger)
    ledger.reclaim_expired()
    assert ledger.get_job(job.id, "alice").status == "cancelled"


def test_gpu_utilisation_counts_leased_time(ledger: Ledger) -> None:
    gpu = _register_slot(ledger)
    ledger.enqueue("alice", "benchmark", fake_request())
    claim = _claim(ledger, gpu)
    assert claim is not None
    _done(ledger, claim)
    (util,) = ledger.gpu_utilisation(window_s=60)
    assert util.gpu_id == gpu and util.leases == 1 and 0 <= util.busy_s < 5 and 0 <= util.utilisation < 0.1
    stats = ledger.queue_stats()
    assert stats.started == 1 and stats.finished == {"done": 1}


def _expire_everything(ledger: Ledger) -> None:
    """As if the database clock jumped an hour forward."""
    with ledger.connector.transaction() as tx:
        tx.conn.exec_driver_sql("UPDATE job SET deadline_at = deadline_at - 3600 WHERE status = 'running'")
        tx.conn.exec_driver_sql("UPDATE lease SET deadline_at = deadline_at - 3600 WHERE released_at IS NULL")
