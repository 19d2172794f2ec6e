"""Shared build artifacts: a torch extension build takes minutes on a 2-core machine, so the real
cuda_cpp build happens once per session and every test that needs it reads the same cache."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from solforge.problems import Solution
from solforge.sandbox.api import BuildReport
from solforge.sandbox.build import build_solution

DATA = Path(__file__).parent / "data"


def load_data_solution(name: str) -> Solution:
    return Solution.model_validate(json.loads((DATA / name).read_text()))


@dataclass(frozen=True)
class BuiltSolution:
    solution: Solution
    report: BuildReport
    cache_dir: Path
    seconds: float


@pytest.fixture(scope="session")
def data_solution() -> Callable[[str], Solution]:
    """Loads a solution file from tests/build/data by name."""
    return load_data_solution


@pytest.fixture(scope="session")
def build_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache for the whole session, so a build done by one test is a cache hit for the next."""
    return tmp_path_factory.mktemp("solforge-build-cache")


@pytest.fixture(scope="session")
def rmsnorm_build(build_cache: Path) -> BuiltSolution:
    """The real cuda_cpp build (nvcc, torch extension) of the RMSNorm solution, for sm_90a."""
    solution = load_data_solution("cuda_rmsnorm_solution.json")
    started = time.monotonic()
    report = build_solution(solution, target_arch="sm_90a", cache_dir=build_cache, timeout_s=900)
    return BuiltSolution(solution, report, build_cache, time.monotonic() - started)


@pytest.fixture(scope="session")
def cute_build(build_cache: Path) -> BuiltSolution:
    solution = load_data_solution("cute_add_solution.json")
    started = time.monotonic()
    report = build_solution(solution, target_arch="sm_90a", cache_dir=build_cache, timeout_s=300)
    return BuiltSolution(solution, report, build_cache, time.monotonic() - started)
