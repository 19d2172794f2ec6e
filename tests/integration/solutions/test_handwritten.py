"""The hand-written solutions in benchmarks/solutions: three catalogue problems in four languages.

On the CPU (the default run, a few minutes on two cores):
- every solution.json is what build_solutions.py makes from the sources, and solforge accepts it;
- pytorch and triton (TRITON_INTERPRET=1) solutions pass on the two smallest workloads, through
  the evaluation engine;
- cute_dsl solutions compile for sm_90a through the harness (importing them compiles the kernel);
- cuda_cpp kernels (kernel.cu, which includes no torch header) compile with nvcc for sm_90a in
  seconds, without spills and within a register budget; the full torch-extension build through the
  harness is marked slow (about two minutes each on two cores).

On a GPU (marked gpu): every solution on every workload of its problem must PASS. Set
SOLFORGE_HANDWRITTEN_RESULTS=<file.jsonl> to append one line per workload with the timings.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from solforge.problems import Solution, Status, load_problem, load_solution
from solforge.sandbox.api import EvalOptions, EvalRequest
from solforge.sandbox.build import build_solution
from solforge.sandbox.build.logs import parse_ptxas
from solforge.sandbox.build.toolchain import cuda_home, gencode_flags
from solforge.sandbox.evaluate import evaluate

ROOT = Path(__file__).resolve().parents[3]
SOLUTIONS = ROOT / "benchmarks" / "solutions"
PROBLEMS = ("qwen3_8b_rmsnorm", "llama3_1_8b_fused_add_rmsnorm", "deepseek_v3_fp8_act_quant")
LANGUAGES = ("pytorch", "triton", "cuda_cpp", "cute_dsl")
ALL = [(p, lang) for p in PROBLEMS for lang in LANGUAGES]
CPU_RUNNABLE = [(p, lang) for p in PROBLEMS for lang in ("pytorch", "triton")]
FAST_CPU = {"rounds": 2, "iterations": 3, "warmup": 1, "device": "cpu", "run_timeout_s": 300, "time_baseline": False}
MAX_REGISTERS = 64
"""Each kernel keeps at least 8 CTAs of 128 threads resident per SM (the memory-level parallelism
these memory-bound kernels live on); more registers than this would lower that."""

def _solution(problem: str, language: str) -> Solution:
    return load_solution(SOLUTIONS / problem / f"{language}.json")


def _smallest_workloads(problem: str, count: int = 2) -> list[str]:
    workloads = load_problem(problem).workloads
    size = {w.uuid: sum(w.axes.values()) for w in workloads}
    return sorted(size, key=size.__getitem__)[:count]


def _failures(report: object) -> list[str]:
    return [
        f"{t.workload.axes}: {t.evaluation.status}: {t.evaluation.log[-1500:]}"
        for t in report.traces  # type: ignore[attr-defined]
        if t.evaluation.status is not Status.PASSED
    ]


@pytest.fixture(scope="module")
def build_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("handwritten-build-cache")


# --------------------------------------------------------------------------------------------
# The files


def test_solution_files_are_generated_from_the_sources() -> None:
    result = subprocess.run(
        [sys.executable, str(SOLUTIONS / "build_solutions.py"), "--check"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, f"run benchmarks/solutions/build_solutions.py:\n{result.stdout}{result.stderr}"


@pytest.mark.parametrize(("problem", "language"), ALL)
def test_solution_matches_its_definition(problem: str, language: str) -> None:
    solution = _solution(problem, language)
    assert solution.definition == problem
    assert solution.spec.language.value == language
    assert solution.spec.destination_passing_style


# --------------------------------------------------------------------------------------------
# CPU correctness: pytorch and triton


@pytest.mark.parametrize(("problem", "language"), CPU_RUNNABLE)
def test_passes_on_the_cpu(problem: str, language: str, tmp_path: Path) -> None:
    workloads = _smallest_workloads(problem)
    options = EvalOptions(**{**FAST_CPU, "workloads": workloads, "cache_dir": tmp_path / "cache"})
    report = evaluate(EvalRequest(problem=problem, solution=_solution(problem, language), options=options))
    assert len(report.traces) == len(workloads)
    assert report.all_passed, _failures(report)


# --------------------------------------------------------------------------------------------
# Builds: cute_dsl and cuda_cpp for sm_90a


@pytest.mark.parametrize("problem", PROBLEMS)
def test_cute_dsl_compiles_for_sm90a(problem: str, build_cache: Path) -> None:
    report = build_solution(_solution(problem, "cute_dsl"), target_arch="sm_90a", cache_dir=build_cache, timeout_s=600)
    assert report.ok, report.log


@pytest.mark.parametrize("problem", PROBLEMS)
def test_cuda_kernels_compile_without_spills(problem: str, tmp_path: Path) -> None:
    """kernel.cu alone (no torch headers): seconds, and ptxas's per-kernel report."""
    home = cuda_home()
    if home is None or not (home / "bin" / "nvcc").exists():
        pytest.skip("no nvcc on this machine")
    solution = _solution(problem, "cuda_cpp")
    for source in solution.sources:
        (tmp_path / source.path).write_text(source.content)
    result = subprocess.run(
        [str(home / "bin" / "nvcc"), "-c", "-O3", *gencode_flags("sm_90a"), "-Xptxas=-v",
         "-o", str(tmp_path / "kernel.o"), str(tmp_path / "kernel.cu")],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    kernels = parse_ptxas(result.stdout + result.stderr)
    assert kernels, "ptxas reported no kernel"
    for k in kernels:
        assert k.spill_stores_bytes == 0 and k.spill_loads_bytes == 0 and not k.stack_bytes, k
        assert k.registers is not None and k.registers <= MAX_REGISTERS, k


@pytest.mark.slow
@pytest.mark.parametrize("problem", PROBLEMS)
def test_cuda_cpp_builds_as_a_torch_extension(problem: str, build_cache: Path) -> None:
    report = build_solution(_solution(problem, "cuda_cpp"), target_arch="sm_90a", cache_dir=build_cache, timeout_s=900)
    assert report.ok, report.log
    assert report.kernels, "no kernel in the ptxas report"
    for k in report.kernels:
        assert k.spill_stores_bytes == 0 and k.spill_loads_bytes == 0, k


# --------------------------------------------------------------------------------------------
# GPU: every solution, every workload


@pytest.mark.gpu
@pytest.mark.timeout(3600)
@pytest.mark.parametrize(("problem", "language"), ALL)
def test_passes_every_workload_on_the_gpu(problem: str, language: str, build_cache: Path) -> None:
    options = EvalOptions(device="cuda", cache_dir=build_cache, total_timeout_s=3000)
    started = time.monotonic()
    report = evaluate(EvalRequest(problem=problem, solution=_solution(problem, language), options=options))
    results = os.environ.get("SOLFORGE_HANDWRITTEN_RESULTS")
    if results:
        with open(results, "a") as f:
            for s in report.summaries():
                f.write(json.dumps({"problem": problem, "language": language, "device": report.device,
                                    "eval_seconds": round(time.monotonic() - started, 1), **s.model_dump(mode="json")}) + "\n")
    assert len(report.traces) == len(load_problem(problem).workloads), report.note
    assert report.all_passed, _failures(report)
