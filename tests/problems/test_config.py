"""One reading of the environment for every process, and one agent-name rule for server and ledger."""

from __future__ import annotations

from pathlib import Path

import pytest

from solforge.planner import InvalidJobRequest, Ledger
from solforge.problems.config import agent_name_error, cache_dir
from solforge.sandbox.api import EvalOptions
from solforge.sandbox.judge import default_cache_dir as judge_cache
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
