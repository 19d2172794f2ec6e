"""The agent's loop through a real ``solforge serve`` over stdio, counted: from connecting to an accepted
submission in at most 12 tool calls for an agent that follows PROTOCOL.md (the real sandbox, on the CPU)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from support.server_helpers import serve_command, server_env

from solforge.tools.testing import RMSNORM, solution

pytestmark = pytest.mark.anyio

MAX_CALLS = 12


async def test_the_protocols_loop_reaches_an_accepted_submission_in_twelve_calls(
        problems: Path, tmp_path: Path) -> None:
    command = serve_command()
    params = StdioServerParameters(command=command[0], args=[*command[1:], "--agent", "looper"],
                                   env=server_env(problems, f"sqlite:///{tmp_path / 'ledger.db'}"), cwd=str(tmp_path))
    calls: list[str] = []
    async with Client(params) as client:

        async def call(tool: str, args: dict[str, Any]) -> dict[str, Any]:
            calls.append(tool)
            result = await client.call_tool(tool, args)
            assert not result.is_error, (tool, result.content)
            return dict(result.structured_content or {})

        async def finished(data: dict[str, Any]) -> dict[str, Any]:
            while data.get("state") in ("queued", "running"):  # the protocol: wait_job on a job_id
                data = await call("wait_job", {"job_id": data["job_id"], "wait_s": 50})
            return data

        # PROTOCOL.md section 1, in order.
        await call("read_docs", {"topic": "protocol"})
        listed = await call("list_problems", {})
        name = listed["rows"][0]["name"]
        problem = await call("get_problem", {"name": name})
        assert problem["signature"].startswith("run(hidden_states, weight, eps, output)")
        sol = solution()
        built = await call("compile_kernel", {"solution": sol})
        assert built["ok"] is True
        bench = await finished(await call("run_benchmark", {"solution": sol}))
        assert bench["state"] == "done" and bench["passed"] == bench["total"] > 0
        await call("get_sol_score", {"job_id": bench["job_id"]})
        submitted = await finished(await call("submit_solution", {"solution": sol}))
        assert submitted["submission"]["accepted"] is True and submitted["warning"] is None
        board = await call("get_leaderboard", {"problem": RMSNORM})
        assert board["rows"][0]["agent"] == "looper"
    assert len(calls) <= MAX_CALLS, calls
