"""run_benchmark through a real ``solforge serve`` on the CPU: the second call finds the worker's judge
warm and answers at least three times faster, with the same verdicts."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from support.server_helpers import serve_command, server_env

from solforge.tools.testing import solution

pytestmark = pytest.mark.anyio


async def test_a_second_run_benchmark_is_three_times_faster_with_the_same_statuses(
        problems: Path, tmp_path: Path) -> None:
    command = serve_command()
    params = StdioServerParameters(command=command[0], args=[*command[1:], "--agent", "stdio-agent"],
                                   env=server_env(problems, f"sqlite:///{tmp_path / 'ledger.db'}"), cwd=str(tmp_path))
    args = {"solution": solution(), "wait_s": 50}
    async with Client(params) as client:
        timings, answers = [], []
        for call in range(2):
            if call:
                # An agent reads the first answer before it calls again; meanwhile the judge's spare
                # candidate processes (the first call's baseline timing took one) finish starting.
                await anyio.sleep(3)
            started = time.monotonic()
            result = await client.call_tool("run_benchmark", args)
            timings.append(time.monotonic() - started)
            assert not result.is_error, result.content
            answers.append(result.structured_content)
    first, second = answers
    assert first is not None and second is not None
    assert first["state"] == second["state"] == "done"
    assert [r["status"] for r in first["workloads"]] == [r["status"] for r in second["workloads"]]
    assert {r["status"] for r in first["workloads"]} == {"PASSED"}
    assert timings[1] * 3 <= timings[0], f"first {timings[0]:.2f} s, second {timings[1]:.2f} s"
    # The slot's lease covered the GPU work only: not the build, not loading the solution.
    from solforge.planner import Ledger

    with Ledger.open(f"sqlite:///{tmp_path / 'ledger.db'}") as ledger:
        leases = {lease.job_id: lease for lease in ledger.lease_history()}
        for answer in answers:
            report = ledger.get_job(answer["job_id"], "stdio-agent").report
            lease = leases[answer["job_id"]]
            assert report is not None and lease.released_at is not None
            held = lease.released_at.timestamp() - lease.acquired_at.timestamp()
            assert 0 < held < report.seconds - report.phases["load"] + 0.2, (held, report.seconds, report.phases)
