"""Workers: take jobs from the ledger, run them on leased slots, record the results.

Design
------
A :class:`Worker` is a set of **threads** in one process, not an event loop: the work it drives
(builds, the sandbox's child processes, NVML) is blocking, and threads let ``solforge serve`` host
workers next to its anyio loop without sharing it. Each thread uses its own pooled connection.

- one thread per slot (a CUDA GPU, or a CPU slot on a machine without one): health-check the slot
  when needed, claim the next benchmark/submit job and lease the slot in one transaction, run it,
  record the result;
- ``compile_slots`` threads for compile jobs, which take no lease;
- one maintenance thread, every ``heartbeat_s``: renews the claims and leases of running jobs
  (and stores their progress), notices cancellation requests and lost claims, enforces each job's
  time limit on the monotonic clock, and reclaims expired claims of *any* worker (a dead worker's
  jobs are requeued by the survivors).

The job itself runs through a pluggable :class:`JobRunner` (production: ``SandboxRunner``; tests:
``SubprocessRunner``), which must stop promptly when its ``cancel`` event is set.

This module holds the threads and their :class:`WorkerConfig`; what is done to a claim once its job
runs (the lease gate, renewals, the record of how it ended) is :mod:`.jobs`, and
``solforge worker`` is :mod:`solforge.server.cli_worker`.

Faults
------
- Worker killed (SIGKILL, power): its heartbeats stop; within ``lease_s`` its claims and leases
  expire on the database clock and another worker requeues the jobs (attempt + 1) and marks the
  slots for a health check. The job's child processes die with it (``PR_SET_PDEATHSIG``).
- Job hangs (a wedged GPU): at ``timeout_s`` the worker sets ``cancel`` (the runner kills the
  process tree) and retries the job elsewhere; if the runner does not return within
  ``kill_grace_s`` the worker stops renewing that claim, so the lease expires instead of being held
  forever.
- Database restarting or unreachable: every step retries with back-off; a finished result is kept
  in memory and its write retried for ``result_retry_s`` while the claim keeps being renewed. A
  claim not renewed for ``lease_s`` is presumed lost: the job is stopped and its result, if any
  arrives, is written only if the claim token still matches (fencing).
- Two workers racing for a job or a slot: the claim is one atomic statement (SKIP LOCKED on
  PostgreSQL, the single writer lock on SQLite) and the slot lease is guarded by a unique index.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import secrets
import socket
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from solforge.sandbox.api import EvalRequest

from ..errors import LedgerError, LedgerIntegrityError
from ..ledger import Ledger, queue
from ..ledger.db import Tx
from .contract import Heartbeat, JobResult, JobRunner, JobSpec, LeaseCancelled
from .gpus import HealthCheck, HealthReport, Slot, default_health_check, discover_slots
from .jobs import ActiveJob, lease_gate, renew_claims, run_job, settle_op, with_known_baselines, write_outcome

__all__ = [
    "Heartbeat",
    "JobResult",
    "JobRunner",
    "JobSpec",
    "LeaseCancelled",
    "Worker",
    "WorkerConfig",
    "default_lanes_per_gpu",
]

log = logging.getLogger("solforge.planner")

try:
    from importlib.metadata import version as _pkg_version

    _VERSION = _pkg_version("solforge")
except Exception:  # not installed (running from a checkout)
    _VERSION = "0+unknown"


def _int_env(name: str) -> int | None:
    value = os.environ.get(name, "").strip()
    return int(value) if value else None


def default_lanes_per_gpu(cpus: int, gpus: int) -> int:
    """Lanes per GPU slot for a host with ``cpus`` usable CPUs and ``gpus`` GPU slots: one per two CPUs
    of each GPU's share, from 2 to 8. A lane's judge and candidate processes keep about one CPU busy
    (load average 7-7.7 with 8 lanes on the H200's 16 CPUs), and the rest serve the server, the agents
    and the compile slots. On that H200, with 16 scripted agents (2026-12-03): lease utilisation 0.42
    with 2 lanes, 0.69 with 4, 0.95 with 8, where a lease is about 1.3 s of an evaluation's 8-10 s; the
    medians of single-launch kernels moved by 0.1-0.7% between 2 and 8 lanes."""
    return max(2, min(8, cpus // (2 * max(1, gpus))))


@dataclass(frozen=True)
class WorkerConfig:
    """Timing of a worker. The defaults suit GPU benchmarks; tests shrink them."""

    lease_s: float = 30.0
    """A claim (and its slot lease) expires this long after its last renewal."""
    heartbeat_s: float = 2.0
    """Renew claims, notice cancellations and reclaim expired claims this often (<= lease_s / 3)."""
    poll_s: float = 0.5
    """An idle slot looks for work this often (jittered)."""
    fair_window_s: float = 600.0
    """Fairness counts the jobs each agent started within this window (see solforge.planner)."""
    retry_backoff_s: float = 5.0
    """A job retried after an infrastructure fault waits this times its attempt number."""
    kill_grace_s: float = 15.0
    """After cancelling, wait this long for the runner to return before abandoning the claim."""
    health_interval_s: float = 60.0
    """Health-check an idle slot at least this often (and always after an abnormal lease end)."""
    result_retry_s: float = 600.0
    """Keep retrying the write of a finished result this long while the database is away."""
    lanes_per_gpu: int | None = field(default_factory=lambda: _int_env("SOLFORGE_LANES_PER_GPU"))
    """Jobs a CUDA slot works on at once when the runner leases its GPU work itself: the others build,
    start and load their solutions (each in a warm judge of its own) while one holds the GPU's lease, so
    the GPU does not wait for them. None: :func:`default_lanes_per_gpu` of the worker's CPUs and GPUs.
    CPU slots keep one (a build beside a CPU timing would disturb it). ``SOLFORGE_LANES_PER_GPU=1``
    serialises a slot's jobs, to compare what the overlap costs the timings."""

    def __post_init__(self) -> None:
        if self.heartbeat_s <= 0 or self.lease_s < 2 * self.heartbeat_s:
            raise ValueError(
                f"lease_s ({self.lease_s}) must be at least twice heartbeat_s ({self.heartbeat_s}); "
                "three times or more is advised"
            )
        if self.poll_s <= 0:
            raise ValueError(f"poll_s must be positive, got {self.poll_s}")
        if self.lanes_per_gpu is not None and self.lanes_per_gpu < 1:
            raise ValueError(f"lanes_per_gpu must be at least 1, got {self.lanes_per_gpu}")


class Worker:
    """Takes jobs from a ledger and runs them; see the module docstring for the design.

    Examples
    --------
    In-process, next to the MCP server::

        worker = Worker(ledger, SandboxRunner())      # every local GPU, or one CPU slot
        worker.start()
        ...
        worker.stop()

    Parameters
    ----------
    ledger
        The open ledger (its connection pool is shared by the worker's threads).
    runner
        Runs each job; default ``SandboxRunner()``.
    gpus
        NVML indices to serve; None: every visible GPU; empty: none.
    cpu_slots
        CPU benchmark slots; None: one when the host has no GPU slot, else none.
    compile_slots
        Threads for compile jobs; None: ``min(4, max(1, cpus // 2))``; 0: this worker compiles nothing.
    host
        The host name recorded in slot ids (default ``socket.gethostname()``); workers on one host
        that serve the same GPU share its lease.
    slots
        Explicit slots (overrides ``gpus`` and ``cpu_slots``).
    config
        Timing; see :class:`WorkerConfig`.
    health_check
        Checks a slot before it is leased; default NVML for GPUs, always healthy for CPU slots.

    Raises
    ------
    ValueError
        A requested GPU is not visible, or the config is inconsistent.
    """

    def __init__(
        self,
        ledger: Ledger,
        runner: JobRunner | None = None,
        *,
        gpus: Sequence[int] | None = None,
        cpu_slots: int | None = None,
        compile_slots: int | None = None,
        host: str | None = None,
        slots: Sequence[Slot] | None = None,
        config: WorkerConfig | None = None,
        health_check: HealthCheck | None = None,
    ) -> None:
        if runner is None:
            from .runners import SandboxRunner

            runner = SandboxRunner()
        self.ledger = ledger
        self.runner = runner
        self.config = config or WorkerConfig()
        self.host = host or socket.gethostname()
        self.slots: list[Slot] = (
            list(slots)
            if slots is not None
            else discover_slots(host=self.host, gpus=gpus, cpu_slots=cpu_slots)
        )
        self.compile_slots = (
            compile_slots if compile_slots is not None else min(4, max(1, (os.cpu_count() or 2) // 2))
        )
        if self.compile_slots < 0:
            raise ValueError(f"compile_slots must be 0 or more, got {self.compile_slots}")
        self.health_check = health_check or default_health_check
        self.lanes_per_gpu = self.config.lanes_per_gpu or default_lanes_per_gpu(
            len(os.sched_getaffinity(0)), sum(1 for s in self.slots if s.kind == "cuda"))
        self.id = f"{self.host}:{os.getpid()}:{secrets.token_hex(3)}"
        self._stopping = threading.Event()
        self._maintenance_stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._maintenance: threading.Thread | None = None
        self._active: dict[str, ActiveJob] = {}
        self._lock = threading.Lock()
        self._last_health: dict[str, float] = {}
        self._worker_beat = float("-inf")
        self._started = False

    # -- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        """Register the worker and its slots, health-check them, and start the threads.

        Raises
        ------
        LedgerUnavailable
            The ledger cannot be reached.
        """
        if self._started:
            return
        if self._stopping.is_set():
            raise RuntimeError("a Worker runs once; create a new one to start again")
        slots_json = json.dumps([s.id for s in self.slots])

        def register(tx: Tx) -> None:
            tx.execute(
                "insert_worker",
                id=self.id,
                host=self.host,
                pid=os.getpid(),
                slots_json=slots_json,
                version=_VERSION,
            )
            queue.event(
                tx,
                "worker.started",
                worker_id=self.id,
                host=self.host,
                pid=os.getpid(),
                slots=[s.id for s in self.slots],
                compile_slots=self.compile_slots,
                lanes={s.id: self._lanes(s) for s in self.slots},
                version=_VERSION,
            )
            for slot in self.slots:
                tx.execute(
                    "upsert_gpu",
                    id=slot.id,
                    host=slot.host,
                    device_index=slot.index,
                    kind=slot.kind,
                    name=slot.name,
                    uuid=slot.uuid,
                    worker_id=self.id,
                )
                queue.event(
                    tx, "gpu.registered", gpu_id=slot.id, worker_id=self.id, name=slot.name, uuid=slot.uuid
                )

        self.ledger.connector.run(register, retry_s=self.ledger.retry_s)
        for slot in self.slots:
            self._record_health(slot)
        start_runner = getattr(self.runner, "start", None)
        if callable(start_runner):  # a runner that keeps processes warm starts them now, one per lane
            start_runner(self.slots, lanes={slot.id: self._lanes(slot) for slot in self.slots})
        self._started = True
        self._maintenance = threading.Thread(
            target=self._maintenance_loop, name=f"solforge-maint-{self.id}", daemon=True
        )
        self._maintenance.start()
        for slot in self.slots:
            for lane in range(self._lanes(slot)):
                self._spawn(self._slot_loop, slot, f"solforge-slot-{slot.id}-{lane}")
        for i in range(self.compile_slots):
            self._spawn(self._slot_loop, None, f"solforge-compile-{i}")
        log.info(
            "worker %s started: slots %s (lanes %s), %d compile threads",
            self.id,
            [s.id for s in self.slots],
            {s.id: self._lanes(s) for s in self.slots},
            self.compile_slots,
            extra={"action": "worker_start"},
        )

    def _spawn(self, target: Callable[[Slot | None], None], slot: Slot | None, name: str) -> None:
        thread = threading.Thread(target=target, args=(slot,), name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def stop(self, *, drain_s: float = 0.0, timeout_s: float = 30.0) -> None:
        """Stop taking jobs, let running ones finish for ``drain_s``, cancel the rest, and exit.

        Jobs cancelled by a shutdown are queued again without spending an attempt.

        Parameters
        ----------
        drain_s
            Wait this long for running jobs to finish on their own.
        timeout_s
            Then wait at most this long for the threads to exit. A runner that ignores its
            cancel event is left behind; its claim expires and another worker retries the job.
        """
        if not self._started:
            return
        self._stopping.set()
        self.ledger.changes.notify()  # idle slot threads wake and see the stop
        drain_deadline = time.monotonic() + drain_s
        while self.active_jobs and time.monotonic() < drain_deadline:
            time.sleep(0.05)
        with self._lock:
            active = list(self._active.values())
        for a in active:
            a.stop("shutdown")
        deadline = time.monotonic() + timeout_s
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        self._maintenance_stop.set()
        if self._maintenance is not None:
            self._maintenance.join(max(0.1, deadline - time.monotonic()))
        stuck = [t.name for t in self._threads if t.is_alive()]
        close_runner = getattr(self.runner, "close", None)
        if callable(close_runner):
            close_runner()
        if stuck:
            log.error(
                "worker %s: threads %s did not stop; their claims will expire and be retried elsewhere",
                self.id,
                stuck,
                extra={"action": "worker_stop"},
            )

        def record(tx: Tx) -> None:
            tx.execute("stop_worker", id=self.id)
            queue.event(tx, "worker.stopped", worker_id=self.id, stuck_threads=stuck)

        try:
            self.ledger.connector.run(record, retry_s=5.0)
        except LedgerError as exc:
            log.warning(
                "worker %s: could not record its stop: %s", self.id, exc, extra={"action": "worker_stop"}
            )
        self._started = False
        log.info("worker %s stopped", self.id, extra={"action": "worker_stop"})

    def __enter__(self) -> Worker:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def active_jobs(self) -> list[str]:
        """Ids of the jobs this worker is running now."""
        with self._lock:
            return list(self._active)

    # -- slots -------------------------------------------------------------------------------------

    def _check(self, slot: Slot) -> HealthReport:
        try:
            return self.health_check(slot)
        except Exception as exc:  # a health check must not take the worker down; a crash is a verdict
            log.exception("health check of %s raised", slot.id, extra={"action": "health"})
            return HealthReport(False, f"the health check raised {type(exc).__name__}: {exc}")

    def _record_health(self, slot: Slot) -> bool:
        report = self._check(slot)
        status = self.ledger.connector.run(
            lambda tx: queue.record_health(
                tx, gpu_id=slot.id, ok=report.ok, reason=report.reason, worker_id=self.id
            ),
            retry_s=self.ledger.retry_s,
        )
        self._last_health[slot.id] = time.monotonic()
        if not report.ok:
            log.error("slot %s out of service: %s", slot.id, report.reason, extra={"action": "health"})
        return report.ok and status == "available"

    def _look(self, slot: Slot | None) -> Literal["ready", "idle", "busy", "down"]:
        """One read-only transaction before trying to claim: is there work, and is the slot free?

        ``ready``: claim now; ``idle``: no job is waiting; ``busy``: another worker of this host
        holds the slot; ``down``: the slot is out of service or failed its health check.
        Health-checks the slot first when it is due.
        """
        needs_gpu = slot is not None
        slot_kind = slot.kind if slot else None

        def look(tx: Tx) -> tuple[Any, Any, Any]:
            work = tx.one("any_claimable", needs_gpu=needs_gpu, slot_kind=slot_kind)
            if slot is None or work is None:
                return work, None, None
            return work, tx.one("get_gpu", gpu_id=slot.id), tx.one("active_lease", gpu_id=slot.id)

        work, row, lease = self.ledger.connector.run(look, write=False, retry_s=0)
        if work is None:
            return "idle"
        if slot is None:
            return "ready"
        if row is None or row["status"] != "available":
            return "down"
        if lease is not None and not self._gated:
            return "busy"
        stale = (
            time.monotonic() - self._last_health.get(slot.id, float("-inf")) > self.config.health_interval_s
        )
        if (row["needs_check"] or stale) and not self._record_health(slot):
            return "down"
        return "ready"

    @property
    def _gated(self) -> bool:
        """Whether the runner takes the slot's lease around its GPU work only."""
        return bool(getattr(self.runner, "leases_gpu_work", False))

    def _lanes(self, slot: Slot) -> int:
        return self.lanes_per_gpu if self._gated and slot.kind == "cuda" else 1

    def _claim(self, slot: Slot | None) -> queue.Claim | None:
        token = uuid.uuid4().hex
        try:
            return self.ledger.connector.run(
                lambda tx: queue.claim_next(
                    tx,
                    worker_id=self.id,
                    gpu_id=slot.id if slot else None,
                    slot_kind=slot.kind if slot else None,
                    token=token,
                    lease_s=self.config.lease_s,
                    fair_window_s=self.config.fair_window_s,
                    lease=not self._gated,
                ),
                retry_s=0,
            )
        except LedgerIntegrityError:
            return None  # another worker leased this slot in the same instant; the unique index said no

    def _slot_loop(self, slot: Slot | None) -> None:
        rng = random.Random()
        failures = 0
        just_finished = False
        while not self._stopping.is_set():
            seen = self.ledger.changes.generation
            try:
                # Straight after a job the slot is known healthy and free: try the claim at once (it
                # re-checks everything itself), which halves the hand-off while jobs are waiting.
                state = "ready" if just_finished else self._look(slot)
                just_finished = False
                if state == "down":
                    self._stopping.wait(max(self.config.poll_s, 1.0))
                    continue
                if state == "busy":  # its holder re-claims at once while work waits: no need to hurry
                    self._stopping.wait(max(self.config.poll_s, 0.5) * (0.5 + rng.random()))
                    continue
                claim = self._claim(slot) if state == "ready" else None
                failures = 0
            except LedgerError as exc:
                failures += 1
                delay = min(5.0, self.config.poll_s * 2**failures)
                log.warning(
                    "worker %s: ledger error while looking for work (retry in %.1fs): %s",
                    self.id,
                    delay,
                    exc,
                    extra={"action": "claim"},
                )
                self._stopping.wait(delay)
                continue
            if claim is None:
                # Until the next poll, or at once when this process queues a job (or stops).
                self.ledger.changes.wait(seen, self.config.poll_s * (0.5 + rng.random()))
                continue
            self._execute(claim, slot)
            just_finished = True

    # -- running a job -----------------------------------------------------------------------------

    def _execute(self, claim: queue.Claim, slot: Slot | None) -> None:
        now = time.monotonic()
        active = ActiveJob(claim=claim, slot=slot, started=now, last_ok=now)
        with self._lock:
            self._active[claim.job_id] = active
        if self._stopping.is_set():  # claimed while stop() was collecting the running jobs
            active.stop("shutdown")
        cfg = self.config
        try:
            log.info("job %s (%s, %s) attempt %d on %s", claim.job_id, claim.kind, claim.agent, claim.attempt,
                     slot.id if slot else "a compile thread", extra={"action": "job_start"})
            try:
                request = EvalRequest.model_validate_json(claim.request_json)
            except ValueError as exc:
                error = f"the stored request does not parse with this solforge ({_VERSION}): {exc}"[:4000]
                write_outcome(
                    self.ledger,
                    active,
                    lambda tx: queue.finish(tx, claim, status="failed", result_json=None, error=error),
                    retry_s=cfg.result_retry_s,
                )
                return
            if claim.kind != "compile":
                request = with_known_baselines(self.ledger, request, claim.problem)
            spec = JobSpec(
                id=claim.job_id,
                kind=claim.kind,  # type: ignore[arg-type]
                agent=claim.agent,
                problem=claim.problem,
                request=request,
                attempt=claim.attempt,
                max_attempts=claim.max_attempts,
                timeout_s=claim.timeout_s,
                slot=slot,
                gpu_lease=(
                    lease_gate(self.ledger, active, lease_s=cfg.lease_s, poll_s=cfg.poll_s)
                    if slot is not None and self._gated
                    else None
                ),
            )
            result = run_job(self.runner, spec, active)
            active.settling = True
            op = settle_op(
                active, request, result, worker_id=self.id, lease_s=cfg.lease_s, retry_backoff_s=cfg.retry_backoff_s
            )
            write_outcome(self.ledger, active, op, retry_s=cfg.result_retry_s)
        finally:
            with self._lock:
                self._active.pop(claim.job_id, None)

    # -- maintenance -------------------------------------------------------------------------------

    def _maintenance_loop(self) -> None:
        while not self._maintenance_stop.wait(self.config.heartbeat_s):
            try:
                self.tick()
            except Exception:  # the loop must survive anything; each failure is logged
                log.exception("worker %s: maintenance tick failed", self.id, extra={"action": "tick"})

    def tick(self) -> None:
        """One maintenance pass (the maintenance thread calls it every ``heartbeat_s``)."""
        cfg = self.config
        now = time.monotonic()
        with self._lock:
            actives = list(self._active.values())
        to_renew = [a for a in actives if a.enforce_limits(now, cfg.kill_grace_s)]
        if to_renew:
            renew_claims(self.ledger, to_renew, now, lease_s=cfg.lease_s, worker_id=self.id)
        if now - self._worker_beat >= cfg.lease_s / 3:  # informational: no need to write it every tick
            with contextlib.suppress(LedgerError):
                self.ledger.connector.run(lambda tx: tx.execute("heartbeat_worker", id=self.id), retry_s=0)
                self._worker_beat = now
        try:
            self._reclaim()
        except LedgerError as exc:
            log.warning("worker %s: reclaim pass failed: %s", self.id, exc, extra={"action": "reclaim"})

    def _reclaim(self) -> None:
        connector = self.ledger.connector
        if not connector.run(lambda tx: tx.scalar("any_expired"), write=False, retry_s=0):
            return
        rows = connector.run(
            lambda tx: queue.reclaim_expired(tx, backoff_s=0.0, by_worker=self.id), retry_s=0
        )
        for r in rows:
            log.warning(
                "reclaimed job %s from worker %s: now %s (%s)",
                r["id"],
                r["worker_id"],
                r["status"],
                r["error"],
                extra={"action": "reclaim"},
            )
