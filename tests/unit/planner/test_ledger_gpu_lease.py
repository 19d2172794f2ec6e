"""GPU leases that cover GPU work only, two lanes per GPU slot, and baselines shared through the ledger."""

from __future__ import annotations

import dataclasses
import itertools
import os
import threading
import time

from support.ledger_helpers import assert_no_overlapping_leases

from solforge.planner import HealthReport, JobResult, JobSpec, Ledger, Slot, Worker, WorkerConfig
from solforge.planner.testing import InstantRunner, fake_request
from solforge.planner.workers.worker import default_lanes_per_gpu
from solforge.sandbox.api import BaselineRecord


class GatedRunner(InstantRunner):
    """Spends ``prepare_s`` before the lease (a build) and ``gpu_s`` inside it, and records both spans."""

    leases_gpu_work = True

    def __init__(self, prepare_s: float, gpu_s: float) -> None:
        super().__init__()
        self.prepare_s, self.gpu_s = prepare_s, gpu_s
        self.spans: list[tuple[str, float, float, float]] = []  # job, prepare start, lease start, lease end
        self.lock = threading.Lock()
        self.seen_baselines: list[list[BaselineRecord]] = []

    def run(self, job: JobSpec, heartbeat: object, cancel: threading.Event) -> JobResult:
        assert job.gpu_lease is not None, "a gated runner gets the lease gate for a slot job"
        started = time.time()
        if cancel.wait(self.prepare_s):
            return JobResult.cancelled()
        with job.gpu_lease():
            leased = time.time()
            cancel.wait(self.gpu_s)
            ended = time.time()
        with self.lock:
            self.spans.append((job.id, started, leased, ended))
            self.seen_baselines.append(list(job.request.baselines))
        result = super().run(job, heartbeat, cancel)  # type: ignore[arg-type]
        assert result.report is not None
        report = result.report.model_copy(update={"baselines": [BaselineRecord(
            key=f"k-{job.problem}", problem=job.problem, workload="w0", hardware="cpu", eager_ms=1.0, baseline_ms=1.0)]})
        return JobResult.done(report)


def _gpu_worker(ledger: Ledger, config: WorkerConfig, runner: object) -> Worker:
    return Worker(ledger, runner, slots=[Slot(host="h", kind="cuda", index=0, name="fake GPU")],  # type: ignore[arg-type]
                  compile_slots=0, host="h", config=config, health_check=lambda slot: HealthReport(ok=True))


def test_leases_cover_only_the_gpu_work_and_two_lanes_overlap_their_builds(
        ledger: Ledger, fast_config: WorkerConfig) -> None:
    runner = GatedRunner(prepare_s=0.6, gpu_s=0.3)
    with _gpu_worker(ledger, fast_config, runner):
        jobs = [ledger.enqueue("alice", "benchmark", fake_request("p")) for _ in range(4)]
        views = [ledger.wait_job(j.id, "alice", timeout_s=30) for j in jobs]
    assert [v.status for v in views] == ["done"] * 4
    assert assert_no_overlapping_leases(ledger) == 4
    for lease in ledger.lease_history():
        held = lease.released_at.timestamp() - lease.acquired_at.timestamp()  # type: ignore[union-attr]
        assert 0.25 < held < 0.55, f"a lease held {held:.2f} s for 0.3 s of GPU work (0.6 s of build before it)"
    spans = sorted(runner.spans, key=lambda s: s[1])
    # Two lanes: a job's build ran while another job held the GPU.
    assert any(a[1] < b[2] and b[1] < a[3] for a, b in itertools.pairwise(spans)), spans


def test_a_job_cancelled_while_it_waits_for_the_lease_never_takes_it(ledger: Ledger, fast_config: WorkerConfig) -> None:
    runner = GatedRunner(prepare_s=0.0, gpu_s=1.5)
    with _gpu_worker(ledger, fast_config, runner):
        first = ledger.enqueue("alice", "benchmark", fake_request("p"))
        time.sleep(0.3)
        second = ledger.enqueue("bob", "benchmark", fake_request("p"))
        time.sleep(0.3)  # the second lane has claimed it and waits for the lease
        ledger.cancel_job(second.id, "bob")
        done = ledger.wait_job(first.id, "alice", timeout_s=30)
        cancelled = ledger.wait_job(second.id, "bob", timeout_s=30)
    assert done.status == "done" and cancelled.status == "cancelled"
    assert [lease.job_id for lease in ledger.lease_history()] == [first.id]


def test_measured_baselines_are_kept_and_handed_to_the_next_job(ledger: Ledger, fast_config: WorkerConfig) -> None:
    runner = GatedRunner(prepare_s=0.0, gpu_s=0.0)
    with _gpu_worker(ledger, fast_config, runner):
        for _ in range(2):
            job = ledger.enqueue("alice", "benchmark", fake_request("p"))
            assert ledger.wait_job(job.id, "alice", timeout_s=30).status == "done"
    assert runner.seen_baselines[0] == []
    (known,) = runner.seen_baselines[1]
    assert known.key == "k-p" and known.baseline_ms == 1.0 and known.problem == "p"


def test_lanes_per_gpu_follow_the_hosts_cpus_per_gpu() -> None:
    assert default_lanes_per_gpu(16, 1) == 8  # the H200 machine: 0.95 lease utilisation with 8 lanes
    assert default_lanes_per_gpu(2, 1) == 2  # never fewer than two: one loads while one is timed
    assert default_lanes_per_gpu(256, 1) == 8
    assert default_lanes_per_gpu(64, 8) == 4
    assert default_lanes_per_gpu(16, 0) == 8


def test_a_gpu_worker_starts_its_lanes_and_records_them(ledger: Ledger, fast_config: WorkerConfig) -> None:
    auto = dataclasses.replace(fast_config, lanes_per_gpu=None)
    with _gpu_worker(ledger, auto, GatedRunner(prepare_s=0.0, gpu_s=0.0)) as worker:
        slot_id = worker.slots[0].id
        threads = [t for t in worker._threads if t.name.startswith(f"solforge-slot-{slot_id}-")]
    expected = default_lanes_per_gpu(len(os.sched_getaffinity(0)), 1)
    assert len(threads) == expected
    (started,) = [e for e in ledger.events(limit=1000) if e.kind == "worker.started"]
    assert started.detail["lanes"] == {slot_id: expected}

    three = dataclasses.replace(fast_config, lanes_per_gpu=3)
    with _gpu_worker(ledger, three, GatedRunner(prepare_s=0.0, gpu_s=0.0)) as worker:
        assert len([t for t in worker._threads if t.name.startswith("solforge-slot-")]) == 3
