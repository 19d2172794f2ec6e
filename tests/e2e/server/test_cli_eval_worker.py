"""`solforge eval` uses a worker already running on this host, and only a live one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from solforge.planner import Ledger

DATA = Path(__file__).parents[2] / "data" / "sol_execbench_rmsnorm"
EVAL = ["eval", str(DATA), "--solution", str(DATA / "solution_pytorch.json"), "--json", "--rounds", "2",
        "--iterations", "3", "--device", "cpu"]


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "solforge.server.cli", *args], capture_output=True, text=True,
                          timeout=300, env=env)


def _cli_jobs(db: Path) -> list[str]:
    with Ledger.open(db) as ledger:
        return [e.job_id for e in ledger.events() if e.kind == "job.done" and e.agent == "cli"]


@pytest.fixture
def worker(tmp_path: Path) -> tuple[subprocess.Popen[bytes], Path, dict[str, str]]:
    db = tmp_path / "ledger.db"
    env = {**os.environ, "SOLFORGE_CACHE": str(tmp_path / "cache"), "SOLFORGE_HOME": str(tmp_path / "home")}
    env.pop("SOLFORGE_DB", None)
    proc = subprocess.Popen([sys.executable, "-m", "solforge.server.cli", "worker", "--db", str(db)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if db.exists():
            with Ledger.open(db) as ledger:
                if any(w.pid == proc.pid for w in ledger.workers()):
                    break
        time.sleep(0.3)
    else:
        proc.kill()
        pytest.fail("the worker did not register")
    yield proc, db, env
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_eval_runs_on_the_running_worker_and_no_worker_opts_out(worker: tuple) -> None:  # type: ignore[type-arg]
    _proc, db, env = worker
    through = _cli(*EVAL, "--db", str(db), env=env)
    assert through.returncode == 0, through.stderr
    assert "evaluating on the running worker" in through.stderr
    assert len([line for line in through.stdout.splitlines() if line.startswith("{")]) == 3
    assert len(_cli_jobs(db)) == 1
    alone = _cli(*EVAL, "--db", str(db), "--no-worker", env=env)
    assert alone.returncode == 0 and "running worker" not in alone.stderr
    assert len([line for line in alone.stdout.splitlines() if line.startswith("{")]) == 3
    assert len(_cli_jobs(db)) == 1


def test_a_dead_worker_is_not_used(worker: tuple) -> None:  # type: ignore[type-arg]
    proc, db, env = worker
    os.killpg(proc.pid, signal.SIGKILL)  # no stop is recorded: its row still looks registered
    proc.wait(10)
    result = _cli(*EVAL, "--db", str(db), env=env)
    assert result.returncode == 0, result.stderr
    assert "running worker" not in result.stderr and _cli_jobs(db) == []
