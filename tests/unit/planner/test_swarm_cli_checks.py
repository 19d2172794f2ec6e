"""The swarm's guards for a new user's mistakes: relative ledger paths, a missing agent CLI, a mistyped
--db, a resume past the time limit, and command hints that name the ledger. In-process and fast: no
server or agent is started."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from solforge.planner import Ledger, LedgerError
from solforge.planner.ledger.db import resolve_db_url
from solforge.planner.swarm import LauncherConfig, Limits, Swarm, SwarmConfig, SwarmError, SwarmStore
from solforge.planner.swarm.launchers import check_launcher
from solforge.planner.swarm.mcp_server import server_command
from solforge.planner.swarm.store import db_option
from solforge.server.cli import main


def _config(run_dir: Path, **update: object) -> SwarmConfig:
    config = SwarmConfig(
        problems=["qwen3_8b_rmsnorm"],
        agents=1,
        launcher=LauncherConfig(kind="command", command="{python} -c pass"),
        run_dir=str(run_dir),
    )
    return config.model_copy(update=update)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private default ledger location and this test's folder as the current one."""
    for key in [k for k in os.environ if k.startswith("SOLFORGE_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("SOLFORGE_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_relative_sqlite_paths_resolve_once_against_the_callers_folder(home: Path) -> None:
    here = home.resolve()
    assert resolve_db_url("ledger.db").url == f"sqlite:///{here / 'ledger.db'}"
    resolved = resolve_db_url("sqlite:///sub/ledger.db?synchronous=normal")
    assert resolved.url == f"sqlite:///{here / 'sub' / 'ledger.db'}"
    assert resolved.sqlite_file == here / "sub" / "ledger.db"
    elsewhere = home / "elsewhere"
    elsewhere.mkdir()
    os.chdir(elsewhere)  # what a child started in the run folder sees
    again = resolve_db_url(resolved.shareable)
    assert (again.url, again.sqlite_synchronous) == (resolved.url, "NORMAL")
    assert resolve_db_url(f"sqlite:///{here / 'x.db'}").sqlite_file == here / "x.db"  # absolute stays
    assert resolve_db_url("postgresql://u:pw@h:5432/d").sqlite_file is None


def test_the_mcp_server_is_handed_the_ledger_the_planner_opened(home: Path) -> None:
    ledger = Ledger.open("ledger.db")  # relative, as in the README's example
    try:
        swarm = Swarm.start(ledger, _config(home / "run", db="ledger.db"))
        argv, env = server_command(ledger, swarm.config, "127.0.0.1", 8765)
    finally:
        ledger.close()
    assert "--db" not in argv  # a password in argv is visible to ps; the URL goes in the environment
    assert env["SOLFORGE_DB"] == f"sqlite:///{home.resolve() / 'ledger.db'}"
    os.chdir(swarm.run_dir)  # the server's folder
    assert resolve_db_url(env["SOLFORGE_DB"]).sqlite_file == home.resolve() / "ledger.db"
    assert not (swarm.run_dir / "ledger.db").exists()


def test_a_missing_agent_cli_fails_before_the_run_starts(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(home / "empty-bin"))
    with pytest.raises(ValueError, match=r"claude not found on PATH; install Claude Code or pass --binary"):
        check_launcher(LauncherConfig(kind="claude"))
    with pytest.raises(ValueError, match=r"cursor-agent not found on PATH"):
        check_launcher(LauncherConfig(kind="cursor"))
    with pytest.raises(ValueError, match=r"/nowhere/claude not found or not executable"):
        check_launcher(LauncherConfig(kind="claude", binary="/nowhere/claude"))
    check_launcher(LauncherConfig(kind="command", command="anything-at-all {problem}"))
    fake = home / "bin" / "claude"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    check_launcher(LauncherConfig(kind="claude", binary=str(fake)))

    code = main(
        ["swarm", "run", "--db", "ledger.db", "--problem", "qwen3_8b_rmsnorm", "--launcher", "claude", "-q"]
    )
    assert code != 0
    assert "claude not found on PATH" in capsys.readouterr().err
    assert not (home / "ledger.db").exists()  # refused before anything was recorded


@pytest.mark.parametrize("command", ["status", "stop", "resume"])
def test_a_mistyped_db_is_refused_not_created(
    home: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["swarm", command, "--db", "typo.db"]) != 0
    assert f"no ledger at {home.resolve() / 'typo.db'}" in capsys.readouterr().err
    assert sorted(p.name for p in home.iterdir()) == []  # no typo.db, no typo.db.migrate-lock


def test_hints_name_the_ledger_unless_it_is_the_default(home: Path) -> None:
    ledger = Ledger.open("ledger.db")
    try:
        assert db_option(ledger) == f" --db {home.resolve() / 'ledger.db'}"
        with pytest.raises(LedgerError, match=r"`solforge swarm status --all --db .*ledger\.db` lists"):
            SwarmStore(ledger).get_run("nope")
    finally:
        ledger.close()
    default = Ledger.open()
    try:
        assert db_option(default) == ""
    finally:
        default.close()


def test_resume_past_the_time_limit_is_refused_until_the_limit_is_raised(home: Path) -> None:
    ledger = Ledger.open("ledger.db")
    try:
        config = _config(home / "run", limits=Limits(time_s=60.0))
        run_id = Swarm.start(ledger, config).run_id
        store = SwarmStore(ledger)
        store.heartbeat(run_id, 61.0)
        store.finalize(run_id, "finished", reason="time limit of 60 s reached")
        with pytest.raises(SwarmError, match=rf"run {run_id} reached its 60 s limit.*--time-limit-minutes"):
            Swarm.resume(ledger, run_id)
        assert store.get_run(run_id).status == "finished"  # refused before claiming it
        more = config.model_copy(update={"limits": Limits(time_s=120.0)})
        assert Swarm.resume(ledger, run_id, config=more).config.limits.time_s == 120.0
    finally:
        ledger.close()


def test_an_agent_that_cannot_start_is_reported_on_the_planners_log(
    home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ledger = Ledger.open("ledger.db")
    try:
        config = _config(home / "run", launcher=LauncherConfig(kind="command", command="/nowhere/agent"))
        swarm = Swarm.start(ledger, config)
        agent = next(iter(swarm.agents.values()))
        agent.assignment = SwarmStore(ledger).open_assignment(
            swarm.run_id, agent.view.name, "qwen3_8b_rmsnorm", share=0, reason="test", value=None
        )
        with caplog.at_level(logging.ERROR, logger="solforge.planner.swarm"):
            swarm._launch(agent, event_kind="swarm.agent_started")
    finally:
        ledger.close()
    assert agent.view.state == "backoff"
    assert any(
        "cannot start" in r.getMessage() and "/nowhere/agent" in r.getMessage() for r in caplog.records
    )
