"""``solforge eval`` through a worker already running on this host (``solforge serve`` or ``solforge worker``).

Such a worker keeps a warm judge per GPU, so an evaluation costs seconds instead of a judge's start,
and its GPU lease keeps the evaluation from timing on a GPU that an agent's benchmark is using.
The evaluation is an ordinary benchmark job of the agent ``cli`` in that worker's ledger.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Callable
from datetime import UTC, datetime

from solforge.problems import InfrastructureError
from solforge.sandbox.api import EvalReport, EvalRequest

from ..ledger import Ledger
from ..ledger.db import default_ledger_path
from ..ledger.models import JobView, SlotKind, WorkerView

__all__ = ["CLI_AGENT", "LIVE_HEARTBEAT_S", "LocalWorker", "find_local_worker", "ledger_url_label", "run_on_worker"]

CLI_AGENT = "cli"
LIVE_HEARTBEAT_S = 45.0
"""A worker whose last heartbeat is older than this is not counted as running (it renews every ~10 s)."""


class LocalWorker:
    """A running worker on this host and the ledger it serves."""

    def __init__(self, ledger: Ledger, worker: WorkerView) -> None:
        self.ledger = ledger
        self.worker = worker


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def find_local_worker(url: str | None, slot_kind: SlotKind | None) -> LocalWorker | None:
    """A live worker of this host in the ledger at ``url`` with a slot of ``slot_kind`` (any when None).

    The default SQLite ledger is only opened when it exists: looking must not create one.
    """
    if url is None and not default_ledger_path().is_file():
        return None
    try:
        ledger = Ledger.open(url, migrate_schema=False, retry_s=2.0)
    except Exception:
        return None
    try:
        host = socket.gethostname()
        now = datetime.now(UTC).timestamp()
        for worker in ledger.workers():
            live = (worker.stopped_at is None and worker.host == host and _pid_alive(worker.pid)
                    and now - worker.heartbeat_at.timestamp() < LIVE_HEARTBEAT_S)
            kinds = {slot.rsplit("/", 1)[-1].split(":", 1)[0] for slot in worker.slots}
            if live and kinds and (slot_kind is None or slot_kind in kinds):
                return LocalWorker(ledger, worker)
    except Exception:
        pass
    ledger.close()
    return None


def run_on_worker(local: LocalWorker, request: EvalRequest, *, slot_kind: SlotKind | None,
                  on_progress: Callable[[JobView], None] | None = None, poll_s: float = 0.25) -> EvalReport:
    """Queue ``request`` as a benchmark job, wait for it, and return its report.

    Raises
    ------
    InfrastructureError
        The job failed (an infrastructure fault on every attempt) or was cancelled.
    KeyboardInterrupt
        Passed on after the job was cancelled.
    """
    ledger = local.ledger
    ledger.ensure_agent(CLI_AGENT)
    job = ledger.enqueue(CLI_AGENT, "benchmark", request, slot_kind=slot_kind)
    last: tuple[object, ...] | None = None
    try:
        while True:
            view = ledger.wait_job(job.id, CLI_AGENT, poll_s, poll_s=poll_s)
            key = (view.status, view.progress)
            if on_progress is not None and key != last:
                on_progress(view)
            last = key
            if view.finished:
                break
    except KeyboardInterrupt:
        with contextlib.suppress(Exception):
            ledger.cancel_job(job.id, CLI_AGENT)
        raise
    if view.status != "done" or view.report is None:
        raise InfrastructureError(f"the worker's job {job.id} ended {view.status}: {view.error or 'no report'}")
    return view.report


def ledger_url_label(url: str | None) -> str:
    return url or str(default_ledger_path())
