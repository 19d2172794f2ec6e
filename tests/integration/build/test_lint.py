"""The CuTe DSL lint: a warp-wide operation inside a branch only some lanes take is a warning."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from solforge.problems import Solution
from solforge.sandbox.build import build_solution
from solforge.sandbox.build.lint import cute_warnings

HEADER = "import cutlass\nimport cutlass.cute as cute\n\n\n@cute.kernel\ndef k(partial: cute.Tensor, x: cute.Tensor):\n"


def _solution(body: str) -> Solution:
    return Solution.model_validate({
        "name": "lint", "definition": "d", "author": "tests",
        "spec": {"languages": ["cute_dsl"], "entry_point": "main.py::run"},
        "sources": [{"path": "main.py", "content": HEADER + body}],
    })


@pytest.mark.parametrize("body, line", [
    ("    if cute.arch.lane_idx() == 0:\n        partial[cute.arch.warp_idx()] = x[0]\n", 8),
    ("    lane = cute.arch.lane_idx()\n    if lane == 0:\n        pass\n    else:\n"
     "        v = cute.arch.warp_reduction_sum(x[0])\n", 11),
    ("    tidx, _, _ = cute.arch.thread_idx()\n    if tidx % 32 == 0:\n        v = cute.arch.shuffle_sync(x[0], 0)\n", 9),
], ids=["warp-idx-in-lane-0", "reduction-in-else", "shuffle-under-tid-mod-32"])
def test_a_warp_wide_call_under_a_lane_test_is_reported_with_its_line(body: str, line: int) -> None:
    (warning,) = cute_warnings(_solution(body))
    assert warning.startswith(f"main.py:{line}:") and "hang" in warning


@pytest.mark.parametrize("body", [
    "    warp = cute.arch.warp_idx()\n    if cute.arch.lane_idx() == 0:\n        partial[warp] = x[0]\n",
    "    warp = cute.arch.warp_idx()\n    if warp == 0:\n        v = cute.arch.warp_reduction_sum(x[0])\n",
    "    tidx, _, _ = cute.arch.thread_idx()\n    if tidx < 32:\n        v = cute.arch.warp_reduction_sum(x[0])\n",
    "    if cute.arch.lane_idx() == 0:\n        partial[0] = x[0]\n",
    "    def broken(:\n",
], ids=["hoisted", "warp-uniform-branch", "first-warp", "no-warp-call", "syntax-error"])
def test_warp_uniform_branches_and_hoisted_calls_are_not_reported(body: str) -> None:
    assert cute_warnings(_solution(body)) == []


@pytest.mark.slow
def test_the_kernel_that_hung_the_h200_builds_with_the_warning(
    data_solution: Callable[[str], Solution], build_cache: Path
) -> None:
    """It compiles (the bug is only seen when it runs): the build says where it would hang."""
    solution = data_solution("cute_rmsnorm_warp_idx_in_branch.json")
    report = build_solution(solution, target_arch="sm_90a", cache_dir=build_cache, timeout_s=300)
    assert report.ok, report.log
    assert any("warp_idx() inside the lane-dependent branch" in w for w in report.warnings), report.warnings
    fixed = Solution.model_validate_json(
        (Path(__file__).parents[3] / "benchmarks/solutions/qwen3_8b_rmsnorm/cute_dsl.json").read_text())
    assert cute_warnings(fixed) == []
