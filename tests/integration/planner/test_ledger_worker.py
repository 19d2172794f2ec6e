"""In-process workers running real child processes: results, retries, cancellation, hangs, sick slots."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from support.ledger_helpers import assert_no_overlapping_leases, pid_alive, pid_lines, wait_until

from solforge.planner import (
    HealthReport,
    JobResult,
    JobSpec,
    Ledger,
    Slot,
    Worker,
    WorkerConfig,
)
from solforge.planner.testing import InstantRunner, fake_request, fake_runner


def _worker(
    ledger: Ledger, config: WorkerConfig, runner: object = None, *, slots: int = 1, **kw: object
) -> Worker:
    return Worker(
        ledger,
        runner or fake_runner(),  # type: ignore[arg-type]
        slots=[Slot(host="h", kind="cpu", index=i, name="cpu") for i in range(slots)],
        compile_slots=kw.pop("compile_slots", 1),  # type: ignore[arg-type]
        host="h",
        config=config,
        **kw,  # type: ignore[arg-type]
    )


def test_jobs_run_and_their_results_are_recorded(ledger: Ledger, fast_config: WorkerConfig) -> None:
    with _worker(ledger, fast_config, slots=2):
        bench = ledger.enqueue("alice", "benchmark", fake_request("p", workloads=3, steps=3, sleep_s=0.3))
        comp = ledger.enqueue("alice", "compile", fake_request("p"))
        sub = ledger.enqueue("bob", "submit", fake_request("p", sol_score=0.75, speedup=1.5))
        views = [ledger.wait_job(j.id, j.agent, timeout_s=30) for j in (bench, comp, sub)]
    assert [v.status for v in views] == ["done", "done", "done"]
    assert views[0].report is not None and views[0].report.all_passed and len(views[0].report.traces) == 3
    assert views[0].progress is not None and views[0].progress.total == 3
    assert views[0].gpu_id == "h/cpu:0" or views[0].gpu_id == "h/cpu:1"
    assert views[1].build is not None and views[1].build.ok and views[1].gpu_id is None
    assert [r.workload_uuid for r in ledger.job_runs(bench.id, "alice")] == ["w0", "w1", "w2"]
    (entry,) = ledger.leaderboard("p")
    assert entry.agent == "bob" and entry.score == pytest.approx(0.75) and entry.job_id == sub.id
    assert assert_no_overlapping_leases(ledger) == 2
    kinds = [e.kind for e in ledger.events()]
    assert kinds.count("worker.started") == 1 and kinds.count("worker.stopped") == 1
    (worker,) = ledger.workers()
    assert worker.stopped_at is not None and worker.slots == ["h/cpu:0", "h/cpu:1"] and worker.host == "h"


def test_a_failing_candidate_is_a_result_not_a_retry(ledger: Ledger, fast_config: WorkerConfig) -> None:
    with _worker(ledger, fast_config):
        job = ledger.enqueue("alice", "benchmark", fake_request(status="INCORRECT_NUMERICAL"))
        view = ledger.wait_job(job.id, "alice", timeout_s=30)
    assert view.status == "done" and view.attempts == 1 and view.report is not None
    assert not view.report.all_passed
    assert [r.status for r in ledger.job_runs(job.id, "alice")] == ["INCORRECT_NUMERICAL"]


def test_infrastructure_failures_are_retried_then_fail_with_the_reason(
    ledger: Ledger, fast_config: WorkerConfig
) -> None:
    with _worker(ledger, fast_config):
        flaky = ledger.enqueue("alice", "benchmark", fake_request(fail_attempts=1))
        broken = ledger.enqueue("alice", "benchmark", fake_request(fail_attempts=99), max_attempts=2)
        garbage = ledger.enqueue("alice", "benchmark", fake_request(garbage=True), max_attempts=1)
        views = [ledger.wait_job(j.id, "alice", timeout_s=30) for j in (flaky, broken, garbage)]
    assert (views[0].status, views[0].attempts) == ("done", 2)
    assert (views[1].status, views[1].attempts) == ("failed", 2)
    assert "exited with status 3" in (views[1].error or "") and "on purpose" in (views[1].error or "")
    assert views[2].status == "failed" and "without a report" in (views[2].error or "")
    kinds = [e.kind for e in ledger.events(job_id=broken.id)]
    assert kinds.count("job.retry") == 1 and kinds[-1] == "job.failed"


def test_cancelling_a_running_job_kills_its_process(
    ledger: Ledger, fast_config: WorkerConfig, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    with _worker(ledger, fast_config):
        job = ledger.enqueue("alice", "benchmark", fake_request(hang=True, pid_file=str(pids)))
        wait_until(lambda: pid_lines(pids), what="the job's process")
        ((pid, _, _),) = pid_lines(pids)
        started = time.monotonic()
        ledger.cancel_job(job.id, "alice")
        view = ledger.wait_job(job.id, "alice", timeout_s=10)
        assert view.status == "cancelled" and "owner" in (view.error or "")
        assert time.monotonic() - started < 3.0
    assert not pid_alive(pid)
    assert ledger.lease_history()[0].release_reason == "cancelled"


def test_a_hung_job_is_killed_at_its_time_limit_and_its_slot_rechecked(
    ledger: Ledger, fast_config: WorkerConfig, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    checks: list[str] = []

    def health(slot: Slot) -> HealthReport:
        checks.append(slot.id)
        return HealthReport(True)

    with _worker(ledger, fast_config, health_check=health):
        job = ledger.enqueue(
            "alice",
            "benchmark",
            fake_request(hang=True, ignore_term=True, pid_file=str(pids)),
            timeout_s=0.5,
            max_attempts=2,
        )
        view = ledger.wait_job(job.id, "alice", timeout_s=30)
    assert view.status == "failed" and view.attempts == 2 and "exceeded its 0.5s limit" in (view.error or "")
    assert len(pid_lines(pids)) == 2 and not any(pid_alive(p) for p, _, _ in pid_lines(pids))
    assert len(checks) >= 2  # at start, and again before the second lease


def test_a_runner_that_ignores_cancel_loses_its_lease_instead_of_holding_it(
    ledger: Ledger, tmp_path: Path
) -> None:
    release = threading.Event()

    class Stubborn:
        def __init__(self) -> None:
            self.instant = InstantRunner()

        def run(self, job: JobSpec, heartbeat: object, cancel: threading.Event) -> JobResult:
            if job.attempt == 1:
                release.wait(20)  # ignores cancel, as a process stuck in the driver would
            return self.instant.run(job, heartbeat, cancel)  # type: ignore[arg-type]

    config = WorkerConfig(lease_s=1.0, heartbeat_s=0.1, poll_s=0.02, retry_backoff_s=0, kill_grace_s=0.3)
    with _worker(ledger, config, Stubborn(), slots=2):
        job = ledger.enqueue("alice", "benchmark", fake_request(), timeout_s=0.3)
        view = ledger.wait_job(job.id, "alice", timeout_s=30)
        assert view.status == "done" and view.attempts == 2
        release.set()
        wait_until(
            lambda: "job.result_discarded" in [e.kind for e in ledger.events(job_id=job.id)],
            what="the stale attempt's result to be discarded",
        )
    kinds = [e.kind for e in ledger.events(job_id=job.id)]
    assert "lease.expired" in kinds and kinds.count("job.done") == 1
    assert assert_no_overlapping_leases(ledger) == 2


def test_a_sick_slot_is_taken_out_of_service(ledger: Ledger, fast_config: WorkerConfig) -> None:
    def health(slot: Slot) -> HealthReport:
        return HealthReport(False, "Xid 79: fell off the bus") if slot.index == 0 else HealthReport(True)

    with _worker(ledger, fast_config, slots=2, health_check=health):
        jobs = [ledger.enqueue("alice", "benchmark", fake_request()) for _ in range(4)]
        views = [ledger.wait_job(j.id, "alice", timeout_s=30) for j in jobs]
        assert {v.gpu_id for v in views} == {"h/cpu:1"}
        sick = {g.id: g for g in ledger.gpus()}["h/cpu:0"]
        assert sick.status == "out_of_service" and sick.status_reason == "health: Xid 79: fell off the bus"
        ledger.set_gpu_service("h/cpu:0", in_service=True)  # checked again before its next lease
        more = [ledger.enqueue("alice", "benchmark", fake_request(sleep_s=0.5)) for _ in range(4)]
        wait_until(
            lambda: {g.id: g for g in ledger.gpus()}["h/cpu:0"].status == "out_of_service", what="recheck"
        )
        assert {ledger.wait_job(j.id, "alice", timeout_s=30).gpu_id for j in more} == {"h/cpu:1"}
    ledger.set_gpu_service("h/cpu:1", in_service=False, reason="maintenance")
    assert {g.id: g.status_reason for g in ledger.gpus()}["h/cpu:1"] == "operator: maintenance"
    with _worker(ledger, fast_config, slots=2, health_check=lambda s: HealthReport(True)):
        # a restart re-checks a slot the health check took out, but not one an operator took out
        wait_until(
            lambda: (
                {g.id: g.status for g in ledger.gpus()}
                == {"h/cpu:0": "available", "h/cpu:1": "out_of_service"}
            )
        )


def test_shutdown_requeues_running_jobs_without_spending_an_attempt(
    ledger: Ledger, fast_config: WorkerConfig, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    worker = _worker(ledger, fast_config)
    worker.start()
    job = ledger.enqueue("alice", "benchmark", fake_request(hang_attempts=0, hang=True, pid_file=str(pids)))
    wait_until(lambda: pid_lines(pids), what="the job to start")
    worker.stop(timeout_s=10)
    view = ledger.get_job(job.id, "alice")
    assert view.status == "queued" and view.attempts == 0 and "shut down" in (view.error or "")
    assert not pid_alive(pid_lines(pids)[0][0])
    assert ledger.lease_history()[0].release_reason == "shutdown"


def test_a_runner_that_raises_is_an_infrastructure_error(ledger: Ledger, fast_config: WorkerConfig) -> None:
    class Broken:
        def run(self, job: JobSpec, heartbeat: object, cancel: threading.Event) -> JobResult:
            raise RuntimeError("harness bug")

    with _worker(ledger, fast_config, Broken()):
        job = ledger.enqueue("alice", "benchmark", fake_request(), max_attempts=2)
        view = ledger.wait_job(job.id, "alice", timeout_s=30)
    assert view.status == "failed" and "RuntimeError: harness bug" in (view.error or "")
