"""``solforge serve`` as a real process: stdio (both protocol eras, nothing but protocol on stdout) and
streamable HTTP (bearer tokens, identities, both eras, refusal to listen beyond loopback unauthenticated)."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from support.server_helpers import free_port, serve_command, server_env, wait_healthy

from solforge.planner import Ledger, Worker
from solforge.planner.testing import fake_runner
from solforge.tools.testing import RMSNORM, fake_solution, solution

pytestmark = pytest.mark.anyio


def stdio_params(problems: Path, tmp_path: Path, *extra: str) -> StdioServerParameters:
    command = serve_command()
    return StdioServerParameters(
        command=command[0],
        args=[*command[1:], "--agent", "stdio-agent", *extra],
        env=server_env(problems, f"sqlite:///{tmp_path / 'ledger.db'}"),
        cwd=str(tmp_path),
    )


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_stdio_both_eras(problems: Path, tmp_path: Path, mode: str) -> None:
    async with Client(stdio_params(problems, tmp_path, "--no-workers"), mode=mode) as c:  # type: ignore[arg-type]
        assert c.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
        names = {t.name for t in (await c.list_tools()).tools}
        assert {"list_problems", "run_benchmark", "submit_solution"} <= names
        listed = await c.call_tool("list_problems", {})
        assert not listed.is_error and RMSNORM in listed.content[0].text  # type: ignore[union-attr]
        bad = await c.call_tool("get_problem", {"name": "nope"})
        assert bad.is_error and "no problem named" in bad.content[0].text  # type: ignore[union-attr]
        res = await c.read_resource(f"solforge://problems/{RMSNORM}/definition")
        assert json.loads(res.contents[0].text)["name"] == RMSNORM  # type: ignore[union-attr]


def test_stdio_stdout_carries_only_protocol(problems: Path, tmp_path: Path) -> None:
    """Raw JSON-RPC over the pipe: every stdout line is a JSON-RPC message, logs go to stderr."""
    params = stdio_params(problems, tmp_path, "--no-workers")
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "get_problem", "arguments": {"name": "nope"}},
        },
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {"name": "no_such_tool", "arguments": {}},
        },
    ]
    proc = subprocess.Popen(
        [params.command, *params.args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=params.env,
        cwd=params.cwd,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
    proc.stdin.flush()
    parsed: list[dict[str, Any]] = []
    while not {1, 2, 3, 4} <= {m.get("id") for m in parsed}:
        line = proc.stdout.readline()  # the test's timeout bounds this
        assert line, "the server closed stdout before answering every request"
        parsed.append(json.loads(line))  # anything but a JSON-RPC message here fails the test
    proc.stdin.close()
    proc.stdin = None  # communicate() must not flush the closed pipe
    _, stderr = proc.communicate(timeout=60)
    assert all(m.get("jsonrpc") == "2.0" for m in parsed)
    by_id = {m.get("id"): m for m in parsed}
    assert len(by_id[2]["result"]["tools"]) == 11
    assert by_id[3]["result"]["isError"] is True
    assert "solforge serving MCP on stdio" in stderr


@pytest.mark.slow
async def test_stdio_benchmark_runs_on_the_in_process_worker(problems: Path, tmp_path: Path) -> None:
    """The default server: its own ledger and worker run a real pytorch solution on the CPU."""
    async with Client(stdio_params(problems, tmp_path)) as c:
        result = await c.call_tool("run_benchmark", {"solution": solution(), "rounds": 1, "wait_s": 50})
        data = result.structured_content
        assert not result.is_error and data is not None
        if data["state"] != "done":
            result = await c.call_tool("wait_job", {"job_id": data["job_id"], "wait_s": 50})
            data = result.structured_content
        assert (
            data is not None and data["state"] == "done" and data["passed"] == 3 and data["device"] == "cpu"
        )


# -- HTTP ------------------------------------------------------------------------------------------


class HttpServer:
    def __init__(self, url: str, tokens: dict[str, str], ledger: Any) -> None:
        self.url = url
        self.tokens = tokens
        self.ledger = ledger

    def client(self, token: str | None, **kwargs: Any) -> Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=120.0))
        return Client(streamable_http_client(self.url, http_client=http), **kwargs)


@pytest.fixture
def http_server(problems: Path, tmp_path: Path) -> Iterator[HttpServer]:
    """``solforge serve --http`` with a static token for alice, bob registered in the ledger, and a fake
    worker in this process on the same SQLite ledger."""
    db = f"sqlite:///{tmp_path / 'ledger.db'}"
    ledger = Ledger.open(db)
    bob = ledger.register_agent("bob")
    port = free_port()
    command = serve_command()
    proc = subprocess.Popen(
        [
            *command,
            "--http",
            f"127.0.0.1:{port}",
            "--agent",
            "alice",
            "--token",
            "alice-secret",
            "--no-workers",
        ],
        env=server_env(problems, db),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    worker = Worker(ledger, fake_runner(), cpu_slots=2, compile_slots=1, gpus=[])
    try:
        wait_healthy(f"http://127.0.0.1:{port}/health", proc)
        worker.start()
        yield HttpServer(f"http://127.0.0.1:{port}/mcp", {"alice": "alice-secret", "bob": bob.token}, ledger)  # type: ignore[union-attr]
    finally:
        worker.stop(timeout_s=10)
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        ledger.close()


def _post(url: str, token: str | None) -> int:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        with urllib.request.urlopen(
            urllib.request.Request(url, data=body, headers=headers), timeout=10
        ) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


def test_http_refuses_missing_and_wrong_tokens(http_server: HttpServer) -> None:
    assert _post(http_server.url, None) == 401
    assert _post(http_server.url, "not-a-token") == 401


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_http_both_eras_with_token_identities(http_server: HttpServer, mode: str) -> None:
    async with http_server.client(http_server.tokens["alice"], mode=mode) as alice:
        assert alice.protocol_version == ("2026-07-28" if mode == "auto" else "2025-11-25")
        assert len((await alice.list_tools()).tools) == 11
        res = await alice.read_resource("solforge://protocol")
        assert "solforge protocol" in res.contents[0].text  # type: ignore[union-attr]
        job = await alice.call_tool("run_benchmark", {"solution": fake_solution(sleep_s=30), "wait_s": 0})
        job_id = job.structured_content["job_id"]  # type: ignore[index]
        not_json = await alice.call_tool("compile_kernel", {"solution_path": "/etc/passwd"})
        text = not_json.content[0].text  # type: ignore[union-attr]
        assert (
            not_json.is_error and "invalid JSON" in text and "root:" not in text
        )  # position only, never content
    async with http_server.client(http_server.tokens["bob"], mode=mode) as bob:
        stolen = await bob.call_tool("cancel_job", {"job_id": job_id})
        assert stolen.is_error and "agent 'bob'" in stolen.content[0].text  # type: ignore[union-attr]
        done = await bob.call_tool("submit_solution", {"solution": fake_solution(name="b", sol_score=0.6)})
        assert done.structured_content["submission"]["accepted"]  # type: ignore[index]
    async with http_server.client(http_server.tokens["alice"], mode=mode) as alice:
        assert not (await alice.call_tool("cancel_job", {"job_id": job_id})).is_error
        board = await alice.call_tool("get_leaderboard", {"problem": RMSNORM})
        assert [r["agent"] for r in board.structured_content["rows"]] == ["bob"]  # type: ignore[index]
    assert {j.agent for j in http_server.ledger.agent_history("alice").jobs} == {"alice"}


def test_http_refuses_to_listen_beyond_loopback_without_tokens(problems: Path, tmp_path: Path) -> None:
    proc = subprocess.run(
        [*serve_command(), "--http", f"0.0.0.0:{free_port()}", "--no-workers"],
        env=server_env(problems, f"sqlite:///{tmp_path / 'l.db'}"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and "refusing to listen" in proc.stderr and "--token" in proc.stderr


def test_bad_serve_arguments_exit_2(problems: Path, tmp_path: Path) -> None:
    env = server_env(problems, f"sqlite:///{tmp_path / 'l.db'}")
    for args in (["--http", "localhost:notaport"], ["--agent", "bad name!"]):
        proc = subprocess.run([*serve_command(), *args], env=env, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2, proc.stderr
        assert "solforge serve:" in proc.stderr


def test_run_server_is_importable_without_torch() -> None:
    code = (
        "import sys; import solforge.server.app, solforge.server.client_config; "
        "from solforge.server.app import create_server; from solforge.tools.base import ToolServices; "
        "create_server(ToolServices()); "
        "bad = [m for m in ('torch', 'triton', 'cutlass', 'sqlalchemy', 'numpy') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_building_the_command_line_imports_no_models() -> None:
    # Every command builds the whole parser (serve included): the problems' pydantic models, the
    # planner and torch load only in the commands that use them.
    code = (
        "import sys; from solforge.server.cli import build_parser; build_parser(); "
        "bad = [m for m in sys.modules if m.startswith(('solforge.problems', 'solforge.planner', 'torch', "
        "'sqlalchemy'))]; print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
