"""Many worker processes against one ledger: every job finishes exactly once, no slot is ever leased twice."""

from __future__ import annotations

import collections
import time
from pathlib import Path

import pytest
from support.ledger_helpers import (
    WorkerProcess,
    assert_no_overlapping_leases,
    pid_lines,
    terminate_all,
    wait_until,
)

from solforge.planner import Ledger
from solforge.planner.testing import fake_request

WORKERS = 8
JOBS = 200
SHARED_SLOTS = 4
"""Every worker serves the same four slots of one host, so all eight compete for each lease."""


@pytest.mark.slow
def test_eight_worker_processes_finish_two_hundred_jobs_exactly_once(db_url: str, tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    with Ledger.open(db_url) as ledger:
        agents = [f"agent{i}" for i in range(4)]
        for a in agents:
            ledger.ensure_agent(a)
        jobs = []
        for i in range(JOBS):
            kind = "compile" if i % 4 == 3 else "benchmark"
            request = fake_request("p", name=f"s{i}", pid_file=str(pids))
            jobs.append(ledger.enqueue(agents[i % len(agents)], kind, request, priority=i % 3))
        workers = [
            WorkerProcess(
                db_url,
                tmp_path,
                name=str(i),
                host="shared",
                cpu_slots=SHARED_SLOTS,
                compile_slots=1,
                lease_s=10,
                heartbeat_s=0.5,
                poll_s=0.05,
            )
            for i in range(WORKERS)
        ]
        try:
            worker_ids = {w.wait_ready() for w in workers}
            started = time.monotonic()

            def all_finished() -> bool:
                return ledger.queue_stats().queued == {} and ledger.queue_stats().running == {}

            wait_until(all_finished, timeout_s=180, interval_s=0.25, what="the queue to drain")
            elapsed = time.monotonic() - started
        finally:
            codes = terminate_all(workers)
        assert codes == [0] * WORKERS, [w.log()[-2000:] for w in workers]

        views = [ledger.get_job(j.id, j.agent) for j in jobs]
        assert collections.Counter(v.status for v in views) == {"done": JOBS}
        assert all(v.attempts == 1 for v in views)
        done_events = collections.Counter(e.job_id for e in _all_events(ledger) if e.kind == "job.done")
        assert set(done_events.values()) == {1} and len(done_events) == JOBS
        runs = collections.Counter(
            r.job_id for v in views if v.kind == "benchmark" for r in ledger.job_runs(v.id, v.agent)
        )
        assert len(runs) == 150 and set(runs.values()) == {1}
        started_processes = collections.Counter(job_id for _, job_id, _ in pid_lines(pids))
        assert len(started_processes) == JOBS and set(started_processes.values()) == {1}  # each ran once

        assert assert_no_overlapping_leases(ledger) == 150
        assert {lease.release_reason for lease in ledger.lease_history()} == {"done"}
        served_by = collections.Counter(v.worker_id for v in views)
        assert set(served_by) <= worker_ids and len(served_by) >= 4, served_by
        assert elapsed < 120


def _all_events(ledger: Ledger) -> list:
    events, after = [], 0
    while batch := ledger.events(after_id=after, limit=5000):
        events += batch
        after = batch[-1].id
    return events
