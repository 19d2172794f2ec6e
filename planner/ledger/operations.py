"""The ledger's operations view: queue statistics, GPU use, workers, service switches, reclaims, events, leases."""

from __future__ import annotations

import json

from ..errors import InvalidJobRequest, LedgerError
from . import queue
from .common import LedgerPart, _gpu_view, _quantile
from .db import Tx
from .models import EventView, GpuUtilisation, GpuView, LeaseView, QueueStats, WorkerView, ts

__all__ = ["LedgerOperations"]


class LedgerOperations(LedgerPart):
    """The ledger's operations view: queue statistics, GPU use, workers, service switches, reclaims, events, leases.

    A part of :class:`~solforge.planner.ledger.Ledger`."""

    # -- operations --------------------------------------------------------------------------------

    def queue_stats(self, *, window_s: float = 3600.0) -> QueueStats:
        """Queue depth now, and enqueue-to-start wait times of the jobs started in the last ``window_s``."""

        def fn(tx: Tx) -> QueueStats:
            queued: dict[str, int] = {}
            running: dict[str, int] = {}
            for r in tx.all("queue_counts"):
                (queued if r["status"] == "queued" else running)[r["kind"]] = int(r["n"])
            oldest = tx.one("queue_oldest")
            assert oldest is not None
            now = float(oldest["now"])
            waits = sorted(max(0.0, float(r["wait_s"])) for r in tx.all("recent_waits", window_s=window_s))
            finished: dict[str, int] = {}
            for r in tx.all("recent_finished", window_s=window_s):
                finished[r["status"]] = finished.get(r["status"], 0) + int(r["n"])
            return QueueStats(
                at=ts(now),  # type: ignore[arg-type]
                window_s=window_s,
                queued=queued,
                running=running,
                queued_by_agent={r["agent"]: int(r["n"]) for r in tx.all("queue_agents")},
                oldest_queued_s=None if oldest["oldest"] is None else max(0.0, now - float(oldest["oldest"])),
                started=len(waits),
                wait_mean_s=sum(waits) / len(waits) if waits else None,
                wait_p50_s=_quantile(waits, 0.5) if waits else None,
                wait_p95_s=_quantile(waits, 0.95) if waits else None,
                wait_max_s=waits[-1] if waits else None,
                finished=finished,
            )

        return self._run(fn, write=False)

    def gpu_utilisation(self, *, window_s: float = 3600.0) -> list[GpuUtilisation]:
        """Per slot: seconds under lease in the last ``window_s`` and the fraction of the window."""
        if window_s <= 0:
            raise InvalidJobRequest(f"window_s must be positive, got {window_s}")
        rows = self._run(lambda tx: tx.all("gpu_utilisation", window_s=window_s), write=False)
        return [
            GpuUtilisation(
                gpu_id=r["id"],
                host=r["host"],
                device_index=int(r["device_index"]),
                kind=r["kind"],
                name=r["name"],
                status=r["status"],
                status_reason=r["status_reason"],
                window_s=window_s,
                busy_s=float(r["busy_s"]),
                utilisation=min(1.0, max(0.0, float(r["busy_s"]) / window_s)),
                leases=int(r["leases"]),
            )
            for r in rows
        ]

    def gpus(self) -> list[GpuView]:
        """Every registered slot."""
        return [_gpu_view(r) for r in self._run(lambda tx: tx.all("list_gpus"), write=False)]

    def workers(self) -> list[WorkerView]:
        """Every worker that ever connected, newest first (a stale ``heartbeat_at`` without ``stopped_at``: it died)."""
        return [
            WorkerView(
                id=r["id"],
                host=r["host"],
                pid=int(r["pid"]),
                started_at=ts(r["started_at"]),  # type: ignore[arg-type]
                heartbeat_at=ts(r["heartbeat_at"]),  # type: ignore[arg-type]
                stopped_at=ts(r["stopped_at"]),
                slots=json.loads(r["slots_json"]),
                version=r["version"],
            )
            for r in self._run(lambda tx: tx.all("list_workers"), write=False)
        ]

    def set_gpu_service(self, gpu_id: str, *, in_service: bool, reason: str | None = None) -> GpuView:
        """Take a slot out of service (an operator's decision, kept across worker restarts) or put it back.

        A slot put back is health-checked before its next lease.
        """

        def fn(tx: Tx) -> GpuView:
            if in_service:
                hit = tx.one("gpu_in_service", gpu_id=gpu_id)
                kind = "gpu.in_service"
                text = None
            else:
                text = f"operator: {reason or 'taken out of service'}"
                hit = tx.one("gpu_out_of_service", gpu_id=gpu_id, reason=text)
                kind = "gpu.out_of_service"
            if hit is None:
                raise LedgerError(f"no slot {gpu_id!r}; list them with Ledger.gpus()")
            queue.event(tx, kind, gpu_id=gpu_id, reason=text)
            row = tx.one("get_gpu", gpu_id=gpu_id)
            assert row is not None
            return _gpu_view(row)

        return self._run(fn)

    def reclaim_expired(self, *, backoff_s: float = 0.0) -> int:
        """Reclaim every claim and lease past its deadline now (workers also do this every heartbeat).

        Returns the number of jobs reclaimed.
        """

        def fn(tx: Tx) -> int:
            if not tx.scalar("any_expired"):
                return 0
            return len(queue.reclaim_expired(tx, backoff_s=backoff_s))

        return self._run(fn)

    def events(self, *, job_id: str | None = None, after_id: int = 0, limit: int = 1000) -> list[EventView]:
        """The event log (oldest first), optionally one job's; page with ``after_id``."""
        if job_id is None:
            rows = self._run(lambda tx: tx.all("list_events", after_id=after_id, limit=limit), write=False)
        else:
            rows = self._run(
                lambda tx: tx.all("list_job_events", job_id=job_id, after_id=after_id, limit=limit),
                write=False,
            )
        return [
            EventView(
                id=int(r["id"]),
                at=ts(r["at"]),  # type: ignore[arg-type]
                kind=r["kind"],
                job_id=r["job_id"],
                gpu_id=r["gpu_id"],
                worker_id=r["worker_id"],
                agent=r["agent"],
                lease_id=r["lease_id"],
                detail=json.loads(r["detail_json"]) if r["detail_json"] else {},
            )
            for r in rows
        ]

    def lease_history(self) -> list[LeaseView]:
        """Every lease ever taken, by slot then time."""
        rows = self._run(lambda tx: tx.all("lease_history"), write=False)
        return [
            LeaseView(
                id=int(r["id"]),
                gpu_id=r["gpu_id"],
                job_id=r["job_id"],
                worker_id=r["worker_id"],
                acquired_at=ts(r["acquired_at"]),  # type: ignore[arg-type]
                deadline_at=ts(r["deadline_at"]),  # type: ignore[arg-type]
                released_at=ts(r["released_at"]),
                release_reason=r["release_reason"],
            )
            for r in rows
        ]

