"""The test suite's root: the gpu marker, and the fixtures every tier shares.

The suite is in three tiers, each a folder that mirrors the packages it tests:

- ``tests/unit``: the logic, in this process. No child process, no server, no compiler: the judge talks
  to in-process candidates (``support/in_process_judge.py``) and the ledger is a throwaway SQLite file.
  Run it while you work: ``pytest tests/unit`` (about a minute).
- ``tests/integration``: the real parts together: judge and candidate processes, builds with nvcc and the
  CuTe DSL, confinement, the exploit corpus, PostgreSQL, the whole catalogue.
- ``tests/e2e``: solforge as users and clients see it: the MCP server over stdio and HTTP with the SDK's
  client, the Inspector and Claude Code, the command line, a swarm run.

``tests/support`` holds what the tiers share (helpers and fixture plugins); ``tests/data`` the problem and
solution files they read. GPU tests are marked ``gpu`` and skip cleanly where no CUDA device is visible.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterator

import pytest

pytest_plugins = ["support.ledger_fixtures", "support.tool_fixtures"]


@functools.cache
def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (none visible)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def release_cached_gpu_memory(request: pytest.FixtureRequest) -> Iterator[None]:
    """After a GPU test, hand the CUDA caching allocator's blocks back to the driver.

    Some GPU tests run the catalogue's largest workloads in the test process (one allows 40 GiB each). The
    allocator keeps those blocks, and ``benchmarks/gpu/h200_tests.sh`` runs four shards on one GPU: on an
    80 GiB H100, judges ran out of memory while four long-lived processes held 37, 20, 17 and 2 GiB."""
    yield
    torch = sys.modules.get("torch")  # never import torch (or start CUDA) for a test that did not
    if "gpu" in request.keywords and torch is not None and torch.cuda.is_initialized():
        torch.cuda.empty_cache()
