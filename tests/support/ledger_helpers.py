"""Helpers shared by the planner tests (imported as a plain module: pytest puts this folder on sys.path)."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from solforge.planner import Ledger

T = TypeVar("T")


def wait_until(
    predicate: Callable[[], T], *, timeout_s: float = 30.0, interval_s: float = 0.05, what: str = ""
) -> T:
    """Poll ``predicate`` until it returns something truthy; fail the test after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what or predicate}")
        time.sleep(interval_s)


class WorkerProcess:
    """``python -m solforge.planner.testing worker`` as a real child process."""

    def __init__(self, db_url: str, log_dir: Path, *, name: str, **options: object) -> None:
        self.log_path = log_dir / f"worker-{name}.log"
        argv = [sys.executable, "-m", "solforge.planner.testing", "worker", "--db", db_url]
        for key, value in options.items():
            argv += [f"--{key.replace('_', '-')}", str(value)]
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in wait()/kill()
        self.proc = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=self._log, start_new_session=True
        )
        self.worker_id: str | None = None
        self._signalled = False

    @property
    def pid(self) -> int:
        return self.proc.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_ready(self, timeout_s: float = 60.0) -> str:
        """Wait until the worker registered; returns its worker id."""

        def ready() -> str | None:
            if self.proc.poll() is not None:
                raise AssertionError(f"worker exited with {self.proc.returncode}:\n{self.log()}")
            for line in self.log().splitlines():
                if line.startswith('{"worker_id"'):
                    return str(json.loads(line)["worker_id"])
            return None

        self.worker_id = wait_until(ready, timeout_s=timeout_s, interval_s=0.05, what="worker start")
        return self.worker_id

    def signal_stop(self) -> None:
        """SIGTERM once (a second signal could land after the interpreter reset its handlers)."""
        if not self._signalled and self.proc.poll() is None:
            self._signalled = True
            self.proc.send_signal(signal.SIGTERM)

    def terminate(self, timeout_s: float = 30.0) -> int:
        self.signal_stop()
        try:
            return self.proc.wait(timeout_s)
        finally:
            self._log.close()

    def kill(self) -> None:
        """SIGKILL the worker process alone (its job's child dies through PR_SET_PDEATHSIG)."""
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        self._log.close()


def assert_no_overlapping_leases(ledger: Ledger) -> int:
    """Every slot's leases, in time order, never overlap; returns how many leases there were."""
    by_gpu: dict[str, list[tuple[float, float]]] = {}
    for lease in ledger.lease_history():
        assert lease.released_at is not None, f"lease {lease.id} on {lease.gpu_id} was never released"
        by_gpu.setdefault(lease.gpu_id, []).append(
            (lease.acquired_at.timestamp(), lease.released_at.timestamp())
        )
    count = 0
    for gpu, spans in by_gpu.items():
        spans.sort()
        for (_a0, r0), (a1, _r1) in itertools.pairwise(spans):
            assert a1 >= r0, f"two leases overlap on {gpu}: one released at {r0}, the next acquired at {a1}"
        count += len(spans)
    return count


def pid_lines(path: Path) -> list[tuple[int, str, int]]:
    """The fake job's pid file: one ``(pid, job_id, attempt)`` per started attempt."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        pid, job_id, attempt = line.split()
        out.append((int(pid), job_id, int(attempt)))
    return out


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for our purposes
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def terminate_all(workers: list[WorkerProcess]) -> list[int]:
    """SIGTERM every worker at once, then collect their exit codes."""
    for w in workers:
        w.signal_stop()
    return [w.terminate() for w in workers]
