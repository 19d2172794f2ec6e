"""The MCP server through the SDK's in-memory client: schemas, annotations, every tool, errors, resources,
prompts, progress, sizes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPError
from mcp.server import MCPServer

from solforge.server.app import create_server
from solforge.tools.base import ToolModel, ToolResult
from solforge.tools.registry import ToolSpec, all_tools
from solforge.tools.testing import (
    RMSNORM,
    fake_solution,
    rmsnorm_definition,
    services_for,
    solution,
    write_problem,
)

pytestmark = pytest.mark.anyio

EXPECTED = {
    # name: (read_only, destructive, idempotent)
    "list_problems": (True, False, True),
    "read_docs": (True, False, True),
    "get_problem": (True, False, True),
    "compile_kernel": (False, False, True),
    "run_benchmark": (False, False, False),
    "profile_kernel": (False, False, False),
    "wait_job": (True, False, True),
    "cancel_job": (False, True, True),
    "get_sol_score": (True, False, True),
    "submit_solution": (False, False, False),
    "get_leaderboard": (True, False, True),
}


async def test_tools_are_listed_with_titles_annotations_and_schemas(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == set(EXPECTED)
    for name, (read_only, destructive, idempotent) in EXPECTED.items():
        tool = tools[name]
        assert tool.title and tool.description and len(tool.description) > 80
        assert tool.annotations is not None
        # A hint left out takes the protocol's default: not read-only, destructive, not idempotent.
        hints = tool.annotations
        assert bool(hints.read_only_hint) == read_only
        assert (True if hints.destructive_hint is None else hints.destructive_hint) == (destructive or read_only)
        assert bool(hints.idempotent_hint) == idempotent and hints.open_world_hint is False
        assert (
            tool.input_schema["type"] == "object" and tool.input_schema.get("additionalProperties") is False
        )
        assert tool.output_schema is not None and tool.output_schema["type"] == "object"
        for prop in tool.input_schema["properties"].values():
            assert prop.get("description"), f"{name}: every argument is described for the model"


async def test_the_tool_listing_fits_a_small_context(client: Client) -> None:
    """Every agent pays for tools/list before its first call: compact, about 1,600 characters a tool (15,476
    for ten tools when the budget was set; profile_kernel, the eleventh, took 1,700)."""
    listing = await client.list_tools()
    size = len(json.dumps(listing.model_dump(mode="json", by_alias=True, exclude_none=True), separators=(",", ":")))
    assert size <= 1_600 * len(listing.tools) + 500, size
    specs = {spec.name: spec for spec in all_tools()}
    for tool in listing.tools:
        assert '"title"' not in json.dumps(tool.input_schema)  # pydantic's titles repeat the names
        assert tool.output_schema is not None  # structured output kept, naming every field of the result
        assert set(tool.output_schema["properties"]) == set(specs[tool.name].result_model.model_fields)


async def call(client: Client, name: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    result = await client.call_tool(name, args)
    assert not result.is_error, result.content[0].text  # type: ignore[union-attr]
    text = result.content[0].text  # type: ignore[union-attr]
    assert len(text) <= 8000 and result.structured_content is not None
    schema = {t.name: t for t in (await client.list_tools()).tools}[name].output_schema
    assert schema is not None and set(result.structured_content) <= set(schema["properties"])
    assert len(json.dumps(result.structured_content)) <= 8000
    return text, result.structured_content


async def test_every_tool_happy_path(client: Client) -> None:
    text, data = await call(client, "list_problems", {})
    assert data["total"] == 1 and RMSNORM in text
    text, data = await call(client, "read_docs", {"topic": "protocol"})
    assert "solforge protocol" in text and data["next_offset"]
    text, data = await call(client, "get_problem", {"name": RMSNORM})
    assert data["signature"].startswith("run(hidden_states")
    text, data = await call(client, "compile_kernel", {"solution": fake_solution()})
    assert data["ok"] is True and data["job_id"]
    text, bench = await call(client, "run_benchmark", {"solution": fake_solution(workloads=3, sol_score=0.6)})
    assert bench["state"] == "done" and bench["passed"] == 3
    text, data = await call(client, "wait_job", {"job_id": bench["job_id"], "wait_s": 0})
    assert data["state"] == "done"
    text, slow = await call(client, "run_benchmark", {"solution": fake_solution(sleep_s=60), "wait_s": 0.2})
    text, data = await call(client, "cancel_job", {"job_id": slow["job_id"]})
    assert data["state"] == "cancelled"
    text, data = await call(
        client, "get_sol_score", {"problem": RMSNORM, "latency_ms": 0.01, "baseline_ms": 0.02}
    )
    assert len(data["rows"]) == 3 and data["rows"][0]["bound"] == "memory"
    text, data = await call(
        client, "submit_solution", {"solution": fake_solution(name="final", sol_score=0.7)}
    )
    assert data["submission"]["accepted"] and data["submission"]["rank"] == 1
    text, data = await call(client, "get_leaderboard", {"problem": RMSNORM})
    assert data["rows"][0]["agent"] == "alice" and data["your_rank"] == 1


@pytest.mark.parametrize(
    ("tool", "args", "message"),
    [
        ("list_problems", {"problem_name": "x"}, "Extra inputs are not permitted"),
        ("list_problems", {"limit": "many"}, "valid integer"),
        ("list_problems", {"category": "cooking"}, "llm"),
        ("get_problem", {}, "Field required"),
        ("get_problem", {"name": "no_such_problem"}, "no problem named"),
        ("read_docs", {"topic": "cooking"}, "Topics:"),
        ("compile_kernel", {"solution": {"name": "x"}}, "spec"),
        ("compile_kernel", {"solution": solution(), "target_arch": "sm_90; rm -rf /"}, "pattern"),
        ("run_benchmark", {"solution": solution("x" * 1_100_000)}, "limit"),
        ("run_benchmark", {}, "exactly one"),
        ("run_benchmark", {"solution": solution(definition="nope")}, "no problem named"),
        ("profile_kernel", {"solution": solution()}, "needs a GPU, and no worker of this server has one"),
        ("profile_kernel", {"solution": solution(), "workload": "nope"}, "is not a workload of"),
        ("profile_kernel", {"solution": solution(), "kernel": 0}, "greater than or equal to 1"),
        ("wait_job", {"job_id": "0" * 32}, "belongs to you"),
        ("wait_job", {"job_id": "../../etc"}, "pattern"),
        ("wait_job", {"job_id": "0" * 32, "wait_s": 3600}, "less than or equal to 50"),
        ("cancel_job", {"job_id": "f" * 32}, "belongs to you"),
        ("get_sol_score", {}, "give job_id"),
        ("get_leaderboard", {"problem": "nope"}, "no problem named"),
    ],
)
async def test_bad_input_answers_with_an_actionable_error(
    client: Client, tool: str, args: dict[str, Any], message: str
) -> None:
    result = await client.call_tool(tool, args)
    assert result.is_error
    assert message in result.content[0].text  # type: ignore[union-attr]
    assert "errors.pydantic.dev" not in result.content[0].text  # type: ignore[union-attr]


async def test_another_agents_job_is_invisible(problems: Path, tmp_path: Path, fake_ledger: Any) -> None:
    services = services_for(problems, ledger=fake_ledger, cache_dir=tmp_path / "cache")
    alice, mallory = create_server(services, agent="alice"), create_server(services, agent="mallory")
    async with Client(alice) as a, Client(mallory) as m:
        job = (
            await a.call_tool("run_benchmark", {"solution": fake_solution(sleep_s=30), "wait_s": 0})
        ).structured_content
        assert job is not None
        for tool in ("wait_job", "cancel_job"):
            result = await m.call_tool(tool, {"job_id": job["job_id"]})
            assert result.is_error and "belongs to you" in result.content[0].text  # type: ignore[union-attr]
        result = await m.call_tool("get_sol_score", {"job_id": job["job_id"]})
        assert result.is_error
        assert not (await a.call_tool("cancel_job", {"job_id": job["job_id"]})).is_error


async def test_internal_errors_are_logged_not_leaked(
    problems: Path, caplog: pytest.LogCaptureFixture
) -> None:
    class In(ToolModel):
        x: int = 1
        """A number."""

    class Out(ToolResult):
        y: int

    async def broken(args: In, ctx: Any) -> Out:
        raise RuntimeError("secret internals /etc/shadow")

    spec = ToolSpec(
        name="broken",
        title="Broken",
        fn=broken,
        input_model=In,
        result_model=Out,
        description="A tool that fails, for the test.",
        read_only=True,
    )
    server = create_server(services_for(problems), tools=[spec])
    async with Client(server) as c:
        result = await c.call_tool("broken", {})
    text = result.content[0].text  # type: ignore[union-attr]
    assert result.is_error and "internal error" in text and "RuntimeError" in text and "secret" not in text
    assert any("secret internals" in str(r.exc_info[1]) for r in caplog.records if r.exc_info)


async def test_resources_and_templates(client: Client) -> None:
    resources = {r.uri: r for r in (await client.list_resources()).resources}
    assert "solforge://protocol" in resources
    templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
    assert {
        "solforge://problems/{name}/definition",
        "solforge://problems/{name}/workloads",
        "solforge://docs/{topic}",
    } <= templates
    protocol = await client.read_resource("solforge://protocol")
    assert protocol.contents[0].text.startswith("# The solforge protocol")  # type: ignore[union-attr]
    definition = await client.read_resource(f"solforge://problems/{RMSNORM}/definition")
    assert json.loads(definition.contents[0].text)["name"] == RMSNORM  # type: ignore[union-attr]
    workloads = await client.read_resource(f"solforge://problems/{RMSNORM}/workloads")
    assert len(workloads.contents[0].text.splitlines()) == 3  # type: ignore[union-attr]
    guide = await client.read_resource("solforge://docs/triton")
    assert "Triton" in guide.contents[0].text  # type: ignore[union-attr]
    with pytest.raises(MCPError, match="no problem named"):
        await client.read_resource("solforge://problems/nope/definition")


async def test_prompts(client: Client) -> None:
    prompts = {p.name for p in (await client.list_prompts()).prompts}
    assert {"protocol", "optimise"} <= prompts
    got = await client.get_prompt("optimise", {"problem": RMSNORM, "language": "triton"})
    text = got.messages[0].content.text  # type: ignore[union-attr]
    assert RMSNORM in text and "triton" in text and "submit_solution" in text
    with pytest.raises(MCPError, match=r"no problem named 'rmsnorm_nope'.*did you mean"):
        await client.get_prompt("optimise", {"problem": "rmsnorm_nope"})
    with pytest.raises(MCPError, match="unknown language 'fortran'; use one of pytorch, triton"):
        await client.get_prompt("optimise", {"problem": RMSNORM, "language": "fortran"})
    cpp = await client.get_prompt("optimise", {"problem": RMSNORM, "language": "CUDA-CPP"})
    assert " in cuda_cpp" in cpp.messages[0].content.text  # type: ignore[union-attr]
    protocol = await client.get_prompt("protocol", {})
    assert "solforge protocol" in protocol.messages[0].content.text  # type: ignore[union-attr]
    from solforge.tools.score import local_gpu

    if local_gpu() is None:  # a CPU server asks for nothing it cannot give
        assert "This server has no GPU" in text and "baseline times in get_problem" not in text
        assert "check registers" not in text
    else:
        assert "baseline times in get_problem" in text and "spills" in text


async def test_long_calls_send_increasing_progress(client: Client) -> None:
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    result = await client.call_tool(
        "run_benchmark",
        {"solution": fake_solution(sleep_s=2.5, steps=3), "wait_s": 20},
        progress_callback=on_progress,
    )
    assert not result.is_error and result.structured_content["state"] == "done"  # type: ignore[index]
    assert len(seen) >= 2 and seen == sorted(set(seen))


async def test_legacy_protocol_era_in_memory(server: MCPServer) -> None:
    async with Client(server, mode="legacy") as c:
        assert c.protocol_version == "2025-11-25"
        assert len((await c.list_tools()).tools) == len(all_tools())
    async with Client(server) as c:
        assert c.protocol_version == "2026-07-28"


def test_tool_schema_cache_matches_fresh_generation(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from solforge.server.adapter import tool_schemas

    monkeypatch.setenv("SOLFORGE_CACHE", str(tmp_path))
    specs = all_tools()
    cold = tool_schemas(specs)
    (path,) = (tmp_path / "mcp").glob("tool-schemas-*.json")
    assert tool_schemas(specs) == cold  # read back
    path.write_text("{broken")
    assert tool_schemas(specs) == cold  # a corrupt cache is regenerated
    assert tool_schemas(specs[:3]).keys() == {s.name for s in specs[:3]}  # another tool set, another key


async def test_sol_score_of_many_workloads_fits_and_pages_on(tmp_path: Path) -> None:
    """The structured answer, not only the text, stays within the budget; the rest is read with offset."""
    root = write_problem(tmp_path / "problems", rmsnorm_definition("many_rmsnorm"), tuple(range(1, 81)))
    server = create_server(services_for(root, cache_dir=tmp_path / "cache"), agent="alice")
    args = {"problem": "many_rmsnorm", "latency_ms": 0.01, "baseline_ms": 0.02, "gpu": "H200"}
    async with Client(server, raise_exceptions=True) as c:
        text, data = await call(c, "get_sol_score", args)
        assert data["next_offset"] == len(data["rows"]) < data["total_rows"] == 80
        assert f"offset={data['next_offset']}" in text and "T_SOL ms | latency ms | T_b ms" in text
        text, rest = await call(c, "get_sol_score", {**args, "offset": data["next_offset"]})
        assert rest["rows"][0]["uuid"] not in {r["uuid"] for r in data["rows"]}
