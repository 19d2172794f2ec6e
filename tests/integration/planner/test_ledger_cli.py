"""run_worker_cli, the body of ``solforge worker``."""

from __future__ import annotations

import threading
from pathlib import Path

from solforge.planner import Ledger, WorkerConfig
from solforge.planner.testing import fake_request, fake_runner
from solforge.server.cli_worker import run_worker_cli


def test_bad_arguments_and_unreachable_ledgers_exit_non_zero(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    assert run_worker_cli(url, [99]) == 2  # no such GPU on this host
    assert run_worker_cli("mysql://nowhere/db", None) == 1


def test_the_worker_serves_until_stopped(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    stop = threading.Event()
    codes: list[int] = []
    config = WorkerConfig(lease_s=2.0, heartbeat_s=0.1, poll_s=0.02, retry_backoff_s=0.0)
    with Ledger.open(url) as ledger:
        ledger.ensure_agent("alice")
        thread = threading.Thread(
            target=lambda: codes.append(
                run_worker_cli(
                    url,
                    [],
                    cpu_slots=1,
                    compile_slots=1,
                    host="cli",
                    runner=fake_runner(),
                    config=config,
                    stop_event=stop,
                )
            )
        )
        thread.start()
        try:
            job = ledger.enqueue("alice", "benchmark", fake_request())
            view = ledger.wait_job(job.id, "alice", timeout_s=30)
        finally:
            stop.set()
            thread.join(30)
        assert view.status == "done" and view.gpu_id == "cli/cpu:0"
        assert codes == [0]
        assert [e.kind for e in ledger.events() if e.kind.startswith("worker.")] == [
            "worker.started",
            "worker.stopped",
        ]
