"""The ``_async`` twins of the ledger's calls an event loop makes: each runs the sync call in a worker thread."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread

from solforge.problems import Solution
from solforge.sandbox.api import EvalReport, EvalRequest

from .common import DEFAULT_MAX_ATTEMPTS, LedgerPart
from .models import (
    AgentHistory,
    AgentView,
    GpuUtilisation,
    JobKind,
    JobView,
    LeaderboardEntry,
    QueueStats,
    SlotKind,
    SubmissionView,
)

__all__ = ["LedgerAsync"]


class LedgerAsync(LedgerPart):
    """The ``_async`` twins of the ledger's calls an event loop makes: each runs the sync call in a worker thread.

    A part of :class:`~solforge.planner.ledger.Ledger`."""

    # -- async twins -------------------------------------------------------------------------------

    async def enqueue_async(
        self,
        agent: str,
        kind: JobKind,
        request: EvalRequest,
        *,
        priority: int = 0,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        timeout_s: float | None = None,
        slot_kind: SlotKind | None = None,
    ) -> JobView:
        """Async version of :meth:`enqueue`."""
        return await anyio.to_thread.run_sync(
            lambda: self.enqueue(
                agent,
                kind,
                request,
                priority=priority,
                max_attempts=max_attempts,
                timeout_s=timeout_s,
                slot_kind=slot_kind,
            )
        )

    async def get_job_async(self, job_id: str, agent: str) -> JobView:
        """Async version of :meth:`get_job`."""
        return await anyio.to_thread.run_sync(self.get_job, job_id, agent)

    async def wait_job_async(
        self,
        job_id: str,
        agent: str,
        timeout_s: float,
        *,
        poll_s: float = 0.5,
        on_update: Callable[[JobView], Any] | None = None,
    ) -> JobView:
        """Async version of :meth:`wait_job`: polls without blocking the event loop.

        Parameters
        ----------
        on_update
            Called (and awaited when it returns an awaitable) with each view whose status or
            progress changed: wire it to ``ctx.report_progress``. Cancelling the calling task stops
            the wait, not the job.
        """
        deadline = time.monotonic() + max(0.0, timeout_s)
        delay = 0.05
        last: tuple[Any, ...] | None = None
        while True:
            seen = self.changes.generation
            view = await self.get_job_async(job_id, agent)
            key = (view.status, view.progress, view.position)
            if on_update is not None and key != last:
                result = on_update(view)
                if hasattr(result, "__await__"):
                    await result
            last = key
            remaining = deadline - time.monotonic()
            if view.finished or remaining <= 0:
                return view
            # Wakes at once on a write in this process (the in-process worker finishing the job).
            await anyio.to_thread.run_sync(self.changes.wait, seen, min(delay, remaining), abandon_on_cancel=True)
            delay = min(delay * 1.5, poll_s)

    async def cancel_job_async(self, job_id: str, agent: str) -> JobView:
        """Async version of :meth:`cancel_job`."""
        return await anyio.to_thread.run_sync(self.cancel_job, job_id, agent)

    async def authenticate_async(self, token: str) -> AgentView:
        """Async version of :meth:`authenticate`."""
        return await anyio.to_thread.run_sync(self.authenticate, token)

    async def leaderboard_async(self, problem: str, *, limit: int = 20) -> list[LeaderboardEntry]:
        """Async version of :meth:`leaderboard`."""
        return await anyio.to_thread.run_sync(lambda: self.leaderboard(problem, limit=limit))

    async def best_per_problem_async(self) -> list[SubmissionView]:
        """Async version of :meth:`best_per_problem`."""
        return await anyio.to_thread.run_sync(self.best_per_problem)

    async def agent_history_async(self, agent: str, *, limit: int = 50) -> AgentHistory:
        """Async version of :meth:`agent_history`."""
        return await anyio.to_thread.run_sync(lambda: self.agent_history(agent, limit=limit))

    async def queue_stats_async(self, *, window_s: float = 3600.0) -> QueueStats:
        """Async version of :meth:`queue_stats`."""
        return await anyio.to_thread.run_sync(lambda: self.queue_stats(window_s=window_s))

    async def gpu_utilisation_async(self, *, window_s: float = 3600.0) -> list[GpuUtilisation]:
        """Async version of :meth:`gpu_utilisation`."""
        return await anyio.to_thread.run_sync(lambda: self.gpu_utilisation(window_s=window_s))

    async def record_submission_async(
        self, agent: str, report: EvalReport, solution: Solution, *, job_id: str | None = None
    ) -> SubmissionView:
        """Async version of :meth:`record_submission`."""
        return await anyio.to_thread.run_sync(
            lambda: self.record_submission(agent, report, solution, job_id=job_id)
        )
