"""A swarm of scripted MCP agents against the real server, with a real CPU worker and the real sandbox.

``solforge swarm run`` runs as a subprocess, as a user would start it; the tests read the ledger.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
from support.swarm_helpers import (
    SMALL_PROBLEMS,
    assert_ledger_quiet,
    assert_no_double_assignment,
    run_id_from,
    small_problems,
    solforge,
    swarm_env,
    swarm_run_argv,
    wait_for,
)

from solforge.planner import Ledger
from solforge.planner.swarm import SwarmStore
from solforge.planner.swarm.summary import scaling_points, summarise_run

pytestmark = pytest.mark.slow


def _events(ledger: Ledger, kind: str, agent: str | None = None) -> list[dict[str, object]]:
    return [
        {"agent": e.agent, **e.detail}
        for e in ledger.events(limit=100_000)
        if e.kind == kind and (agent is None or e.agent == agent)
    ]


def test_swarm_assigns_moves_restarts_and_keeps_cheats_off_the_leaderboard(tmp_path: Path) -> None:
    problems = small_problems(tmp_path / "problems", SMALL_PROBLEMS)
    db_url = f"sqlite:///{tmp_path / 'ledger.db'}"
    argv = swarm_run_argv(
        db_url, tmp_path, problems, "good,cheating,good,bad", "--agents", "4", "--time-limit-minutes", "2.5"
    )
    proc = subprocess.Popen(
        argv, env=swarm_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        run_id = run_id_from(proc)
        with Ledger.open(db_url) as ledger:
            store = SwarmStore(ledger)
            victim = f"swarm-{run_id}-02"

            def working_pid() -> int | None:
                agent = next(a for a in store.agents(run_id) if a.name == victim)
                return agent.pid if agent.state == "working" else None

            pid = wait_for(working_pid, timeout_s=60, what="agent 02 to start")
            os.killpg(int(pid), signal.SIGKILL)  # type: ignore[arg-type]
            _, err = proc.communicate(timeout=400)
            assert proc.returncode == 0, err[-3000:]

            run = store.get_run(run_id)
            assert run.status in ("finished", "stopped") and not run.live, run
            assignments = store.assignments(run_id)
            assert_no_double_assignment(assignments)
            assert all(a.ended_at is not None for a in assignments)
            # agents move from a solved problem to an open one
            moved = [
                (a, b)
                for a in assignments
                for b in assignments
                if a.agent == b.agent
                and a.end_reason == "solved"
                and b.started_at >= a.ended_at  # type: ignore[operator]
                and b.problem != a.problem
            ]
            assert moved, [(a.agent, a.problem, a.end_reason) for a in assignments]
            # the killed agent was restarted on its assignment
            crashed = _events(ledger, "swarm.agent_crashed", victim)
            assert crashed and "code -9" in str(crashed[0]["reason"])
            assert _events(ledger, "swarm.agent_restarted", victim)
            assert next(a for a in store.agents(run_id) if a.name == victim).restarts >= 1
            # cheating submissions were made, rejected, and never ranked
            cheat = f"swarm-{run_id}-01"
            history = ledger.agent_history(cheat)
            assert history.submissions and all(s.passed < s.total for s in history.submissions)
            for name in SMALL_PROBLEMS:
                assert cheat not in {e.agent for e in ledger.leaderboard(name)}
            assert cheat not in {s.agent for s in ledger.best_per_problem()}
            # wrong answers are benchmarked and rejected the same way, never ranked
            bad = f"swarm-{run_id}-03"
            bad_history = ledger.agent_history(bad)
            assert bad_history.jobs and all(s.passed < s.total for s in bad_history.submissions)
            assert bad not in {s.agent for s in ledger.best_per_problem()}
            assert {s.agent for s in ledger.best_per_problem()} <= {f"swarm-{run_id}-00", victim}
            # every decision is in the event log with its reason
            assigned = _events(ledger, "swarm.assigned")
            assert len(assigned) == len(assignments) and all(e["reason"] for e in assigned)
            assert all(a.state == "stopped" for a in store.agents(run_id))
            # the run's figures (swarm.json): the cheats named by behaviour, none of them ranked
            summary = summarise_run(ledger, run_id, behaviours=["good", "cheating", "good", "bad"])
            assert summary.agents == 4 and summary.slots >= 1 and summary.cheats_ranked == 0
            assert summary.lanes_per_slot == 1  # a CPU slot times one job at a time
            assert summary.cheating_agents == [cheat, bad]
            assert summary.evaluations > 0 and summary.queue_wait_p50_s is not None
            assert summary.lease_utilisation is not None and 0.0 < summary.lease_utilisation <= 1.0
            # Benchmarks and submissions held the slot (no profiles: this server has no GPU).
            assert {"benchmark", "submit"} <= set(summary.lease_s_by_kind) <= {"benchmark", "submit"}
            assert summary.lease_utilisation * summary.steady_s * summary.slots == \
                pytest.approx(sum(summary.lease_s_by_kind.values()), rel=0.01, abs=0.01)
            assert summary.evaluations_per_gpu_hour and summary.evaluations_per_gpu_hour > 0
            # per slot: the same evaluations and busy time, split by GPU, and never two leases at once on one
            assert sum(f.evaluations for f in summary.by_slot) == summary.evaluations
            assert len(summary.by_slot) == summary.slots and summary.overlapping_leases == 0
            assert sum(f.busy_s for f in summary.by_slot) == \
                pytest.approx(sum(summary.lease_s_by_kind.values()), rel=0.01, abs=0.01)
            assert summary.headline.submissions >= 2
            # the report's scaling section sees the finished run with the same figures
            (point,) = [p for p in scaling_points(ledger) if p.run == run_id]
            assert point.slots == summary.slots and point.evaluations == summary.evaluations
            assert point.evaluations_per_hour == pytest.approx(summary.evaluations / (summary.steady_s / 3600.0),
                                                               rel=0.01)
            assert_ledger_quiet(ledger)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_swarm_stop_from_another_process_then_resume(tmp_path: Path) -> None:
    problems = small_problems(tmp_path / "problems", SMALL_PROBLEMS[:1])
    db_url = f"sqlite:///{tmp_path / 'ledger.db'}"
    env = swarm_env(tmp_path)
    argv = swarm_run_argv(
        db_url, tmp_path, problems, "improving", "--agents", "1", "--time-limit-minutes", "3"
    )
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        run_id = run_id_from(proc)
        agent = f"swarm-{run_id}-00"
        with Ledger.open(db_url) as ledger:
            store = SwarmStore(ledger)

            def a_job_runs() -> bool:
                return any(
                    status == "running" and kind == "benchmark"
                    for _, _, kind, status in store.open_jobs(run_id)
                )

            wait_for(a_job_runs, timeout_s=90, what="a benchmark to run")
            stop = subprocess.run(
                [*solforge(), "swarm", "stop", run_id, "--db", db_url, "--reason", "test"],
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert stop.returncode == 0, stop.stderr[-3000:]
            _, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, err[-3000:]
            run = store.get_run(run_id)
            assert run.status == "stopped" and "test" in (run.stop_reason or ""), run
            assert all(a.state == "stopped" and a.pid is None for a in store.agents(run_id))
            assert all(a.ended_at is not None for a in store.assignments(run_id))
            assert store.open_jobs(run_id) == []
            assert_ledger_quiet(ledger)
            assert _events(ledger, "swarm.stop_requested")
            before = len(store.assignments(run_id))

        resumed = subprocess.run(
            [*solforge(), "swarm", "resume", run_id, "--db", db_url, "-q", "--time-limit-minutes", "3"],
            env=env,
            capture_output=True,
            text=True,
            timeout=400,
        )
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert resumed.stdout.strip() == run_id
        with Ledger.open(db_url) as ledger:
            store = SwarmStore(ledger)
            run = store.get_run(run_id)
            assert run.status == "finished" and not run.live, run
            after = store.assignments(run_id)
            assert len(after) > before and {a.agent for a in after} == {agent}
            assert [a.name for a in store.agents(run_id)] == [agent]
            assert _events(ledger, "swarm.resumed")
            assert ledger.leaderboard(SMALL_PROBLEMS[0])[0].agent == agent
            assert_ledger_quiet(ledger)
        # The improving agent profiles its first passing version once; this server has no GPU, so it is
        # refused with the reason, and the agent goes on to its next version and its submission.
        log = (tmp_path / "run" / "logs" / f"{agent}.log").read_text()
        assert log.count("call profile_kernel") == log.count("no profile: ") >= 1, log[-3000:]
        assert "needs a GPU" in log and log.rindex("no profile: ") < log.rindex("call submit_solution"), log[-3000:]
        status = subprocess.run(
            [*solforge(), "swarm", "status", run_id, "--db", db_url, "--json"],
            env=env,
            capture_output=True,
            text=True,
        )
        data = json.loads(status.stdout)
        assert data["run"]["status"] == "finished" and data["agents"][0]["name"] == agent
        assert SMALL_PROBLEMS[0] in data["problems"] and data["slot_jobs"] >= 2
        shown = subprocess.run(
            [*solforge(), "swarm", "status", run_id, "--db", db_url], env=env, capture_output=True, text=True
        )
        assert shown.returncode == 0 and "agents" in shown.stdout and "GPU queue" in shown.stdout
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_silent_and_crashing_agents_are_restarted_then_failed(tmp_path: Path) -> None:
    problems = small_problems(tmp_path / "problems", SMALL_PROBLEMS[:2])
    db_url = f"sqlite:///{tmp_path / 'ledger.db'}"
    argv = swarm_run_argv(
        db_url,
        tmp_path,
        problems,
        "silent,crash",
        "--agents",
        "2",
        "--silent-s",
        "4",
        "--max-restarts",
        "1",
        "--time-limit-minutes",
        "2",
        "--no-workers",
    )
    done = subprocess.run(argv, env=swarm_env(tmp_path), capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr[-3000:]  # every agent failed
    run_id = done.stdout.strip().splitlines()[0]
    with Ledger.open(db_url) as ledger:
        store = SwarmStore(ledger)
        assert store.get_run(run_id).stop_reason == "every agent failed"
        silent, crash = f"swarm-{run_id}-00", f"swarm-{run_id}-01"
        reasons = {
            a: [str(e["reason"]) for e in _events(ledger, "swarm.agent_crashed", a)] for a in (silent, crash)
        }
        assert len(reasons[silent]) == 1 and "silent for" in reasons[silent][0]
        assert len(reasons[crash]) == 1 and "exited with code 3" in reasons[crash][0]
        for name, why in ((silent, "silent for"), (crash, "exited with code 3")):
            assert len(_events(ledger, "swarm.agent_restarted", name)) == 1
            (failed,) = _events(ledger, "swarm.agent_failed", name)
            assert why in str(failed["reason"]) and "2 crashes in a row" in str(failed["reason"])
        assert {a.state for a in store.agents(run_id)} == {"failed"}
        assert {a.end_reason for a in store.assignments(run_id)} == {"crashed"}

