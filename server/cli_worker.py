"""``solforge worker``: one worker serving jobs from a (shared) ledger, as each GPU host runs it."""

from __future__ import annotations

import logging
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

from solforge.planner import JobRunner, Ledger, LedgerError, Worker, WorkerConfig
from solforge.planner.workers.gpus import HealthCheck

__all__ = ["run_worker_cli"]

log = logging.getLogger("solforge.planner")


def run_worker_cli(
    db_url: str | None,
    gpus: Sequence[int] | None = None,
    *,
    cpu_slots: int | None = None,
    compile_slots: int | None = None,
    host: str | None = None,
    runner: JobRunner | None = None,
    config: WorkerConfig | None = None,
    health_check: HealthCheck | None = None,
    stop_event: threading.Event | None = None,
    log_level: str = "INFO",
) -> int:
    """``solforge worker``: serve jobs from a (shared) ledger until SIGINT/SIGTERM.

    Parameters
    ----------
    db_url
        The ledger (``postgresql://...`` for many hosts; None: the local default SQLite file).
    gpus
        NVML indices (``--gpus 0,1``); None: every visible GPU (CPU slots when there is none).
    cpu_slots, compile_slots, host, runner, config, health_check
        As for :class:`Worker`.
    stop_event
        Stop when set (tests, embedding); SIGINT and SIGTERM set it when called from the main thread.
    log_level
        Logging level for a stderr handler installed when the process has none (stdout stays clean).

    Returns
    -------
    int
        0 after a clean stop, 1 when the ledger cannot be opened, 2 for bad arguments.
    """
    root = logging.getLogger()
    if not root.handlers:
        logging.basicConfig(
            stream=sys.stderr,
            level=log_level.upper(),
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        )
    stop = stop_event or threading.Event()
    try:
        ledger = Ledger.open(db_url)
    except (LedgerError, ValueError) as exc:
        log.error("cannot open the ledger %s: %s", db_url, exc, extra={"action": "worker_cli"})
        return 1
    try:
        try:
            worker = Worker(
                ledger,
                runner,
                gpus=gpus,
                cpu_slots=cpu_slots,
                compile_slots=compile_slots,
                host=host,
                config=config,
                health_check=health_check,
            )
        except ValueError as exc:
            log.error("%s", exc, extra={"action": "worker_cli"})
            return 2
        previous: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGINT, signal.SIGTERM):
                previous[signum] = signal.signal(signum, lambda *_: stop.set())
        try:
            try:
                worker.start()
            except LedgerError as exc:
                log.error("cannot register the worker: %s", exc, extra={"action": "worker_cli"})
                return 1
            while not stop.wait(1.0):
                pass
            log.info("stopping worker %s", worker.id, extra={"action": "worker_cli"})
            worker.stop()
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        return 0
    finally:
        ledger.close()
