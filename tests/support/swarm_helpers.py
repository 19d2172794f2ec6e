"""Helpers for the swarm's process-level tests (a uniquely named module: conftest names clash across folders)."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from solforge.planner import Ledger
from solforge.planner.swarm.store import AssignmentView
from solforge.problems import CATALOGUE_DIR

SOLFORGE = Path(sys.executable).parent / "solforge"
SMALL_PROBLEMS = (
    "qwen3_8b_rmsnorm",
    "llama3_1_8b_fused_add_rmsnorm",
    "llama3_1_8b_rope",
    "deepseek_v3_fp8_act_quant",
)


def solforge() -> list[str]:
    return [str(SOLFORGE)] if SOLFORGE.is_file() else [sys.executable, "-m", "solforge.server"]


def small_problems(root: Path, names: tuple[str, ...]) -> Path:
    """Catalogue problems with only their smallest workload, so CPU evaluations take seconds."""
    for name in names:
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(CATALOGUE_DIR / name / "definition.json", folder / "definition.json")
        first = (CATALOGUE_DIR / name / "workload.jsonl").read_text().splitlines()[0]
        (folder / "workload.jsonl").write_text(first + "\n")
    return root


def swarm_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOLFORGE_")}
    env.update(
        SOLFORGE_CACHE=str(tmp_path / "cache"),
        SOLFORGE_HOME=str(tmp_path / "home"),
        PYTHONUNBUFFERED="1",
    )
    return env


def swarm_run_argv(db_url: str, tmp_path: Path, problems: Path, behaviours: str, *extra: str) -> list[str]:
    """``solforge swarm run`` with scripted agents on the given problems, a local CPU worker, quiet."""
    command = f"{{python}} -m solforge.planner.swarm.scripted --behaviour {behaviours} --rounds 1 --steps 2"
    return [
        *solforge(),
        "swarm",
        "run",
        "--db",
        db_url,
        "--problem-dir",
        str(problems),
        "--only-problem-dirs",
        "--launcher",
        "command",
        "--command",
        command,
        "--cpu-slots",
        "2",
        "--compile-slots",
        "1",
        "--dir",
        str(tmp_path / "run"),
        "--tick-s",
        "0.5",
        "--backoff-s",
        "1",
        "--solved-score",
        "0.3",
        "--min-assignment-minutes",
        "0",
        "-q",
        *extra,
    ]


def wait_for(predicate: Callable[[], object], *, timeout_s: float, what: str) -> object:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.25)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def run_id_from(proc: subprocess.Popen[str]) -> str:
    """The run id the command prints first on stdout."""
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    assert len(line) == 12, f"expected a run id, got {line!r}"
    return line


def assert_no_double_assignment(assignments: list[AssignmentView]) -> None:
    """No problem held by two agents at once under the same share (share is 0 unless sharing is on)."""
    by_problem: dict[tuple[str, int], list[AssignmentView]] = {}
    for a in assignments:
        by_problem.setdefault((a.problem, a.share), []).append(a)
    for key, held in by_problem.items():
        held.sort(key=lambda a: a.started_at)
        for before, after in itertools.pairwise(held):
            assert before.ended_at is not None and before.ended_at <= after.started_at, (key, before, after)


def assert_ledger_quiet(ledger: Ledger) -> None:
    """No job left running and no lease held."""
    with ledger.connector.engine.connect() as conn:
        from sqlalchemy import text

        running = conn.execute(text("SELECT id, status FROM job WHERE status = 'running'")).all()
        leases = conn.execute(text("SELECT id, job_id FROM lease WHERE released_at IS NULL")).all()
    assert running == [] and leases == [], (running, leases)
