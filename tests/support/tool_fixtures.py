"""Fixtures for the tools' and the MCP server's tests: a problem folder, services over it, a ledger with a fake
worker, an in-memory MCP server and the SDK's client connected to it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.server import MCPServer

from solforge.server.app import create_server
from solforge.tools.base import ToolServices
from solforge.tools.testing import ledger_with_worker, services_for, write_rmsnorm_problem


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def problems(tmp_path: Path) -> Path:
    """A folder holding the tiny_rmsnorm problem."""
    return write_rmsnorm_problem(tmp_path / "problems")


@pytest.fixture
def services(problems: Path, tmp_path: Path) -> ToolServices:
    """Services without a ledger."""
    return services_for(problems, cache_dir=tmp_path / "cache")


@pytest.fixture
def fake_ledger() -> Iterator[Any]:
    """A SQLite ledger in memory with a worker running the planner's fake evaluation process."""
    with ledger_with_worker("fake") as ledger:
        yield ledger


@pytest.fixture
def ledger_services(problems: Path, tmp_path: Path, fake_ledger: Any) -> ToolServices:
    return services_for(problems, ledger=fake_ledger, cache_dir=tmp_path / "cache")


@pytest.fixture
def server(problems: Path, tmp_path: Path, fake_ledger: Any) -> MCPServer:
    """The MCP server over the test problem, with a fake-worker ledger, for agent 'alice'."""
    return create_server(services_for(problems, ledger=fake_ledger, cache_dir=tmp_path / "cache"), agent="alice")


@pytest.fixture
async def client(server: MCPServer) -> AsyncIterator[Client]:
    async with Client(server, raise_exceptions=True) as c:
        yield c
