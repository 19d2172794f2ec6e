"""The file formats: SOL-ExecBench files load unchanged, bad files fail with file, field and fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from solforge.problems import (
    Definition,
    FormatError,
    ProblemNotFound,
    Solution,
    Status,
    expr,
    load_problem,
    load_solution,
    parse_solution,
    write_problem_folder,
)
from solforge.problems.errors import ExpressionError
from solforge.problems.trace import Evaluation

DATA = Path(__file__).parents[2] / "data" / "sol_execbench_rmsnorm"


def test_sol_execbench_folder_loads_and_round_trips(tmp_path: Path) -> None:
    problem = load_problem(DATA)
    assert problem.name == "rmsnorm_h4096_handwritten"
    assert [w.uuid for w in problem.workloads] == ["a1b2c3d4-0001", "a1b2c3d4-0002", "a1b2c3d4-0003"]
    # The dataset's misspelt key is kept (SOL-ExecBench ignores it, so the 0.99 default applies).
    third = problem.workloads[2]
    assert third.effective_tolerance.required_matched_ratio == 0.99
    assert third.tolerance is not None and third.tolerance.model_extra == {"required_match_ratio": 0.98}
    assert problem.workloads[1].tolerance is None
    write_problem_folder(problem, tmp_path / "copy")
    again = load_problem(tmp_path / "copy")
    assert again.definition == problem.definition
    assert again.workloads == problem.workloads
    original = json.loads((DATA / "definition.json").read_text())
    written = json.loads((tmp_path / "copy" / "definition.json").read_text())
    assert {k: written[k] for k in original} == original


def test_axes_resolve_with_expressions_and_constraints() -> None:
    d = Definition.model_validate({
        "name": "x", "reference": "def run(a):\n    return a\n",
        "axes": {"B": {"type": "var"}, "S": {"type": "var"}, "H": {"type": "const", "value": 8},
                 "T": {"type": "expr", "expression": "B * S"}},
        "inputs": {"a": {"shape": ["T", "H"], "dtype": "float32"}},
        "outputs": {"o": {"shape": ["T", "H"], "dtype": "float32"}},
        "constraints": ["T % 2 == 0"],
    })
    sizes = d.resolve_axes({"B": 2, "S": 3})
    assert sizes == {"B": 2, "S": 3, "H": 8, "T": 6}
    assert d.input_shapes(sizes) == {"a": (6, 8)}
    with pytest.raises(ValueError, match="constraint"):
        d.resolve_axes({"B": 1, "S": 3})
    with pytest.raises(ValueError, match="var axes"):
        d.resolve_axes({"B": 1})


def test_definition_errors_name_the_field() -> None:
    with pytest.raises(ValueError, match=r"inputs\.a\.shape names axis 'Q'"):
        Definition.model_validate({
            "name": "x", "reference": "def run(a):\n    return a\n", "axes": {},
            "inputs": {"a": {"shape": ["Q"], "dtype": "float32"}}, "outputs": {},
        })


def test_malformed_definition_file_names_file_and_line(tmp_path: Path) -> None:
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "definition.json").write_text('{"name": "x",\n "axes": ')
    (folder / "workload.jsonl").write_text("")
    with pytest.raises(FormatError, match=r"definition\.json: line 2"):
        load_problem(folder)
    (folder / "definition.json").write_text(json.dumps({"name": "x", "axes": {}, "inputs": {}, "outputs": {},
                                                        "reference": "def run():\n    pass\n",
                                                        "category": "spaceships"}))
    (folder / "workload.jsonl").write_text('{"uuid": "u", "axes": {}}\n')
    with pytest.raises(FormatError, match=r"definition\.json: category"):
        load_problem(folder)


def test_workload_errors(tmp_path: Path) -> None:
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "definition.json").write_text((DATA / "definition.json").read_text())
    (folder / "workload.jsonl").write_text('{"uuid": "u1", "axes": {}}\n')
    with pytest.raises(FormatError, match=r"workload\.jsonl:1: axes: .*batch_size"):
        load_problem(folder)
    (folder / "workload.jsonl").write_text('{"uuid": "u1", "axes": {"batch_size": 1}, "inputs": {"x": {"type": "warp"}}}\n')
    with pytest.raises(FormatError, match=r"workload\.jsonl:1: inputs\.x"):
        load_problem(folder)
    (folder / "workload.jsonl").write_text(
        '{"uuid": "u1", "axes": {"batch_size": 1}, "inputs": {"hidden_states": {"type": "custom"}, "weight": {"type": "random"}}}\n'
    )
    with pytest.raises(FormatError, match="if one input is custom, all must be"):
        load_problem(folder)


def test_unknown_problem_suggests_names() -> None:
    with pytest.raises(ProblemNotFound, match="no problem 'definitely-not-a-problem'"):
        load_problem("definitely-not-a-problem")


def test_solution_loads_sol_execbench_file() -> None:
    solution = load_solution(DATA / "solution_pytorch.json")
    assert solution.spec.entry_file == "main.py" and solution.spec.entry_symbol == "run"
    assert solution.spec.destination_passing_style is True
    assert solution.spec.effective_compile_options.cuda_cflags == ["-O3", "--use_fast_math"]


def _solution(**overrides: object) -> dict:
    base = {
        "name": "s", "definition": "d", "author": "a",
        "spec": {"languages": ["cuda_cpp"], "target_hardware": ["LOCAL"], "entry_point": "kernel.cu::run"},
        "sources": [{"path": "kernel.cu", "content": "// code"}],
    }
    base.update(overrides)
    return base


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"sources": [{"path": "../evil.cu", "content": "x"}]}, "climbs out"),
        ({"sources": [{"path": "/etc/passwd", "content": "x"}]}, "absolute"),
        ({"sources": [{"path": "other.cu", "content": "x"}]}, "entry file 'kernel.cu'"),
        ({"spec": {"languages": ["fortran"], "entry_point": "kernel.cu::run"}}, "spec.languages.0"),
        ({"spec": {"languages": ["cuda_cpp", "triton"], "entry_point": "kernel.cu::run"}}, "mix C\\+\\+ and Python"),
        ({"spec": {"languages": ["triton"], "entry_point": "kernel.cu::run"}}, "needs a .py entry file"),
        ({"spec": {"languages": ["cuda_cpp"], "entry_point": "kernel.cu:run"}}, "must be 'file::function'"),
        ({"sources": [{"path": "kernel.cu", "content": "x" * 1_000_001}]}, "limit is 1000000 bytes"),
        ({"sources": [{"path": "kernel.cu", "content": "a"}, {"path": "kernel.cu", "content": "b"}]}, "repeat the paths"),
    ],
)
def test_bad_solutions_are_rejected_with_the_reason(change: dict, message: str) -> None:
    with pytest.raises(FormatError, match=message):
        parse_solution(_solution(**change))


def test_legacy_language_field_and_aliases() -> None:
    s = parse_solution(_solution(spec={"language": "cuda", "entry_point": "kernel.cu::run"}))
    assert [lang.value for lang in s.spec.languages] == ["cuda_cpp"]


def test_malformed_solution_json_names_position() -> None:
    with pytest.raises(FormatError, match="line 1 column"):
        parse_solution("{not json")


def test_content_hash_ignores_name_and_tracks_sources() -> None:
    a = Solution.model_validate(_solution())
    b = Solution.model_validate(_solution(name="other", author="someone"))
    c = Solution.model_validate(_solution(sources=[{"path": "kernel.cu", "content": "// changed"}]))
    assert a.content_hash() == b.content_hash() != c.content_hash()


def test_evaluation_payload_must_match_status() -> None:
    with pytest.raises(ValueError, match="carries correctness and performance"):
        Evaluation(status=Status.PASSED)
    with pytest.raises(ValueError, match="must say why"):
        Evaluation(status=Status.RUNTIME_ERROR)
    assert Evaluation(status=Status.TIMEOUT, log="killed").status is Status.TIMEOUT


def test_expressions_are_arithmetic_only() -> None:
    assert expr.evaluate("ceil_div(a, 128) * 2", {"a": 300}) == 6
    assert expr.evaluate("a == b * 2 and a > 1", {"a": 4, "b": 2}) is True
    for bad in ("__import__('os')", "a.__class__", "[a for a in b]", "open('x')"):
        with pytest.raises(ExpressionError):
            expr.evaluate(bad, {"a": 1, "b": 2})


def test_a_digit_in_a_shape_is_a_literal_size_as_sol_execbench_reads_it(tmp_path: Path) -> None:
    """SOL-ExecBench's own axis check skips digit strings: ["1", "hidden_size"] is a shape of size 1 x H."""
    from solforge.problems import load_problem
    from solforge.tools.testing import rmsnorm_definition, write_problem

    data = rmsnorm_definition("literal_dims")
    data["inputs"]["weight"]["shape"] = ["1", "hidden_size"]
    problem = load_problem(write_problem(tmp_path, data) / "literal_dims")
    assert problem.definition.inputs["weight"].shape == ["1", "hidden_size"]  # kept as written, for the round trip
    sizes = problem.definition.resolve_axes(problem.workloads[0].axes)
    assert problem.definition.input_shapes(sizes)["weight"] == (1, problem.definition.axes["hidden_size"].value)
    undeclared = rmsnorm_definition("bad_dims")
    undeclared["inputs"]["weight"]["shape"] = ["one", "hidden_size"]
    with pytest.raises(FormatError, match="names axis 'one', which is not declared"):
        load_problem(write_problem(tmp_path, undeclared) / "bad_dims")

