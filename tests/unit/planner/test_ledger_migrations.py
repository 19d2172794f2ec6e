"""The migrations build exactly the schema of solforge.planner.ledger.tables, on both backends."""

from __future__ import annotations

import threading

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from solforge.planner import Ledger, LedgerError
from solforge.planner.ledger.db import _alembic_config, current_revision, head_revision
from solforge.planner.ledger.tables import metadata


def _diff(ledger: Ledger) -> list[object]:
    def include(obj: object, name: str | None, type_: str, reflected: bool, compare_to: object) -> bool:
        return not (type_ == "table" and name == "alembic_version")

    with ledger.connector.engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"compare_type": True, "include_object": include})
        return list(compare_metadata(ctx, metadata))


def test_migrated_schema_matches_the_tables(db_url: str) -> None:
    with Ledger.open(db_url) as ledger:
        assert current_revision(ledger.connector) == head_revision()
        assert _diff(ledger) == []


def test_downgrade_and_upgrade_round_trip(db_url: str) -> None:
    with Ledger.open(db_url) as ledger:
        with ledger.connector.engine.connect() as conn:
            command.downgrade(_alembic_config(conn), "base")
            conn.commit()
        assert current_revision(ledger.connector) is None
    with Ledger.open(db_url) as ledger:
        assert _diff(ledger) == []
        ledger.ensure_agent("after-round-trip")


def test_many_processes_opening_a_fresh_ledger_migrate_once(db_url: str) -> None:
    errors: list[BaseException] = []

    def open_it() -> None:
        try:
            Ledger.open(db_url).close()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    with Ledger.open(db_url) as ledger:
        assert _diff(ledger) == []


def test_a_newer_schema_is_refused(db_url: str) -> None:
    with Ledger.open(db_url) as ledger, ledger.connector.engine.begin() as conn:
        conn.exec_driver_sql("UPDATE alembic_version SET version_num = '9999'")
    with pytest.raises(LedgerError, match="newer than this solforge"):
        Ledger.open(db_url)


def test_the_event_log_is_append_only(db_url: str) -> None:
    with Ledger.open(db_url) as ledger:
        ledger.ensure_agent("a")
        assert ledger.events()
        for statement in ("UPDATE event SET kind = 'forged'", "DELETE FROM event"):
            with pytest.raises(LedgerError, match="append-only"), ledger.connector.transaction() as tx:
                tx.conn.exec_driver_sql(statement)
        assert [e.kind for e in ledger.events()] == ["agent.registered"]


def test_the_head_constant_names_the_newest_migration() -> None:
    from solforge.planner.ledger.migrations import HEAD_REVISION

    assert head_revision() == HEAD_REVISION


def test_an_older_ledger_takes_profile_jobs_once_migrated(db_url: str) -> None:
    from solforge.planner.errors import InvalidJobRequest
    from solforge.planner.testing import fake_request
    from solforge.sandbox.api import ProfileRequest

    request = fake_request()
    profile = request.model_copy(update={"options": request.options.model_copy(update={"profile": ProfileRequest()})})
    with Ledger.open(db_url) as ledger:
        ledger.ensure_agent("a")
        with ledger.connector.engine.connect() as conn:
            command.downgrade(_alembic_config(conn), "0003")
            conn.commit()
        with pytest.raises(LedgerError):  # the 0003 schema's check refuses the new kind
            ledger.enqueue("a", "profile", profile)
    with Ledger.open(db_url) as ledger:  # opening migrates to the head again
        job = ledger.enqueue("a", "profile", profile)
        assert job.kind == "profile" and ledger.get_job(job.id, "a").status == "queued"
        assert _diff(ledger) == []
        with pytest.raises(InvalidJobRequest, match="only a profile job"):
            ledger.enqueue("a", "benchmark", profile)
        with pytest.raises(InvalidJobRequest, match="only a profile job"):
            ledger.enqueue("a", "profile", request)
