"""Benchmark the ledger's job queue: claim throughput and lease hand-off latency, SQLite and PostgreSQL.

Run from the repository root::

    .venv/bin/python benchmarks/ledger/bench_queue.py            # both backends, writes benchmarks/results/
    .venv/bin/python benchmarks/ledger/bench_queue.py --backends sqlite --jobs 500

Three phases per backend, each with ``--workers`` real worker processes
(``python -m solforge.planner.testing worker --runner instant``: jobs finish at once, in-process, so
the numbers measure the queue and the leases, not an evaluation):

throughput
    Every worker serves its own CPU slot; ``--jobs`` benchmark jobs from 16 agents appear at once
    (one transaction). Jobs/s = jobs / (last lease released - first lease acquired), on the
    database clock. Every job claims, leases, finishes and releases: about ten statements in two
    transactions, plus the event log.
hand-off
    Every worker serves the *same* slot (one GPU shared by many worker processes, the contended
    case). Hand-off latency = the next lease's ``acquired_at`` - the previous lease's
    ``released_at`` on that slot, while jobs are waiting.
pickup
    Workers idle; jobs are enqueued one at a time every 50 ms. Pickup latency = ``started_at`` -
    ``created_at``: dominated by the idle poll interval (``--poll-s``).

PostgreSQL is a throwaway cluster from Debian's binaries (``solforge.planner.testing``) with fsync
off; SQLite is a file in a temporary folder with the ledger's own settings (WAL, synchronous=FULL).
Logs go to stderr; the results go to ``--out`` (JSON) and a Markdown summary next to it.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import itertools
import json
import logging
import os
import platform
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import text

from solforge.planner import Ledger
from solforge.planner.testing import fake_request, throwaway_postgres

log = logging.getLogger("bench_queue")

REPO = Path(__file__).resolve().parents[2]
AGENTS = 16


def _quantiles(values: list[float]) -> dict[str, float | int | None]:
    if not values:
        return {"n": 0, "mean": None, "p50": None, "p95": None, "p99": None, "max": None}
    ordered = sorted(values)

    def q(p: float) -> float:
        pos = (len(ordered) - 1) * p
        lo = int(pos)
        hi = min(lo + 1, len(ordered) - 1)
        return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)

    return {
        "n": len(ordered),
        "mean": statistics.fmean(ordered),
        "p50": q(0.5),
        "p95": q(0.95),
        "p99": q(0.99),
        "max": ordered[-1],
    }


def _ms(stats: dict[str, float | int | None]) -> dict[str, float | int | None]:
    return {k: (round(v * 1000, 2) if isinstance(v, float) else v) for k, v in stats.items()}


class Workers:
    """Worker processes running the instant runner."""

    def __init__(self, url: str, n: int, log_dir: Path, *, shared_slot: bool, poll_s: float) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []
        self.logs: list[Path] = []
        for i in range(n):
            path = log_dir / f"worker-{uuid.uuid4().hex[:6]}.log"
            argv = [
                sys.executable, "-m", "solforge.planner.testing", "worker", "--db", url, "--runner", "instant",
                "--host", "shared" if shared_slot else "bench", "--cpu-slots", "1",
                "--first-slot", "0" if shared_slot else str(i), "--compile-slots", "0",
                "--lease-s", "30", "--heartbeat-s", "2", "--poll-s", str(poll_s),
            ]  # fmt: skip
            with open(path, "wb") as fh:
                self.procs.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=fh))
            self.logs.append(path)

    def wait_ready(self, timeout_s: float = 120.0) -> None:
        deadline = time.monotonic() + timeout_s
        for proc, path in zip(self.procs, self.logs, strict=True):
            while '{"worker_id"' not in path.read_text(errors="replace"):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"worker did not start:\n{path.read_text(errors='replace')[-2000:]}")
                time.sleep(0.05)

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()


def _bulk_enqueue(ledger: Ledger, n: int, tag: str) -> None:
    """Insert n benchmark jobs in one transaction, so that they all appear at once."""
    request = fake_request("bench_problem", name=tag)
    request_json = request.model_dump_json()
    solution_hash = request.solution.content_hash()
    with ledger.connector.transaction() as tx:
        tx.execute("ensure_problem", name="bench_problem", op_type=None, category=None)
        for i in range(n):
            job_id = uuid.uuid4().hex
            tx.execute(
                "insert_job", id=job_id, agent=f"agent{i % AGENTS}", kind="benchmark",
                problem="bench_problem", solution_name=tag, solution_hash=solution_hash, priority=0,
                needs_gpu=True, slot_kind=None, max_attempts=3, timeout_s=600.0,
            )  # fmt: skip
            tx.execute("insert_job_payload", id=job_id, request_json=request_json)


def _wait_drained(ledger: Ledger, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        stats = ledger.queue_stats(window_s=1)
        if not stats.queued and not stats.running:
            return
        if time.monotonic() > deadline:
            raise RuntimeError(f"queue not drained after {timeout_s}s: {stats}")
        time.sleep(0.2)


def _leases(ledger: Ledger, tag_jobs: set[str]) -> list[tuple[str, float, float, str]]:
    rows = []
    for lease in ledger.lease_history():
        if lease.job_id in tag_jobs and lease.released_at is not None:
            rows.append(
                (lease.gpu_id, lease.acquired_at.timestamp(), lease.released_at.timestamp(), lease.worker_id)
            )
    return rows


def _faults(ledger: Ledger, tag_jobs: set[str]) -> dict[str, int]:
    """Leases that expired, jobs that needed a second attempt, jobs recorded done twice (all should be 0)."""
    expired = sum(1 for x in ledger.lease_history() if x.job_id in tag_jobs and x.release_reason == "expired")
    with ledger.connector.engine.connect() as conn:
        attempts = dict(conn.execute(text("SELECT id, attempts FROM job")).all())
        done = [
            r[0]
            for r in conn.execute(text("SELECT job_id FROM event WHERE kind = 'job.done'"))
            if r[0] in tag_jobs
        ]
    return {
        "expired_leases": expired,
        "retried_jobs": sum(1 for j in tag_jobs if attempts.get(j, 0) > 1),
        "jobs_done_twice": len(done) - len(set(done)),
    }


def _job_ids(ledger: Ledger, tag: str) -> set[str]:
    with ledger.connector.engine.connect() as conn:
        return {
            r[0] for r in conn.execute(text("SELECT id FROM job WHERE solution_name = :tag"), {"tag": tag})
        }


def _handoffs(leases: list[tuple[str, float, float, str]]) -> tuple[list[float], int]:
    by_gpu: dict[str, list[tuple[float, float, str]]] = {}
    for gpu, acquired, released, worker in leases:
        by_gpu.setdefault(gpu, []).append((acquired, released, worker))
    gaps: list[float] = []
    cross_worker = 0
    for spans in by_gpu.values():
        spans.sort()
        for (a0, r0, w0), (a1, _r1, w1) in itertools.pairwise(spans):
            if a1 < r0:
                raise AssertionError(f"overlapping leases: {a0}-{r0} and {a1}")
            gaps.append(a1 - r0)
            cross_worker += w0 != w1
    return gaps, cross_worker


def phase_throughput(url: str, ledger: Ledger, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    tag = f"throughput-{uuid.uuid4().hex[:6]}"
    workers = Workers(url, args.workers, tmp, shared_slot=False, poll_s=args.poll_s)
    try:
        workers.wait_ready()
        t0 = time.monotonic()
        _bulk_enqueue(ledger, args.jobs, tag)
        _wait_drained(ledger, timeout_s=600)
        wall_s = time.monotonic() - t0
    finally:
        workers.stop()
    ids = _job_ids(ledger, tag)
    leases = _leases(ledger, ids)
    span = max(r for _, _, r, _ in leases) - min(a for _, a, _, _ in leases)
    gaps, _ = _handoffs(leases)
    held = [r - a for _, a, r, _ in leases]
    return {
        **_faults(ledger, ids),
        "jobs": len(leases),
        "workers": args.workers,
        "slots": args.workers,
        "span_s": round(span, 3),
        "jobs_per_s": round(len(leases) / span, 1),
        "wall_s_including_enqueue": round(wall_s, 3),
        "same_slot_handoff_ms": _ms(_quantiles(gaps)),
        "lease_held_ms": _ms(_quantiles(held)),
    }


def phase_handoff(url: str, ledger: Ledger, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    tag = f"handoff-{uuid.uuid4().hex[:6]}"
    n = args.handoff_jobs
    workers = Workers(url, args.workers, tmp, shared_slot=True, poll_s=args.poll_s)
    try:
        workers.wait_ready()
        _bulk_enqueue(ledger, n, tag)
        _wait_drained(ledger, timeout_s=600)
    finally:
        workers.stop()
    ids = _job_ids(ledger, tag)
    leases = _leases(ledger, ids)
    gaps, cross = _handoffs(leases)
    span = max(r for _, _, r, _ in leases) - min(a for _, a, _, _ in leases)
    return {
        **_faults(ledger, ids),
        "jobs": len(leases),
        "workers_sharing_one_slot": args.workers,
        "jobs_per_s": round(len(leases) / span, 1),
        "handoff_ms": _ms(_quantiles(gaps)),
        "handoffs_to_another_worker": cross,
        "distinct_workers_served": len({w for *_, w in leases}),
    }


def phase_pickup(url: str, ledger: Ledger, args: argparse.Namespace, tmp: Path) -> dict[str, Any]:
    workers = Workers(url, args.workers, tmp, shared_slot=False, poll_s=args.poll_s)
    ids = []
    try:
        workers.wait_ready()
        for i in range(args.pickup_jobs):
            ids.append(ledger.enqueue(f"agent{i % AGENTS}", "benchmark", fake_request("bench_problem")).id)
            time.sleep(0.05)
        _wait_drained(ledger, timeout_s=120)
    finally:
        workers.stop()
    waits = []
    for i, job_id in enumerate(ids):
        view = ledger.get_job(job_id, f"agent{i % AGENTS}")
        assert view.wait_s is not None
        waits.append(view.wait_s)
    return {
        "jobs": len(ids),
        "idle_workers": args.workers,
        "poll_s": args.poll_s,
        "pickup_ms": _ms(_quantiles(waits)),
    }


@contextlib.contextmanager
def _backend(name: str, tmp: Path) -> Iterator[tuple[str, str]]:
    if name == "sqlite":
        yield (
            f"sqlite:///{tmp / 'bench.db'}",
            f"SQLite {sqlite3.sqlite_version} (synchronous=FULL, the default)",
        )
        return
    if name == "sqlite-normal":
        yield (
            f"sqlite:///{tmp / 'bench.db'}?synchronous=normal",
            f"SQLite {sqlite3.sqlite_version} (synchronous=NORMAL)",
        )
        return
    with throwaway_postgres() as cluster:
        url = cluster.create_database("bench")
        import psycopg

        with psycopg.connect(cluster.url("bench")) as conn:
            version = conn.execute("SHOW server_version").fetchone()[0]  # type: ignore[index]
        yield url, f"PostgreSQL {version} (throwaway cluster, fsync=off, 127.0.0.1)"


def machine_info() -> dict[str, Any]:
    cpu = platform.processor() or "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem_gb = None
    with contextlib.suppress(OSError, ValueError, IndexError):
        mem_kb = int(Path("/proc/meminfo").read_text().split("MemTotal:")[1].split()[0])
        mem_gb = round(mem_kb / 1024 / 1024, 1)
    import psycopg
    import sqlalchemy

    return {
        "date_utc": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "host_os": platform.platform(),
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "memory_gb": mem_gb,
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "note": "a shared 2-core development VM; other people's test runs were active during the run",
        "python": platform.python_version(),
        "sqlalchemy": sqlalchemy.__version__,
        "psycopg": psycopg.__version__,
    }


def render_markdown(result: dict[str, Any]) -> str:
    m = result["machine"]
    lines = [
        "# Ledger queue benchmark",
        "",
        f"`benchmarks/ledger/bench_queue.py`, {m['date_utc']}, {m['cpus']} CPUs ({m['cpu']}), "
        f"{m['memory_gb']} GB, Python {m['python']}, load average at start {m['load_average_at_start']}. "
        f"{result['settings']['workers']} worker processes, jobs finish instantly (the queue alone is measured).",
        "",
        "| backend | claim throughput (jobs/s, 1 slot per worker) | same-slot re-claim p50 / p95 (ms) "
        "| hand-off, 1 slot shared by all workers: jobs/s | hand-off p50 / p95 / max (ms) | idle pickup p50 / p95 (ms) |",
        "|---|---|---|---|---|---|",
    ]
    for r in result["backends"].values():
        t, h, p = r["throughput"], r["handoff"], r["pickup"]
        lines.append(
            f"| {r['version']} | {t['jobs_per_s']} ({t['jobs']} jobs in {t['span_s']} s) "
            f"| {t['same_slot_handoff_ms']['p50']} / {t['same_slot_handoff_ms']['p95']} "
            f"| {h['jobs_per_s']} ({h['jobs']} jobs) "
            f"| {h['handoff_ms']['p50']} / {h['handoff_ms']['p95']} / {h['handoff_ms']['max']} "
            f"| {p['pickup_ms']['p50']} / {p['pickup_ms']['p95']} |"
        )
    lines += [
        "",
        "- *claim throughput*: jobs / (last lease released - first lease acquired), database clock; each job is "
        "claim + lease + finish + release + events (two transactions).",
        "- *hand-off*: next lease acquired - previous lease released on one slot while jobs wait; with one "
        "slot shared by every worker it is also the cost of the lock contention between them "
        f"({', '.join(str(r['handoff']['handoffs_to_another_worker']) for r in result['backends'].values())} "
        "hand-offs went to another worker).",
        "- *faults* (expired leases / retried jobs / jobs recorded done twice): "
        + "; ".join(
            f"{name} {r['throughput']['expired_leases'] + r['handoff']['expired_leases']} / "
            f"{r['throughput']['retried_jobs'] + r['handoff']['retried_jobs']} / "
            f"{r['throughput']['jobs_done_twice'] + r['handoff']['jobs_done_twice']}"
            for name, r in result["backends"].items()
        )
        + ". The last must be 0; the others stay 0 unless a worker is starved past its lease.",
        f"- *idle pickup*: enqueue to start with idle workers polling every {result['settings']['poll_s']} s "
        "(jittered 0.5-1.5x); it is the poll interval, not the database.",
        "- SQLite's default (WAL, synchronous=FULL) fsyncs every commit, two per job (claim, finish), and "
        "one writer holds the lock at a time: the fsync latency of the disk bounds its throughput. "
        "`?synchronous=normal` in the URL drops those fsyncs (a power cut, not a crash, can then lose the "
        "last commits). Waiting writers back off in SQLite's busy handler, hence the long tails.",
        "- PostgreSQL is a local throwaway cluster with fsync off; a job is about 13 statements in two "
        "transactions, and on this VM the 16 worker processes and their 16 server backends share 2 cores, "
        "so its rows measure CPU, not the database's limits.",
        f"- {m.get('note', '')}; load average at the end {result.get('load_average_at_end')}. Treat the "
        "numbers as orders of magnitude: a GPU benchmark takes seconds to minutes, so even 27 GPUs need "
        "about one claim per second.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="sqlite,sqlite-normal,postgres")
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--handoff-jobs", type=int, default=400)
    parser.add_argument("--pickup-jobs", type=int, default=60)
    parser.add_argument("--poll-s", type=float, default=0.05)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "ledger_queue.json")
    args = parser.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(message)s")
    logging.getLogger("solforge.planner").setLevel(logging.WARNING)

    result: dict[str, Any] = {
        "machine": machine_info(),
        "settings": {k: v for k, v in vars(args).items() if k != "out"},
        "backends": {},
    }
    for name in args.backends.split(","):
        with tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as tmp_name:
            tmp = Path(tmp_name)
            with _backend(name, tmp) as (url, version):
                with Ledger.open(url) as ledger:
                    for i in range(AGENTS):
                        ledger.ensure_agent(f"agent{i}")
                    r: dict[str, Any] = {"version": version}
                    for phase in (phase_throughput, phase_handoff, phase_pickup):
                        log.info("%s: %s ...", name, phase.__name__)
                        r[phase.__name__.removeprefix("phase_")] = phase(url, ledger, args, tmp)
                        log.info("%s: %s", name, json.dumps(r[phase.__name__.removeprefix("phase_")]))
                result["backends"][name] = r
    result["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    args.out.with_suffix(".md").write_text(render_markdown(result))
    log.info("wrote %s and %s", args.out, args.out.with_suffix(".md"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
