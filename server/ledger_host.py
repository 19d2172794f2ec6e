"""The ledger's life inside a server process: opened in the background, workers started and stopped.

Opening the ledger imports SQLAlchemy and applies migrations (about half a second); it happens on a
thread after the server starts, so the first ``tools/list`` does not wait for it. Tools that need the
ledger await :meth:`LedgerHost.get`, which waits for the opening to finish.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio

from solforge.problems import config
from solforge.tools.errors import ServiceUnavailable

log = logging.getLogger("solforge.server")

OPEN_WAIT_S = 60.0
"""How long a tool waits for the ledger to open before answering ServiceUnavailable."""
OPEN_DELAY_S = 1.0
"""The background opening starts this long after the server does, so that it does not compete for
the interpreter with the client's first requests (a tool that needs the ledger opens it at once)."""


class LedgerHost:
    """Owns the server's :class:`solforge.planner.Ledger` and, optionally, an in-process worker.

    Parameters
    ----------
    url
        The ledger's database URL; None: $SOLFORGE_DB, else the planner's default SQLite file
        (``$SOLFORGE_HOME/ledger.db`` or ``~/.local/share/solforge/ledger.db``).
    workers
        Start a worker in this process that runs queued jobs (every local GPU, or one CPU slot).
    agents
        Agents to create if the ledger does not know them yet (the stdio agent, a --token's agent).
    worker_factory
        Builds the worker from the open ledger; default ``solforge.planner.Worker(ledger)`` (tests
        pass one with a fake runner).
    """

    def __init__(
        self,
        url: str | None,
        *,
        workers: bool = True,
        agents: tuple[str, ...] = (),
        worker_factory: Any = None,
    ) -> None:
        self.url = url or config.db_url()
        self.workers = workers
        self.agents = agents
        self.worker_factory = worker_factory
        self._ledger: Any = None
        self._error: BaseException | None = None
        self._ready = threading.Event()
        self._open_lock = threading.Lock()
        self._worker: Any = None
        self._stopping = threading.Event()

    # -- opening ---------------------------------------------------------------------------------

    def open_sync(self) -> Any:
        """Open the ledger now (idempotent); raise ServiceUnavailable if it cannot be opened."""
        with self._open_lock:
            if self._ledger is None and self._error is None:
                try:
                    from solforge.planner import Ledger

                    ledger = Ledger.open(self.url)
                    for agent in self.agents:
                        ledger.ensure_agent(agent)
                    self._ledger = ledger
                    log.info("ledger open at %s", ledger.url)
                except Exception as exc:
                    self._error = exc
                    log.error(
                        "cannot open the ledger at %s", self.url or "the default location", exc_info=exc
                    )
                finally:
                    self._ready.set()
        if self._ledger is None:
            raise ServiceUnavailable(
                f"the job ledger at {self.url or 'the default location'} could not be opened "
                f"({type(self._error).__name__}: {self._error}); jobs, scores and submissions are unavailable "
                "until the server is restarted with a working --db"
            )
        return self._ledger

    async def get(self) -> Any:
        """The open ledger, waiting for the background opening if it is still under way."""
        if self._ledger is not None:
            return self._ledger
        if not self._ready.is_set():
            with anyio.move_on_after(OPEN_WAIT_S):
                await anyio.to_thread.run_sync(self.open_sync)
        return self.open_sync()

    def has_agent_tokens(self) -> bool:
        """Whether the ledger holds enabled agents with tokens (then HTTP requires authentication).

        The planner has no query for this; it is read from the ``agent`` table directly (a small
        adapter, to be replaced by a Ledger method).
        """
        try:
            ledger = self.open_sync()
        except ServiceUnavailable:
            return False
        from sqlalchemy import text

        query = text("SELECT 1 FROM agent WHERE token_hash IS NOT NULL AND disabled = :no LIMIT 1")
        with ledger.connector.engine.connect() as conn:
            return conn.execute(query, {"no": False}).first() is not None

    async def agent_for_token(self, token: str) -> str | None:
        """The enabled agent holding ``token`` in the ledger, or None."""
        from solforge.planner.errors import AuthenticationFailed

        ledger = await self.get()
        try:
            agent = await ledger.authenticate_async(token)
        except AuthenticationFailed:
            return None
        return str(agent.name)

    # -- running ---------------------------------------------------------------------------------

    def _start_worker(self) -> None:
        if self.worker_factory is not None:
            worker = self.worker_factory(self._ledger)
        else:
            from solforge.planner import Worker

            worker = Worker(self._ledger)
        worker.start()
        self._worker = worker
        log.info("in-process worker started")

    def _background(self, delay_s: float) -> None:
        if self._stopping.wait(delay_s):
            return
        try:
            self.open_sync()
        except ServiceUnavailable:
            return
        if self.workers:
            try:
                self._start_worker()
            except Exception as exc:
                log.error("cannot start the in-process worker; jobs wait for an outside worker", exc_info=exc)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[LedgerHost]:
        """Open the ledger (and start a worker) in the background for the server's lifetime."""
        self._stopping.clear()
        thread = threading.Thread(
            target=self._background, args=(OPEN_DELAY_S,), name="solforge-ledger-open", daemon=True
        )
        thread.start()
        try:
            yield self
        finally:
            self._stopping.set()
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(thread.join)
                await anyio.to_thread.run_sync(self._stop)

    def _stop(self) -> None:
        worker, self._worker = self._worker, None
        if worker is not None:
            try:
                worker.stop()
            except Exception as exc:
                log.warning("worker did not stop cleanly: %s", exc)
        ledger, self._ledger = self._ledger, None
        if ledger is not None:
            try:
                ledger.close()
            except Exception as exc:
                log.warning("ledger did not close cleanly: %s", exc)
