"""Fixtures for the ledger's tests in every tier: a ledger on SQLite and on a real PostgreSQL.

PostgreSQL comes from ``SOLFORGE_TEST_PG_URL`` (an account that may CREATE DATABASE) or, when that
is unset, from a throwaway cluster started once per session with the server binaries of Debian's
``postgresql`` package (as the ``postgres`` user when running as root). Without either, tests
marked ``postgres`` (and the postgres half of the ``db_url`` fixture) are skipped.

The schema is migrated once into a template database; each test gets a fresh copy
(``CREATE DATABASE ... TEMPLATE``), as procrastinate's tests do. ``db_url`` gives both backends; the unit tier
narrows it to SQLite (tests/unit/conftest.py), and tests/integration/planner/test_ledger_on_postgres.py runs
those unit tests again on PostgreSQL.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from solforge.planner import Ledger, WorkerConfig
from solforge.planner.testing import PostgresCluster, find_postgres_bin, throwaway_postgres

TEMPLATE_DB = "solforge_test_template"


@dataclass
class PgServer:
    """A PostgreSQL server the tests may create databases on."""

    admin_url: str
    cluster: PostgresCluster | None
    """Set when the tests started the server themselves (and may restart it)."""

    def url(self, database: str) -> str:
        return make_url(self.admin_url).set(database=database).render_as_string(hide_password=False)

    def create_database(self, name: str, *, template: str | None = None) -> str:
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            suffix = f' TEMPLATE "{template}"' if template else ""
            conn.execute(f'CREATE DATABASE "{name}"{suffix}')
        return self.url(name)

    def drop_database(self, name: str) -> None:
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """The session's PostgreSQL server, with a migrated template database; skips when there is none."""
    external = os.environ.get("SOLFORGE_TEST_PG_URL")
    with contextlib.ExitStack() as stack:
        if external:
            server = PgServer(
                admin_url=external.replace("postgresql+psycopg://", "postgresql://"), cluster=None
            )
        else:
            if find_postgres_bin() is None:
                pytest.skip("no PostgreSQL: set SOLFORGE_TEST_PG_URL or apt-get install postgresql")
            cluster = stack.enter_context(throwaway_postgres())
            server = PgServer(admin_url=cluster.url("postgres"), cluster=cluster)
        server.drop_database(TEMPLATE_DB)
        url = server.create_database(TEMPLATE_DB)
        Ledger.open(url).close()  # migrate once; every connection is closed so it can serve as a template
        yield server
        if external:
            server.drop_database(TEMPLATE_DB)


@pytest.fixture
def pg_url(pg_server: PgServer) -> Iterator[str]:
    """A fresh, migrated PostgreSQL database for one test."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    url = pg_server.create_database(name, template=TEMPLATE_DB)
    yield url
    pg_server.drop_database(name)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh ledger database URL, once per backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ledger.db'}"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def ledger(db_url: str) -> Iterator[Ledger]:
    """An open ledger with agents ``alice`` and ``bob``."""
    with Ledger.open(db_url) as led:
        led.ensure_agent("alice")
        led.ensure_agent("bob")
        yield led


@pytest.fixture
def fast_config() -> WorkerConfig:
    """Worker timing shrunk for tests: 2 s leases renewed every 0.1 s."""
    return WorkerConfig(
        lease_s=2.0,
        heartbeat_s=0.1,
        poll_s=0.02,
        retry_backoff_s=0.0,
        kill_grace_s=1.0,
        health_interval_s=3600.0,
        result_retry_s=30.0,
    )
