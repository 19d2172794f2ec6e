"""Unit tests of the database seam: the query file, URL resolution and error mapping (no database)."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
import sqlalchemy.exc as sa_exc

from solforge.planner import LedgerError, LedgerIntegrityError, LedgerUnavailable
from solforge.planner.ledger.db import default_ledger_path, map_db_error, resolve_db_url
from solforge.planner.ledger.sql import DIALECTS, load_queries, parse_queries


def test_every_query_exists_for_both_backends_with_tokens_replaced() -> None:
    queries = {d: load_queries(d) for d in DIALECTS}
    assert set(queries["sqlite"]) == set(queries["postgresql"])
    assert {"claim_job", "insert_lease", "heartbeat_job", "finish_job", "reclaim_expired_jobs"} <= set(
        queries["sqlite"]
    )
    for dialect, named in queries.items():
        for name, clause in named.items():
            assert "$" not in clause.text, f"{dialect}:{name} still has a token"
    assert "SKIP LOCKED" in queries["postgresql"]["claim_job"].text
    assert "SKIP LOCKED" not in queries["sqlite"]["claim_job"].text
    assert "RETURNING" in queries["sqlite"]["claim_job"].text


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("-- a --\n-- nothing\n", "has no SQL"),
        ("-- a --\nSELECT 1\n-- a --\nSELECT 2\n", "defined twice"),
        ("-- a@sqlite --\nSELECT 1\n", "one backend only"),
    ],
)
def test_malformed_query_files_are_refused(source: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_queries(source)


def test_default_ledger_path_follows_solforge_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SOLFORGE_HOME", str(tmp_path / "home"))
    assert default_ledger_path() == tmp_path / "home" / "ledger.db"
    monkeypatch.delenv("SOLFORGE_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_ledger_path() == tmp_path / "xdg" / "solforge" / "ledger.db"
    monkeypatch.delenv("XDG_DATA_HOME")
    assert default_ledger_path() == Path.home() / ".local" / "share" / "solforge" / "ledger.db"


def test_urls_resolve(tmp_path: Path) -> None:
    assert resolve_db_url(tmp_path / "a" / "l.db").url == f"sqlite:///{tmp_path / 'a' / 'l.db'}"
    assert (tmp_path / "a").is_dir()
    pg = resolve_db_url("postgres://u:secret@h:5/db")
    assert pg.url == "postgresql+psycopg://u:secret@h:5/db" and pg.dialect == "postgresql"
    assert "secret" not in pg.display
    tmp = resolve_db_url("sqlite://")
    assert tmp.temporary_dir is not None and tmp.temporary_dir.is_dir()
    tmp.temporary_dir.rmdir()
    with pytest.raises(ValueError, match="unsupported database URL"):
        resolve_db_url("mysql://h/db")
    relaxed = resolve_db_url(f"sqlite:///{tmp_path / 'r.db'}?synchronous=normal")
    assert relaxed.url == f"sqlite:///{tmp_path / 'r.db'}" and relaxed.sqlite_synchronous == "NORMAL"
    assert resolve_db_url(f"sqlite:///{tmp_path / 'r.db'}").sqlite_synchronous == "FULL"
    with pytest.raises(ValueError, match="only synchronous"):
        resolve_db_url(f"sqlite:///{tmp_path / 'r.db'}?journal_mode=delete")


def _all_dbapi_error_classes() -> list[type[sa_exc.DBAPIError]]:
    return [c for _, c in inspect.getmembers(sa_exc, inspect.isclass) if issubclass(c, sa_exc.DBAPIError)]


@pytest.mark.parametrize("cls", _all_dbapi_error_classes(), ids=lambda c: c.__name__)
def test_every_driver_error_maps_into_the_ledger_family(cls: type[sa_exc.DBAPIError]) -> None:
    exc = cls("SELECT 1", {}, Exception("boom"))
    mapped = map_db_error(exc)
    assert isinstance(mapped, LedgerError)
    if issubclass(cls, sa_exc.OperationalError | sa_exc.InterfaceError):
        assert isinstance(mapped, LedgerUnavailable)
    if issubclass(cls, sa_exc.IntegrityError):
        assert isinstance(mapped, LedgerIntegrityError)


def test_a_dropped_connection_is_transient() -> None:
    exc = sa_exc.DBAPIError(
        "SELECT 1", {}, Exception("server closed the connection"), connection_invalidated=True
    )
    assert isinstance(map_db_error(exc), LedgerUnavailable)
    assert isinstance(map_db_error(sa_exc.TimeoutError("pool exhausted")), LedgerUnavailable)
