"""Faults with real processes: a worker SIGKILLed mid-job, a database restart, and reopening the ledger."""

from __future__ import annotations

import collections
import re
import time
from pathlib import Path

import pytest
from support.ledger_helpers import (
    WorkerProcess,
    assert_no_overlapping_leases,
    pid_alive,
    pid_lines,
    terminate_all,
    wait_until,
)

from solforge.planner import Ledger
from solforge.planner.testing import fake_request

LEASE_S = 3.0
HEARTBEAT_S = 0.25
OUTAGE_S = 2.0  # several 0.15 s jobs and heartbeats long


def _snapshot(ledger: Ledger, job_ids: list[str], agent: str) -> dict[str, object]:
    return {
        "jobs": [ledger.get_job(j, agent).model_dump() for j in job_ids],
        "runs": [[r.model_dump() for r in ledger.job_runs(j, agent)] for j in job_ids],
        "events": [e.model_dump() for e in ledger.events(limit=100_000)],
        "leases": [lease.model_dump() for lease in ledger.lease_history()],
        "board": [e.model_dump() for e in ledger.leaderboard("p")],
    }


@pytest.mark.slow
def test_a_sigkilled_worker_loses_its_lease_and_the_job_finishes_elsewhere(
    db_url: str, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    options = {
        "host": "h",
        "cpu_slots": 1,
        "compile_slots": 0,
        "lease_s": LEASE_S,
        "heartbeat_s": HEARTBEAT_S,
    }
    with Ledger.open(db_url) as ledger:
        ledger.ensure_agent("alice")
        doomed = WorkerProcess(db_url, tmp_path, name="doomed", **options)
        doomed_id = doomed.wait_ready()
        job = ledger.enqueue("alice", "submit", fake_request("p", hang_attempts=1, pid_file=str(pids)))
        wait_until(lambda: pid_lines(pids), what="the job to start")
        assert ledger.get_job(job.id, "alice").worker_id == doomed_id
        # The survivor serves the same slot: it must wait for the dead worker's lease to expire.
        survivor = WorkerProcess(db_url, tmp_path, name="survivor", **options)
        survivor_id = survivor.wait_ready()
        killed_at = ledger.now()
        doomed.kill()
        ((child_pid, _, _),) = pid_lines(pids)
        wait_until(
            lambda: not pid_alive(child_pid), timeout_s=5, what="the job's process to die with its worker"
        )
        try:
            view = ledger.wait_job(job.id, "alice", timeout_s=LEASE_S + 30)
        finally:
            assert terminate_all([survivor]) == [0], survivor.log()[-3000:]
        assert view.status == "done" and view.attempts == 2 and view.worker_id == survivor_id

        events = ledger.events(job_id=job.id)
        expired = next(e for e in events if e.kind == "lease.expired")
        reclaimed = next(e for e in events if e.kind == "job.reclaimed")
        assert expired.worker_id == doomed_id and reclaimed.detail["reclaimed_by"] == survivor_id
        # reclaimed within its lease time (plus one maintenance tick and scheduling slack)
        assert reclaimed.at.timestamp() - killed_at <= LEASE_S + 2 * HEARTBEAT_S + 1.0
        gpu_events = [e.kind for e in ledger.events() if e.gpu_id == "h/cpu:0"]
        after_expiry = gpu_events[gpu_events.index("lease.expired") :]
        assert after_expiry.index("gpu.health_ok") < after_expiry.index("lease.acquired")
        assert [e.kind for e in events].count("job.done") == 1
        assert assert_no_overlapping_leases(ledger) == 2
        assert len(ledger.leaderboard("p")) == 1
        before = _snapshot(ledger, [job.id], "alice")
    with Ledger.open(db_url) as reopened:  # a restart of the server process loses nothing
        assert _snapshot(reopened, [job.id], "alice") == before


@pytest.mark.slow
@pytest.mark.postgres
def test_a_database_restart_loses_no_job_and_runs_none_twice(
    pg_server: object, pg_url: str, tmp_path: Path
) -> None:
    cluster = getattr(pg_server, "cluster", None)
    if cluster is None:
        pytest.skip("the PostgreSQL server comes from SOLFORGE_TEST_PG_URL; the test cannot restart it")
    pids = tmp_path / "pids"
    with Ledger.open(pg_url, retry_s=30.0) as ledger:
        ledger.ensure_agent("alice")
        jobs = [
            ledger.enqueue("alice", "benchmark", fake_request("p", sleep_s=0.15, pid_file=str(pids)))
            for _ in range(24)
        ]
        workers = [
            WorkerProcess(
                pg_url,
                tmp_path,
                name=str(i),
                host=f"h{i}",
                cpu_slots=2,
                compile_slots=0,
                lease_s=LEASE_S * 2,
                heartbeat_s=HEARTBEAT_S,
            )
            for i in range(2)
        ]
        try:
            for w in workers:
                w.wait_ready()
            wait_until(lambda: len(pid_lines(pids)) >= 6, what="some jobs to run")
            # Every connection dies while jobs are running. The server stays down for several job
            # lengths, so each worker must try to record a result during the outage (a quick restart
            # can fall between two of a worker's queries, and its pool then reconnects silently).
            started_before_outage = len(pid_lines(pids))
            cluster.stop("fast")
            time.sleep(OUTAGE_S)
            cluster.start()
            wait_until(
                lambda: all(ledger.get_job(j.id, "alice").finished for j in jobs),
                timeout_s=90,
                what="all jobs",
            )
        finally:
            codes = terminate_all(workers)
        logs = [w.log() for w in workers]
        assert codes == [0, 0], [log[-3000:] for log in logs]
        assert started_before_outage < len(jobs)  # the queue was still being worked through
        # The outage really hit both workers (a retried query, a failed heartbeat or a failed claim).
        outage = re.compile(r"ledger unavailable|lost the database connection|the database is unavailable")
        assert all(outage.search(log) for log in logs), [log[-3000:] for log in logs]
        views = [ledger.get_job(j.id, "alice") for j in jobs]
        assert collections.Counter(v.status for v in views) == {"done": len(jobs)}
        done = collections.Counter(e.job_id for e in ledger.events(limit=100_000) if e.kind == "job.done")
        assert set(done.values()) == {1} and len(done) == len(jobs)
        assert all(len(ledger.job_runs(v.id, "alice")) == 1 for v in views)
        assert assert_no_overlapping_leases(ledger) >= len(jobs)
