"""Scripted agents in every kernel language: variants of a hand-written kernel, and on the CPU the
statuses their behaviours are meant to get."""

from __future__ import annotations

from pathlib import Path

import pytest

from solforge.planner.swarm.scripted import LANGUAGES, _pick_language, hand_written, solutions_for
from solforge.problems import Solution, Status, load_problem
from solforge.sandbox.api import EvalOptions, EvalRequest
from solforge.sandbox.evaluate import evaluate

ROOT = Path(__file__).resolve().parents[3]
SOLUTIONS = ROOT / "benchmarks" / "solutions"
PROBLEM = "qwen3_8b_rmsnorm"
REFERENCE = "import torch\n\ndef run(hidden_states, weight):\n    return hidden_states * weight\n"


def _entry_source(solution: dict) -> str:
    entry = solution["spec"]["entry_point"].split("::")[0]
    return next(s["content"] for s in solution["sources"] if s["path"] == entry)


def test_every_behaviour_meets_every_language_once_in_sixteen_agents() -> None:
    pairs = {(i % 4, _pick_language(",".join(LANGUAGES), "good,improving,cheating,bad", i)) for i in range(16)}
    assert len(pairs) == 16


@pytest.mark.parametrize("language", ["pytorch", "triton", "cute_dsl"])
def test_a_python_kernel_is_wrapped_for_each_behaviour(language: str) -> None:
    base = hand_written(SOLUTIONS, PROBLEM, language)
    assert base is not None and base["spec"]["languages"] == [language]
    original = _entry_source(base)
    good = solutions_for("good", PROBLEM, REFERENCE, author="a", base=base)
    assert [s["name"] for s in good] == [f"a-{language}"] and _entry_source(good[0]) == original
    improving = solutions_for("improving", PROBLEM, REFERENCE, author="a", steps=3, base=base)
    assert [s["spec"]["languages"] for s in improving] == [[language]] * 3
    assert ["range(3)" in _entry_source(s) for s in improving] == [True, False, False]
    assert all(_entry_source(s).startswith(original) for s in improving)
    (bad,) = solutions_for("bad", PROBLEM, REFERENCE, author="a", base=base, outputs=1)
    assert "out.mul_(2).add_(1)" in _entry_source(bad)
    (cheat,) = solutions_for("cheating", PROBLEM, REFERENCE, author="a", base=base, outputs=1)
    assert "_outputs[key]" in _entry_source(cheat) and cheat["name"] == "a-replay"
    for solution in (*good, *improving, bad, cheat):
        Solution.model_validate(solution)  # every variant is a valid solution.json


def test_a_cuda_kernel_is_reached_through_its_sources_not_a_wrapper() -> None:
    base = hand_written(SOLUTIONS, PROBLEM, "cuda_cpp")
    assert base is not None
    improving = solutions_for("improving", PROBLEM, REFERENCE, author="a", steps=3, base=base)
    assert [s["spec"]["languages"][0] for s in improving] == ["pytorch", "pytorch", "cuda_cpp"]
    (bad,) = solutions_for("bad", PROBLEM, REFERENCE, author="a", base=base)
    assert "#error" in _entry_source(bad) and bad["spec"]["languages"] == ["cuda_cpp"]
    (cheat,) = solutions_for("cheating", PROBLEM, REFERENCE, author="a", base=base)
    assert cheat["spec"]["languages"] == ["pytorch"] and "_outputs" in _entry_source(cheat)
    assert hand_written(SOLUTIONS, "llama3_1_8b_rope", "cuda_cpp") is None  # none written: the reference


@pytest.mark.slow
def test_the_pytorch_kernels_variants_get_the_statuses_their_behaviour_means(tmp_path: Path) -> None:
    problem = load_problem(PROBLEM)
    smallest = min(problem.workloads, key=lambda w: w.axes.get("num_tokens", 0)).uuid
    base = hand_written(SOLUTIONS, PROBLEM, "pytorch")
    reference = problem.definition.reference
    outputs = len(problem.definition.outputs)
    options = EvalOptions(rounds=2, iterations=3, warmup=1, device="cpu", run_timeout_s=60,
                          cache_dir=tmp_path / "cache", workloads=[smallest])

    def statuses(behaviour: str) -> list[list[Status]]:
        found = []
        for solution in solutions_for(behaviour, PROBLEM, reference, author="a", steps=2, base=base, outputs=outputs):
            report = evaluate(EvalRequest(problem=PROBLEM, solution=Solution.model_validate(solution), options=options))
            found.append([t.evaluation.status for t in report.traces])
        return found

    assert statuses("good") == [[Status.PASSED]]
    assert statuses("improving") == [[Status.PASSED], [Status.PASSED]]
    assert statuses("bad") == [[Status.INCORRECT_NUMERICAL]]
    # The replay answers the second round's fresh inputs with the first round's outputs.
    assert statuses("cheating") == [[Status.INCORRECT_NUMERICAL]]
