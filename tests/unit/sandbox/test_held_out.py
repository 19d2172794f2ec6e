"""Held-out workloads: new sizes for each submission, named by what they are, so their baselines are found again."""

from __future__ import annotations

import random
from pathlib import Path

from solforge.problems import load_problem
from solforge.sandbox.baseline import baseline_key
from solforge.sandbox.judge import held_out_uuid, held_out_workloads

DATA = Path(__file__).parents[2] / "data" / "sol_execbench_rmsnorm"


def test_a_held_out_workload_drawn_again_has_the_same_uuid_and_baseline_key() -> None:
    problem = load_problem(str(DATA))
    first = held_out_workloads(problem, 2, random.Random(7))  # type: ignore[arg-type]
    again = held_out_workloads(problem, 2, random.Random(7))  # type: ignore[arg-type]
    assert len(first) == 2 and [w.uuid for w in first] == [w.uuid for w in again]
    assert all(w.uuid.startswith("heldout-") and w.uuid == held_out_uuid(w) for w in first)
    published = {w.uuid for w in problem.workloads} | {str(w.axes) for w in problem.workloads}
    assert not {w.uuid for w in first} & published and not {str(w.axes) for w in first} & published
    key = baseline_key(problem.definition, first[0], "NVIDIA H200", "2.11.0", "auto")
    assert key == baseline_key(problem.definition, again[0], "NVIDIA H200", "2.11.0", "auto")
    # Other sizes, another name: a baseline is never shared between sizes.
    moved = first[0].model_copy(update={"axes": {k: v + 1 for k, v in first[0].axes.items()}})
    assert held_out_uuid(moved) != first[0].uuid
    others = {w.uuid for seed in range(20) for w in held_out_workloads(problem, 2, random.Random(seed))}  # type: ignore[arg-type]
    assert len(others) > 4  # still drawn at random: many different workloads over many submissions
