"""list_problems, get_problem and read_docs as plain functions (no MCP, no ledger)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from solforge.problems import FormatError, ProblemNotFound
from solforge.tools.base import ToolServices, ToolSettings, clip
from solforge.tools.docs import ReadDocsInput, read_docs
from solforge.tools.errors import ToolInputError
from solforge.tools.problems import GetProblemInput, ListProblemsInput, get_problem, list_problems
from solforge.tools.testing import (
    RMSNORM,
    rmsnorm_definition,
    services_for,
    synthesise_problems,
    write_problem,
)
from solforge.tools.testing import tool_context as context

pytestmark = pytest.mark.anyio


async def test_list_problems_rows_and_text(services: ToolServices) -> None:
    result = await list_problems(ListProblemsInput(), context(services))
    assert result.total == 1 and result.next_offset is None and not result.scores_available
    row = result.rows[0]
    assert (row.name, row.category, row.op_type, row.model, row.workloads) == (
        RMSNORM,
        "llm",
        "rmsnorm",
        "Qwen/Qwen3-8B",
        3,
    )
    assert row.status == "new" and row.best_score is None
    text = result.render()
    assert RMSNORM in text and "get_problem" in text


async def test_list_problems_filters_and_pages(tmp_path: Path) -> None:
    root = synthesise_problems(tmp_path / "many", 40)
    services = services_for(root)
    ctx = context(services)
    page = await list_problems(ListProblemsInput(limit=15), ctx)
    assert page.total == 40 and len(page.rows) == 15 and page.next_offset == 15
    assert "offset=15" in page.render()
    last = await list_problems(ListProblemsInput(limit=15, offset=30), ctx)
    assert len(last.rows) == 10 and last.next_offset is None
    names = [r.name for r in page.rows] + [
        r.name for r in (await list_problems(ListProblemsInput(offset=15, limit=25), ctx)).rows
    ]
    assert len(set(names)) == 40
    assert {
        r.category for r in (await list_problems(ListProblemsInput(category="vision", limit=200), ctx)).rows
    } == {"vision"}
    gemm = await list_problems(ListProblemsInput(op_type="GEMM", limit=200), ctx)
    assert gemm.total == 5 and all(r.op_type == "gemm" for r in gemm.rows)
    flux = await list_problems(ListProblemsInput(model="flux", limit=200), ctx)
    assert flux.total == 10
    text = await list_problems(ListProblemsInput(text="synthetic rope", limit=200), ctx)
    assert text.total == 5
    none = await list_problems(ListProblemsInput(text="no such words"), ctx)
    assert none.total == 0 and "Loosen the filters" in none.render()
    by_wl = await list_problems(ListProblemsInput(sort="workloads", limit=3), ctx)
    assert by_wl.rows[0].workloads >= by_wl.rows[-1].workloads


async def test_list_problems_past_the_end_spellings_and_plurals(tmp_path: Path) -> None:
    ctx = context(services_for(synthesise_problems(tmp_path / "many", 12)))
    past = await list_problems(ListProblemsInput(offset=100_000), ctx)
    assert past.total == 12 and not past.rows
    assert "past the end" in past.render() and "last valid offset is 11" in past.render()
    assert "Loosen" not in past.render()
    upper = await list_problems(ListProblemsInput(category="LLM", limit=200), ctx)  # type: ignore[arg-type]
    assert upper.total == 2 and {r.category for r in upper.rows} == {"llm"}
    qwen = await list_problems(ListProblemsInput(model="qwen3_8b", limit=200), ctx)
    assert qwen.total > 0 and {r.model for r in qwen.rows} == {"Qwen/Qwen3-8B"}
    one = await list_problems(ListProblemsInput(text="synth_rmsnorm_0000"), ctx)
    assert one.render().startswith("1 problem matches;")


async def test_get_problem_workload_offset_past_the_end(services: ToolServices) -> None:
    past = await get_problem(GetProblemInput(name=RMSNORM, workload_offset=99), context(services))
    text = past.render()
    assert not past.workloads and "workload_offset=99 is past the end" in text
    assert "last valid workload_offset is 2" in text and "100-99" not in text


async def test_list_problems_input_is_validated() -> None:
    with pytest.raises(ValidationError):
        ListProblemsInput(category="cooking")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        ListProblemsInput(limit=0)
    with pytest.raises(ValidationError):
        ListProblemsInput(problem_name="x")  # type: ignore[call-arg]


async def test_index_rereads_changed_and_skips_broken_folders(tmp_path: Path) -> None:
    root = synthesise_problems(tmp_path / "p", 3)
    services = services_for(root)
    assert len(services.problems.entries()) == 3
    broken = root / "zz_broken"
    broken.mkdir()
    (broken / "definition.json").write_text("{not json")
    (broken / "workload.jsonl").write_text("")
    rows = (await list_problems(ListProblemsInput(), context(services))).rows
    assert [r.name for r in rows] == sorted(e.name for e in services.problems.entries() if not e.broken)
    with pytest.raises(FormatError):
        services.problems.load("zz_broken")
    time.sleep(0.01)
    write_problem(root, rmsnorm_definition("synth_rmsnorm_0000", description="changed text"))
    assert any(e.description == "changed text" for e in services.problems.entries())


async def test_get_problem_answers_signature_reference_workloads(services: ToolServices) -> None:
    result = await get_problem(GetProblemInput(name=RMSNORM), context(services))
    assert result.signature.startswith("run(hidden_states, weight, eps, output)")
    assert result.axes == {"batch_size": "var", "hidden_size": "const 256"}
    assert [t.shape for t in result.inputs] == ["[batch_size, hidden_size]", "[hidden_size]", "scalar"]
    assert result.reference is not None and "def run" in result.reference and not result.reference_truncated
    assert result.workload_total == 3 and len(result.workloads) == 3
    assert result.workloads[0].tolerance.startswith("atol 0.01")
    assert result.resource_uri == f"solforge://problems/{RMSNORM}/definition"
    paged = await get_problem(
        GetProblemInput(name=RMSNORM, workload_limit=1, include_reference=False), context(services)
    )
    assert (
        paged.reference is None and paged.next_workload_offset == 1 and "workload_offset=1" in paged.render()
    )


async def test_get_problem_unknown_names_close_matches(services: ToolServices) -> None:
    with pytest.raises(ProblemNotFound, match=r"did you mean.*tiny_rmsnorm"):
        await get_problem(GetProblemInput(name="rmsnorm"), context(services))
    with pytest.raises(ProblemNotFound, match=r"did you mean \['tiny_rmsnorm'"):  # a misspelling, first
        await get_problem(GetProblemInput(name="tiny_rmsnrom"), context(services))
    with pytest.raises(ProblemNotFound, match="list_problems"):
        await get_problem(GetProblemInput(name="../etc/passwd"), context(services))


async def test_get_problem_cuts_a_huge_reference_to_max_chars(tmp_path: Path) -> None:
    big = rmsnorm_definition("big_ref")
    big["reference"] += "\n".join(f"# filler line {i} " + "x" * 80 for i in range(2000))
    services = services_for(write_problem(tmp_path / "p", big))
    result = await get_problem(GetProblemInput(name="big_ref"), context(services))
    assert result.reference_truncated
    assert len(result.render()) <= 8000 and len(result.model_dump_json()) <= 8000
    full = await get_problem(GetProblemInput(name="big_ref", max_chars=100_000), context(services))
    assert len(full.reference or "") > len(result.reference or "")


def test_get_problem_with_a_small_max_chars_keeps_what_a_solution_must_match() -> None:
    from solforge.problems import load_problem
    from solforge.tools.problems import describe_problem

    for name in ("qwen3_8b_rmsnorm", "llama3_1_8b_qkv_proj_gemm"):
        result = describe_problem(load_problem(name), GetProblemInput(name=name, max_chars=1000))
        text = result.render()
        assert len(text) <= 1000, len(text)
        assert "inputs:  hidden_states [num_tokens, hidden_size] bfloat16" in text and "outputs: " in text
        assert f"entry point: {result.signature}" in text and result.reference_truncated
        assert "larger max_chars" in text and "page with offset" not in text


def test_a_choice_error_lists_the_choices_once() -> None:
    from solforge.problems.load import describe_validation_error

    with pytest.raises(ValidationError) as caught:
        ListProblemsInput(category="llms")  # type: ignore[arg-type]
    message = describe_validation_error(caught.value, "arguments")
    assert message.count("'multimodal'") == 1, message


async def test_read_docs_topics_read_and_search() -> None:
    services = ToolServices(ToolSettings(include_catalogue=False))
    ctx = context(services)
    topics = await read_docs(ReadDocsInput(), ctx)
    names = {t.topic for t in topics.topics or []}
    assert {"protocol", "solution-format", "cuda-cpp", "cute-dsl", "triton", "pytorch", "gpu-h200", "profiling"} <= names
    assert {"api-cute", "api-triton"} <= names
    page = await read_docs(ReadDocsInput(topic="protocol", max_chars=2000), ctx)
    assert page.text and page.text.startswith("# The solforge protocol") and page.next_offset is not None
    assert len(page.render()) <= 2000
    rest = await read_docs(ReadDocsInput(topic="protocol", offset=page.next_offset, max_chars=100_000), ctx)
    assert rest.next_offset is None and "[end of topic]" in rest.render()
    assert (page.text + (rest.text or "")) == services.docs.get("protocol").text
    hits = await read_docs(ReadDocsInput(query="REWARD_HACK hidden streams"), ctx)
    assert hits.hits and hits.hits[0].topic == "protocol"
    jump = await read_docs(
        ReadDocsInput(topic=hits.hits[0].topic, offset=hits.hits[0].offset, max_chars=600), ctx
    )
    assert jump.text
    stalls = await read_docs(ReadDocsInput(query="long_scoreboard stall"), ctx)
    assert stalls.hits and stalls.hits[0].topic == "profiling"  # an agent reading ncu's stall names finds the guide
    scoped = await read_docs(ReadDocsInput(query="wgmma", topic="cuda-cpp"), ctx)
    assert scoped.hits and all(h.topic == "cuda-cpp" for h in scoped.hits)
    underscored = await read_docs(ReadDocsInput(topic="cuda_cpp", max_chars=500), ctx)
    assert underscored.topic == "cuda-cpp" and underscored.text
    dps = await read_docs(ReadDocsInput(query="destination passing style"), ctx)
    assert dps.hits and {h.topic for h in dps.hits} <= {"protocol", "solution-format"}, dps.render()
    nothing = await read_docs(ReadDocsInput(query="zzqqxx"), ctx)
    assert not nothing.hits and "No documentation matches" in nothing.render()


async def test_read_docs_bad_topic_and_offset() -> None:
    ctx = context(ToolServices(ToolSettings(include_catalogue=False)))
    with pytest.raises(ToolInputError, match="Topics:"):
        await read_docs(ReadDocsInput(topic="cooking"), ctx)
    with pytest.raises(ToolInputError, match=r"did you mean \['cute-dsl'\]"):
        await read_docs(ReadDocsInput(topic="cutedsl"), ctx)
    with pytest.raises(ToolInputError, match="past the end"):
        await read_docs(ReadDocsInput(topic="pytorch", offset=10_000_000), ctx)
    with pytest.raises(ValidationError):
        ReadDocsInput(max_chars=10)


def test_clip_marks_the_cut() -> None:
    text, cut = clip("x" * 1000, 200, hint="ask for more")
    assert cut and len(text) <= 200 and "ask for more" in text
    assert clip("short", 200) == ("short", False)


def test_generated_api_reference_is_current_and_bounded() -> None:
    api = Path(__file__).resolve().parents[3] / "tools" / "docs" / "api"
    for name in ("cute.md", "triton.md"):
        text = (api / name).read_text()
        assert text.startswith("# ") and "Generated by `python -m solforge.tools.docs_gen`" in text
        assert len(text) <= 150_000
    assert "tl.load" in (api / "triton.md").read_text().replace("triton.language.load", "tl.load")


def test_synthesised_problems_validate(tmp_path: Path) -> None:
    root = synthesise_problems(tmp_path / "s", 5)
    services = services_for(root)
    for entry in services.problems.entries():
        problem = services.problems.load(entry.name)
        assert (
            problem.workloads
            and json.loads((entry.folder / "definition.json").read_text())["name"] == entry.name
        )


async def test_get_problem_gives_the_shipped_baselines_of_this_gpu_and_flags_launch_bound_workloads(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """No run of the caller's yet: T_b comes from the table shipped for the server's GPU model, and a workload
    whose baseline is under 5 us says that launch overhead dominates it."""
    import solforge.tools.score as score

    ctx = context(ToolServices(ToolSettings(include_catalogue=True)))
    args = GetProblemInput(name="qwen3_8b_rmsnorm", include_reference=False, workload_limit=20)
    monkeypatch.setattr(score, "local_gpu", lambda: None)  # a CPU server: nothing shipped applies
    bare = await get_problem(args, ctx)
    assert bare.baseline_device is None and all(w.baseline_ms is None and not w.launch_bound for w in bare.workloads)

    monkeypatch.setattr(score, "local_gpu", lambda: "NVIDIA H200")
    result = await get_problem(args, ctx)
    assert result.baseline_device == "NVIDIA H200 (shipped table)"
    assert all(w.baseline_ms for w in result.workloads)
    small = {w.axes["num_tokens"]: w for w in result.workloads}
    assert small[1].launch_bound and small[1].baseline_ms < 0.005
    assert not small[16384].launch_bound and small[16384].baseline_ms > 0.005
    line = next(x for x in result.render().splitlines() if small[1].uuid in x)
    assert "launch-bound" in line
