"""The ledger's unit tests again, on a real PostgreSQL server.

tests/unit/planner runs the queue, the API, the GPU leases and the migrations on a throwaway SQLite file. The
same tests are collected here a second time with ``db_url`` pointing at a fresh PostgreSQL database, so that both
backends pass exactly the same checks. Each test keeps its name with its module's in front
(``test_ledger_queue__test_...``).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

UNIT = Path(__file__).resolve().parents[2] / "unit" / "planner"
MODULES = ("test_ledger_api", "test_ledger_queue", "test_ledger_gpu_lease", "test_ledger_migrations")

pytestmark = pytest.mark.postgres


@pytest.fixture
def db_url(pg_url: str) -> str:
    return pg_url


def _tests_of(name: str) -> dict[str, Any]:
    """The module's tests, renamed ``<module>__<test>`` (each still runs in its own module's globals)."""
    spec = importlib.util.spec_from_file_location(f"postgres_{name}", UNIT / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    fixtures = [a for a, v in vars(module).items() if "fixture" in type(v).__name__.lower()]
    assert not fixtures, f"{name} defines fixtures {fixtures}: move them to tests/support to share them here"
    return {f"{name}__{a}": v for a, v in vars(module).items() if a.startswith("test_") and callable(v)}


for _name in MODULES:
    globals().update(_tests_of(_name))
