"""Fixtures for the MCP server's tests: a problem folder, a fake-worker ledger, servers and clients."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.server import MCPServer

from solforge.server.app import create_server
from solforge.tools.testing import ledger_with_worker, services_for, write_rmsnorm_problem


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def problems(tmp_path: Path) -> Path:
    return write_rmsnorm_problem(tmp_path / "problems")


@pytest.fixture
def fake_ledger() -> Iterator[Any]:
    with ledger_with_worker("fake") as ledger:
        yield ledger


@pytest.fixture
def server(problems: Path, tmp_path: Path, fake_ledger: Any) -> MCPServer:
    """The MCP server over the test problem, with a fake-worker ledger, for agent 'alice'."""
    return create_server(
        services_for(problems, ledger=fake_ledger, cache_dir=tmp_path / "cache"), agent="alice"
    )


@pytest.fixture
async def client(server: MCPServer) -> AsyncIterator[Client]:
    async with Client(server, raise_exceptions=True) as c:
        yield c
