"""profile_kernel's sandbox path on the GPU: one call of a hand-written solution under Nsight Compute (or CUPTI),
through the same judge and confined candidate process as every evaluation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[3]
SOLUTIONS = ROOT / "benchmarks" / "solutions" / "qwen3_8b_rmsnorm"


def _profile(language: str, tool: str, tmp_path: Path, kernel: int | None = None):  # type: ignore[no-untyped-def]
    from solforge.problems import Solution, load_problem
    from solforge.sandbox.api import EvalOptions, EvalRequest, ProfileRequest
    from solforge.sandbox.evaluate import evaluate

    problem = load_problem("qwen3_8b_rmsnorm")
    largest = max(problem.workloads, key=lambda w: w.axes["num_tokens"])
    solution = Solution.model_validate(json.loads((SOLUTIONS / f"{language}.json").read_text()))
    options = EvalOptions(workloads=[largest.uuid], rounds=1, time_baseline=False, cache_dir=tmp_path,
                          profile=ProfileRequest(tool=tool, kernel=kernel))  # type: ignore[arg-type]
    return evaluate(EvalRequest(problem="qwen3_8b_rmsnorm", solution=solution, options=options))


@pytest.mark.parametrize("language", ["triton", "cuda_cpp"])
def test_ncu_profiles_one_call_and_answers_every_field(language: str, tmp_path: Path) -> None:
    from solforge.sandbox import profiling

    if profiling.ncu_path() is None:
        pytest.skip("Nsight Compute (ncu) is not installed")
    report = _profile(language, "ncu", tmp_path)
    assert report.all_passed, [t.evaluation.log for t in report.traces if t.evaluation]
    profile = report.profile
    assert profile is not None and profile.tool == "ncu" and profile.note is None, profile
    assert profile.kernels and profile.kernel_us > 0 and profile.sol_us and profile.sol_us > 0
    main = max(profile.kernels, key=lambda k: k.duration_us)
    assert main.dram_pct is not None and main.sm_pct is not None and main.achieved_occupancy_pct is not None
    assert main.l2_hit_pct is not None and main.stalls and main.registers and main.bound
    assert len(profile.text) <= profiling.ANSWER_CHARS and main.name[:40] in profile.text
    # A page of one kernel's raw sections comes from the kept report, without a second run.
    again = _profile(language, "ncu", tmp_path, kernel=main.index)
    assert again.profile is not None and not again.ran and again.profile.pages and again.profile.pages >= 1
    assert "Section:" in again.profile.text


def test_cupti_lists_the_kernels_of_one_call(tmp_path: Path) -> None:
    report = _profile("pytorch", "cupti", tmp_path)
    assert report.all_passed
    profile = report.profile
    assert profile is not None and profile.tool == "cupti" and profile.kernels
    assert all(k.duration_us > 0 for k in profile.kernels) and profile.text.startswith("cupti:")
    assert profile.note and "tool='cupti' was asked for" in profile.note
    assert not any(k.name.startswith("_Z") for k in profile.kernels), "CUPTI's symbols reach the agent demangled"


def test_a_worker_profile_releases_the_gpu_before_reading_the_report(tmp_path: Path) -> None:
    """Under ncu the GPU work ends with the profiled call; the report's writing and reading (seconds of CPU)
    happen after a worker's lease is released."""
    import contextlib
    import time
    from collections.abc import Iterator

    from solforge.problems import Solution, load_problem
    from solforge.sandbox import profiling
    from solforge.sandbox.api import EvalOptions, EvalRequest, ProfileRequest
    from solforge.sandbox.evaluate import evaluate
    from solforge.sandbox.warm import WarmJudge

    if profiling.ncu_path() is None:
        pytest.skip("Nsight Compute (ncu) is not installed")
    held: dict[str, float] = {}

    @contextlib.contextmanager
    def lease() -> Iterator[None]:
        held["taken"] = time.monotonic()
        yield
        held["released"] = time.monotonic()

    problem = load_problem("qwen3_8b_rmsnorm")
    solution = Solution.model_validate(json.loads((SOLUTIONS / "triton.json").read_text()))
    options = EvalOptions(workloads=[problem.workloads[0].uuid], rounds=1, time_baseline=False, cache_dir=tmp_path,
                          profile=ProfileRequest(tool="ncu"))
    with WarmJudge(device="cuda") as judge:
        started = time.monotonic()
        report = evaluate(EvalRequest(problem="qwen3_8b_rmsnorm", solution=solution, options=options),
                          judge=judge, gpu_lease=lease)
        ended = time.monotonic()
    assert report.all_passed and report.profile is not None and report.profile.kernels
    assert report.phases["profile_report"] > 0.5, report.phases  # closing the candidate and reading ncu's report
    assert ended - held["released"] >= report.phases["profile_report"] * 0.9, (held, started, ended, report.phases)
