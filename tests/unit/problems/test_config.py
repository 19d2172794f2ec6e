"""One reading of the environment for every process, and one agent-name rule for server and ledger: one reader
per SOLFORGE_* variable, and nothing else reads them."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from solforge.planner import InvalidJobRequest, Ledger
from solforge.problems import config
from solforge.problems.config import agent_name_error, cache_dir
from solforge.sandbox.api import EvalOptions
from solforge.sandbox.judge.state import default_cache_dir as judge_cache
from solforge.sandbox.sol.hardware import default_calibration_dir
from solforge.server.app import _check_agent
from solforge.tools.base import ToolSettings


def test_every_reader_of_the_cache_root_agrees(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOLFORGE_CACHE", "~/somewhere/solforge")
    expected = Path.home() / "somewhere" / "solforge"
    assert cache_dir() == judge_cache(EvalOptions()) == expected
    assert ToolSettings.from_env().cache_dir == expected and default_calibration_dir() == expected / "calibration"
    monkeypatch.setenv("SOLFORGE_CACHE", "")  # set but empty: the default, not the working directory
    assert cache_dir() == judge_cache(EvalOptions()) == Path.home() / ".cache" / "solforge"


@pytest.mark.parametrize("name", ["agent-1", "swarm:triton.7", "alice@lab", "a" * 64])
def test_a_valid_name_is_valid_for_the_server_and_the_ledger(name: str, tmp_path: Path) -> None:
    assert agent_name_error(name) is None
    assert _check_agent(name) == name
    with Ledger.open(tmp_path / "ledger.db") as ledger:
        assert ledger.ensure_agent(name).name == name


@pytest.mark.parametrize("name", ["", "a" * 65, "has space", "slash/name", "ünïcode"])
def test_an_invalid_name_is_refused_by_both_with_the_same_rule(name: str, tmp_path: Path) -> None:
    error = agent_name_error(name)
    assert error is not None and "1-64 letters" in error
    with pytest.raises(ValueError, match="1-64 letters"):
        _check_agent(name)
    with Ledger.open(tmp_path / "ledger.db") as ledger, pytest.raises(InvalidJobRequest, match="1-64 letters"):
        ledger.ensure_agent(name)


ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("server", "tools", "problems", "sandbox", "planner")
_READ = re.compile(r"""(?:environ\.get\(|getenv\(|environ\[)\s*["']SOLFORGE_\w+["']\s*(?:\]\s*(?!=)|[,)])""")


def test_no_module_but_config_reads_a_solforge_variable() -> None:
    readers = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if path == ROOT / "problems" / "config.py":
                continue
            hits = [line.strip() for line in path.read_text().splitlines() if _READ.search(line)]
            if hits:
                readers[str(path.relative_to(ROOT))] = hits
    assert not readers, f"read these through solforge.problems.config: {readers}"


def test_the_pattern_tells_a_read_from_a_child_environment_being_written() -> None:
    assert _READ.search('x = os.environ.get("SOLFORGE_DB")')
    assert _READ.search("x = os.environ['SOLFORGE_DB'] or y")
    assert not _READ.search('env["SOLFORGE_URL"] = url')


def test_empty_values_count_as_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SOLFORGE_DB", "SOLFORGE_AGENT", "SOLFORGE_TOKEN", "SOLFORGE_HOME", "SOLFORGE_CACHE"):
        monkeypatch.setenv(name, "  ")
    assert config.db_url() is None and config.agent_name() is None and config.token() is None
    assert config.home_dir() is None and not config.cache_dir_is_set()
    assert config.cache_dir() == Path.home() / ".cache" / "solforge"


def test_each_reader(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SOLFORGE_PROBLEM_DIRS", os.pathsep.join([str(tmp_path), "", "~/p"]))
    assert config.problem_dirs() == [tmp_path, Path.home() / "p"]
    monkeypatch.setenv("SOLFORGE_TOKENS", " alice:t1, ,t2")
    assert config.token_pairs() == ["alice:t1", "t2"]
    monkeypatch.setenv("SOLFORGE_CACHE", "~/c")
    assert config.cache_dir_is_set() and config.cache_dir() == Path.home() / "c"
    assert config.spare_pause()
    monkeypatch.setenv("SOLFORGE_SPARE_PAUSE", "0")
    assert not config.spare_pause()
    for value, off in (("off", True), ("OFF", True), ("no", True), ("on", False), ("", False)):
        assert config.defences_off({"SOLFORGE_DEFENCES": value}) is off
    monkeypatch.setenv("SOLFORGE_ONLY_PROBLEM_DIRS", "1")
    assert config.only_problem_dirs()


def test_the_defences_stay_on_for_a_submission() -> None:
    from solforge.sandbox.defences import defences_enabled

    assert defences_enabled(submission=True, environ={"SOLFORGE_DEFENCES": "off"})
    assert not defences_enabled(submission=False, environ={"SOLFORGE_DEFENCES": "off"})
    assert defences_enabled(submission=False, environ={})
