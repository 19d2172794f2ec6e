"""Test support that ships with the planner: a fake evaluation process and a throwaway PostgreSQL.

Other packages' tests can run the whole queue (enqueue, workers, leases, results) without a GPU or
the sandbox::

    from solforge.planner import Ledger, Worker
    from solforge.planner.testing import fake_request, fake_runner

    ledger = Ledger.open("sqlite://")
    ledger.ensure_agent("a")
    with Worker(ledger, fake_runner(), cpu_slots=1, compile_slots=1):
        job = ledger.enqueue("a", "benchmark", fake_request(sleep_s=0.1))
        job = ledger.wait_job(job.id, "a", timeout_s=10)

The fake's behaviour rides in the solution's ``description`` as JSON (see :func:`fake_request`).
"""

from __future__ import annotations

import contextlib
import glob
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from solforge.problems import Solution
from solforge.sandbox.api import BuildReport, EvalOptions, EvalReport, EvalRequest

from .errors import LedgerError
from .ledger import Ledger
from .workers.contract import Heartbeat, JobResult, JobRunner, JobSpec
from .workers.runners import SubprocessRunner

__all__ = [
    "FAKE_JOB_SCRIPT",
    "InstantRunner",
    "PostgresCluster",
    "fake_argv",
    "fake_request",
    "fake_runner",
    "fake_solution",
    "find_postgres_bin",
    "main",
    "throwaway_postgres",
]

log = logging.getLogger("solforge.planner")

FAKE_JOB_SCRIPT = r"""
import json, os, signal, sys, time
spec = json.loads(sys.argv[1])
request = json.loads(sys.stdin.read() or "{}")
def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()
if spec.get("ignore_term"):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if spec.get("pid_file"):
    with open(spec["pid_file"], "a") as fh:
        fh.write(f"{os.getpid()} {spec['job_id']} {spec['attempt']}\n")
steps = max(1, int(spec.get("steps", 1)))
for i in range(steps):
    emit({"kind": "progress", "message": f"step {i + 1} of {steps}", "done": i, "total": steps})
    time.sleep(float(spec.get("sleep_s", 0.0)) / steps)
if spec.get("hang") or spec["attempt"] <= int(spec.get("hang_attempts", 0)):
    time.sleep(1e9)
if spec["attempt"] <= int(spec.get("fail_attempts", 0)):
    sys.stderr.write(f"fake job failing on attempt {spec['attempt']} on purpose\n")
    sys.exit(3)
if spec.get("garbage"):
    print("this is not an event")
    sys.exit(0)
problem = spec["problem"]
name = request.get("solution", {}).get("name", "fake")
if spec["kind"] == "compile":
    emit({"kind": "build", "build": {"ok": True, "language": "pytorch", "log": "", "seconds": 0.0}})
    sys.exit(0)
traces = []
for w in range(int(spec.get("workloads", 1))):
    status = spec.get("status", "PASSED")
    ev = {"status": status, "log": "" if status == "PASSED" else "fake failure", "environment": {"hardware": "cpu"}}
    if status == "PASSED":
        ev["correctness"] = {"max_absolute_error": 0.0, "max_relative_error": 0.0, "matched_ratio": 1.0, "rounds": 1}
        ev["performance"] = {"latency_ms": float(spec.get("latency_ms", 1.0)), "sol_score": spec.get("sol_score", 0.5),
                             "speedup": spec.get("speedup", 1.0), "timer": "cpu"}
    traces.append({"definition": problem, "solution": name, "workload": {"uuid": f"w{w}", "axes": {}}, "evaluation": ev})
report = {"problem": problem, "solution": name, "device": "cpu", "timer": "cpu", "traces": traces,
          "seconds": float(spec.get("sleep_s", 0.0))}
emit({"kind": "report", "report": report})
"""
"""The fake evaluation process. Its behaviour (all optional): ``sleep_s``, ``steps`` (progress events),
``hang`` (sleep forever), ``hang_attempts`` / ``fail_attempts`` (hang or exit 3 on the first N attempts),
``ignore_term``, ``garbage`` (print a non-event and exit 0), ``status`` (a trace status),
``workloads``, ``latency_ms``, ``sol_score``, ``speedup``, ``pid_file`` (append ``pid job attempt``)."""


def fake_solution(name: str = "fake", *, definition: str = "fake_problem", **behaviour: Any) -> Solution:
    """A valid pytorch solution whose ``description`` carries the fake's behaviour."""
    return Solution.model_validate(
        {
            "name": name,
            "definition": definition,
            "author": "solforge-tests",
            "description": json.dumps(behaviour),
            "spec": {"languages": ["pytorch"], "entry_point": "main.py::run"},
            "sources": [{"path": "main.py", "content": f"# {name}\ndef run(*args):\n    pass\n"}],
        }
    )


def fake_request(problem: str = "fake_problem", *, name: str = "fake", **behaviour: Any) -> EvalRequest:
    """An EvalRequest for the fake runner; keyword arguments are its behaviour (see FAKE_JOB_SCRIPT)."""
    return EvalRequest(
        problem=problem,
        solution=fake_solution(name, definition=problem, **behaviour),
        options=EvalOptions(device="cpu", time_baseline=False),
    )


def fake_argv(job: JobSpec) -> list[str]:
    """The command that runs :data:`FAKE_JOB_SCRIPT` for a job."""
    try:
        behaviour = json.loads(job.request.solution.description or "{}")
    except ValueError:
        behaviour = {}
    if not isinstance(behaviour, dict):
        behaviour = {}
    spec = {**behaviour, "job_id": job.id, "attempt": job.attempt, "kind": job.kind, "problem": job.problem}
    return [sys.executable, "-S", "-c", FAKE_JOB_SCRIPT, json.dumps(spec)]


def fake_runner() -> SubprocessRunner:
    """A SubprocessRunner running the fake evaluation process."""
    return SubprocessRunner(fake_argv)


class InstantRunner:
    """Finishes every job at once, in-process, with a one-workload PASSED report.

    For measuring the queue itself (benchmarks/ledger): no child process, no sandbox.
    """

    def __init__(self, sleep_s: float = 0.0) -> None:
        self.sleep_s = sleep_s

    def run(self, job: JobSpec, heartbeat: Heartbeat, cancel: threading.Event) -> JobResult:
        if self.sleep_s and cancel.wait(self.sleep_s):
            return JobResult.cancelled()
        if job.kind == "compile":
            return JobResult.done(BuildReport(ok=True, language="pytorch"))
        return JobResult.done(
            EvalReport.model_validate(
                {
                    "problem": job.problem,
                    "solution": job.request.solution.name,
                    "device": "cpu",
                    "traces": [
                        {
                            "definition": job.problem,
                            "solution": job.request.solution.name,
                            "workload": {"uuid": "w0", "axes": {}},
                            "evaluation": {
                                "status": "PASSED",
                                "correctness": {"rounds": 1},
                                "performance": {"latency_ms": 1.0, "timer": "cpu"},
                                "environment": {"hardware": "cpu"},
                            },
                        }
                    ],
                }
            )
        )


def main(argv: list[str] | None = None) -> int:
    """``python -m solforge.planner.testing worker --db URL ...``: a worker process with a test runner.

    Tests and benchmarks start these as real processes (to SIGKILL them, or to load a database
    from many processes at once).
    """
    import argparse

    parser = argparse.ArgumentParser(prog="python -m solforge.planner.testing")
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("worker", help="run a worker with the fake (subprocess) or instant runner")
    w.add_argument("--db", required=True)
    w.add_argument("--runner", choices=["fake", "instant"], default="fake")
    w.add_argument("--host", default=None)
    w.add_argument("--cpu-slots", type=int, default=1)
    w.add_argument("--first-slot", type=int, default=0, help="index of this worker's first CPU slot")
    w.add_argument("--compile-slots", type=int, default=1)
    w.add_argument("--lease-s", type=float, default=5.0)
    w.add_argument("--heartbeat-s", type=float, default=0.5)
    w.add_argument("--poll-s", type=float, default=0.05)
    w.add_argument("--retry-backoff-s", type=float, default=0.0)
    w.add_argument("--log-level", default="WARNING")
    args = parser.parse_args(argv)

    from .workers.gpus import Slot
    from .workers.worker import Worker, WorkerConfig

    logging.basicConfig(
        stream=sys.stderr,
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    host = args.host or socket.gethostname()
    slots = [
        Slot(host=host, kind="cpu", index=args.first_slot + i, name="cpu") for i in range(args.cpu_slots)
    ]
    config = WorkerConfig(
        lease_s=args.lease_s,
        heartbeat_s=args.heartbeat_s,
        poll_s=args.poll_s,
        retry_backoff_s=args.retry_backoff_s,
        kill_grace_s=max(1.0, args.lease_s / 2),
        health_interval_s=3600.0,
    )
    runner: JobRunner = fake_runner() if args.runner == "fake" else InstantRunner()
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    try:
        ledger = Ledger.open(args.db)
    except LedgerError as exc:
        log.error("cannot open the ledger: %s", exc)
        return 1
    try:
        worker = Worker(
            ledger, runner, slots=slots, compile_slots=args.compile_slots, host=host, config=config
        )
        worker.start()
        print(json.dumps({"worker_id": worker.id}), file=sys.stderr, flush=True)
        while not stop.wait(0.5):
            pass
        worker.stop(timeout_s=10.0)
    finally:
        ledger.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())


# ---------------------------------------------------------------------------------------------------
# A throwaway PostgreSQL cluster


def find_postgres_bin() -> Path | None:
    """The newest PostgreSQL server bin folder (Debian's /usr/lib/postgresql/N/bin, or initdb on PATH)."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parent.parent.name)
    )
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PostgresCluster:
    """A PostgreSQL cluster in a temporary folder, listening on 127.0.0.1 only, trust auth."""

    bin_dir: Path
    root: Path
    port: int
    user: str = "postgres"

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    def url(self, database: str = "postgres") -> str:
        """A ``postgresql://`` URL for a database of this cluster."""
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"

    def _as_owner(self) -> list[str]:
        # PostgreSQL refuses to run as root: run its binaries as the postgres user then.
        return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []

    def _pg_ctl(self, *args: str) -> None:
        subprocess.run(
            [*self._as_owner(), str(self.bin_dir / "pg_ctl"), "-D", str(self.data_dir), *args],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=120,
        )

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=400"
        )
        self._pg_ctl("-l", str(self.root / "server.log"), "-o", options, "-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``fast`` disconnects clients; ``immediate`` is a crash)."""
        self._pg_ctl("-m", mode, "-w", "stop")

    def restart(self, mode: str = "fast") -> None:
        """Stop and start the server: every client connection dies."""
        self.stop(mode)
        self.start()

    def create_database(self, name: str, *, template: str | None = None) -> str:
        """Create a database (optionally a copy of ``template``) and return its URL."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            if template:
                conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
            else:
                conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def drop_database(self, name: str) -> None:
        """Drop a database, disconnecting its clients."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def throwaway_postgres(bin_dir: Path | None = None) -> Iterator[PostgresCluster]:
    """Start a private PostgreSQL cluster for the duration of the block, then delete it.

    Uses Debian's server binaries (``apt-get install postgresql``); when running as root they run
    as the ``postgres`` user through ``runuser``, with the data folder owned by it.

    Raises
    ------
    FileNotFoundError
        No PostgreSQL server binaries were found.
    subprocess.CalledProcessError
        initdb or pg_ctl failed (their stderr is attached).
    """
    bin_dir = bin_dir or find_postgres_bin()
    if bin_dir is None:
        raise FileNotFoundError("no PostgreSQL server binaries (initdb, pg_ctl); apt-get install postgresql")
    root = Path(tempfile.mkdtemp(prefix="solforge-pg-"))
    os.chmod(root, 0o755)
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    cluster = PostgresCluster(bin_dir=bin_dir, root=root, port=_free_port())
    started = time.monotonic()
    try:
        subprocess.run(
            [
                *cluster._as_owner(),
                str(bin_dir / "initdb"),
                "-D",
                str(cluster.data_dir),
                "-A",
                "trust",
                "-U",
                cluster.user,
                "-E",
                "UTF8",
                "--no-sync",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=120,
        )
        cluster.start()
        log.info("throwaway PostgreSQL on port %d (%.1fs)", cluster.port, time.monotonic() - started)
        yield cluster
    finally:
        with contextlib.suppress(subprocess.CalledProcessError, subprocess.TimeoutExpired, FileNotFoundError):
            cluster.stop("immediate")
        shutil.rmtree(root, ignore_errors=True)
