"""A CUDA C++ build worker started ahead, torch already imported: used by the next build, once."""

from __future__ import annotations

import shutil
from pathlib import Path

import psutil
import pytest

from solforge.problems import Solution
from solforge.sandbox.build import build_solution, spare

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc and the CUDA build of torch")]

_BINDING = """
#include <pybind11/pybind11.h>
int run(int a) {{ return a + {value}; }}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {{ m.def("run", &run); }}
"""


def _solution(value: int) -> Solution:
    return Solution.model_validate({
        "name": f"spare_probe_{value}", "definition": "rmsnorm_fp32", "author": "solforge-tests",
        "spec": {"languages": ["cuda_cpp"], "target_hardware": ["H200"], "entry_point": "binding.cpp::run",
                 "binding": "torch"},
        "sources": [{"path": "binding.cpp", "content": _BINDING.format(value=value)}],
    })


def _waiting_pids() -> list[int]:
    return [s.proc.pid for s in spare._spares if s.alive]


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_changed_source_is_built_by_the_worker_started_after_the_last_build(tmp_path: Path) -> None:
    spare.close_spares()
    try:
        first = build_solution(_solution(1), target_arch="sm_90a", cache_dir=tmp_path, timeout_s=600, keep_spare=True)
        assert first.ok, first.log
        (waiting,) = _waiting_pids()

        second = build_solution(_solution(2), target_arch="sm_90a", cache_dir=tmp_path, timeout_s=600,
                                keep_spare=True)
        assert second.ok and not second.cached, second.log
        assert _gone(waiting)  # it built the second source and exited: a worker is never reused
        (replacement,) = _waiting_pids()
        assert replacement != waiting

        third = build_solution(_solution(3), target_arch="sm_90a", cache_dir=tmp_path, timeout_s=600)
        assert third.ok, third.log
        assert _gone(replacement) and _waiting_pids() == []  # no keep_spare: nothing started for later
        assert build_solution(_solution(3), target_arch="sm_90a", cache_dir=tmp_path, timeout_s=600).cached
    finally:
        spare.close_spares()


def test_a_spare_that_died_is_not_used(tmp_path: Path) -> None:
    spare.close_spares()
    try:
        extra = {"CUTE_DSL_ARCH": "sm_90a"}
        spare.start_spare(extra, None)
        (dead,) = spare._spares
        dead.proc.kill_tree()
        dead.proc.popen.wait(timeout=30)
        assert spare.take_spare(extra, None) is None and spare._spares == []
        report = build_solution(_solution(4), target_arch="sm_90a", cache_dir=tmp_path, timeout_s=600)
        assert report.ok, report.log
    finally:
        spare.close_spares()
