"""The database seam: URLs, engines, transactions over named queries, error mapping and migrations.

Everything the ledger does goes through :class:`Connector`: a transaction (:meth:`Connector.transaction`)
exposes ``execute``, ``one`` and ``all`` over the named queries of ``queries.sql``, and
:meth:`Connector.run` wraps a function in a transaction that is retried while the database is
unreachable. Driver and SQLAlchemy errors become :mod:`solforge.planner.errors` here and only here.

SQLite
    One file in WAL mode (readers never block the writer), ``synchronous=FULL`` (a committed result
    survives a power cut, not only a process crash; ``?synchronous=normal`` in the URL relaxes it),
    foreign keys on, a 30 s busy timeout. The driver's own
    transaction handling is switched off and every transaction is begun explicitly: ``BEGIN IMMEDIATE``
    for writes, so the write lock is taken up front and two writers never deadlock upgrading from a
    read lock; plain ``BEGIN`` for reads.
PostgreSQL
    psycopg 3, READ COMMITTED, a 5 s connect timeout. No pre-ping (it would double the round trips
    of the small transactions workers run all the time): when a server restart kills pooled
    connections, the first statement fails as :class:`LedgerUnavailable`, SQLAlchemy invalidates
    the whole pool, and :meth:`Connector.run` retries on fresh connections.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import random
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy.exc as sa_exc
from sqlalchemy import Connection, Engine, RowMapping, create_engine, event, text
from sqlalchemy import inspect as sa_inspect
from sqlalchemy.engine import make_url

from solforge.problems import config

from ..errors import LedgerError, LedgerIntegrityError, LedgerUnavailable
from .sql import load_queries

__all__ = [
    "Connector",
    "ResolvedUrl",
    "Tx",
    "current_revision",
    "default_ledger_path",
    "head_revision",
    "map_db_error",
    "migrate",
    "remove_temporary",
    "resolve_db_url",
]

log = logging.getLogger("solforge.planner")

T = TypeVar("T")

SQLITE_BUSY_TIMEOUT_MS = 30_000
"""How long a SQLite writer waits for the lock before failing (many workers share one file)."""
PG_CONNECT_TIMEOUT_S = 5
"""Give up on one connection attempt after this long; Connector.run retries until its own budget."""
_MIGRATION_LOCK_KEY = 0x50_1F_0E_DB
"""pg_advisory_lock key that serialises migrations of one database across processes."""


def default_ledger_path() -> Path:
    """Where the default SQLite ledger lives.

    ``$SOLFORGE_HOME/ledger.db`` when SOLFORGE_HOME is set, else ``$XDG_DATA_HOME/solforge/ledger.db``,
    else ``~/.local/share/solforge/ledger.db``.
    """
    home = config.home_dir()
    if home is not None:
        return home / "ledger.db"
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data).expanduser() / "solforge" / "ledger.db"


@dataclass(frozen=True)
class ResolvedUrl:
    """A database URL ready for SQLAlchemy, and what it means."""

    url: str
    """The SQLAlchemy URL (``sqlite:///...`` or ``postgresql+psycopg://...``)."""
    dialect: str
    """``sqlite`` or ``postgresql``."""
    temporary_dir: Path | None = None
    """For a throwaway SQLite ledger: the folder to delete on close."""
    sqlite_synchronous: str = "FULL"
    """SQLite's ``synchronous`` pragma: FULL (default) or NORMAL (``?synchronous=normal``)."""

    @property
    def display(self) -> str:
        """The URL with any password hidden, for logs."""
        return make_url(self.url).render_as_string(hide_password=True)

    @property
    def shareable(self) -> str:
        """A URL another process (in any folder) resolves to this same database, options included.

        SQLite paths are absolute already; a non-default ``synchronous`` is carried as its option.
        """
        if self.dialect == "sqlite" and self.sqlite_synchronous != "FULL":
            return f"{self.url}?synchronous={self.sqlite_synchronous.lower()}"
        return self.url

    @property
    def sqlite_file(self) -> Path | None:
        """The SQLite file of a lasting SQLite ledger; None for PostgreSQL and throwaway ledgers."""
        if self.dialect != "sqlite" or self.temporary_dir is not None:
            return None
        return Path(make_url(self.url).database or "")


def resolve_db_url(url: str | os.PathLike[str] | None) -> ResolvedUrl:
    """Turn what a user typed into a URL the ledger can open.

    Parameters
    ----------
    url
        - None: the default SQLite ledger (:func:`default_ledger_path`).
        - ``sqlite://`` or ``sqlite:///:memory:``: a throwaway SQLite ledger in a temporary folder,
          deleted on close (a real file, so worker threads can share it).
        - ``sqlite:///path/to/ledger.db`` or a plain path: that SQLite file (folders are created); a
          relative path is resolved against the current folder, once, so the URL is absolute.
          ``?synchronous=normal`` trades the last commits before a power cut (not a crash) for
          about twice the write throughput; the default is ``full``.
        - ``postgresql://user:pw@host:port/db`` (also ``postgres://`` and ``postgresql+psycopg://``).

    Raises
    ------
    ValueError
        Any other scheme.
    """
    if url is None:
        path = default_ledger_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        return ResolvedUrl(f"sqlite:///{path}", "sqlite")
    raw = os.fspath(url)
    if "://" not in raw:
        path = Path(raw).expanduser().resolve()
        path.parent.mkdir(parents=True, exist_ok=True)
        return ResolvedUrl(f"sqlite:///{path}", "sqlite")
    scheme, rest = raw.split("://", 1)
    scheme = scheme.lower()
    if scheme == "sqlite":
        if rest in ("", "/", "/:memory:"):
            tmp = Path(tempfile.mkdtemp(prefix="solforge-ledger-"))
            return ResolvedUrl(f"sqlite:///{tmp / 'ledger.db'}", "sqlite", temporary_dir=tmp)
        path_part = rest[1:] if rest.startswith("/") else rest
        path_text, _, query = path_part.partition("?")
        synchronous = "FULL"
        for key, _, value in (item.partition("=") for item in query.split("&") if item):
            if key != "synchronous" or value.upper() not in ("FULL", "NORMAL"):
                raise ValueError(
                    f"unsupported SQLite URL option {key}={value!r}: only synchronous=full|normal"
                )
            synchronous = value.upper()
        # resolved once, here: a child process started in another folder must open the same file
        path = Path(path_text).expanduser().resolve()
        path.parent.mkdir(parents=True, exist_ok=True)
        return ResolvedUrl(f"sqlite:///{path}", "sqlite", sqlite_synchronous=synchronous)
    if scheme in ("postgresql", "postgres", "postgresql+psycopg"):
        return ResolvedUrl(f"postgresql+psycopg://{rest}", "postgresql")
    raise ValueError(
        f"unsupported database URL scheme {scheme!r}: give sqlite:///path/ledger.db, a file path, "
        "or postgresql://user:password@host:port/database"
    )


def _make_engine(resolved: ResolvedUrl) -> Engine:
    if resolved.dialect == "sqlite":
        engine = create_engine(
            resolved.url,
            connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000},
            pool_size=8,
            max_overflow=24,
        )

        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.isolation_level = None  # we issue BEGIN ourselves, below
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute(f"PRAGMA synchronous={resolved.sqlite_synchronous}")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
            cur.close()

        @event.listens_for(engine, "begin")
        def _on_begin(conn: Connection) -> None:
            write = conn.get_execution_options().get("solforge_write", True)
            conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

        return engine
    return create_engine(
        resolved.url,
        connect_args={"connect_timeout": PG_CONNECT_TIMEOUT_S, "application_name": "solforge"},
        pool_size=4,
        max_overflow=28,
        pool_recycle=1800,
    )


def map_db_error(exc: BaseException) -> LedgerError:
    """The ledger error for a SQLAlchemy or driver error (the caller raises it ``from exc``).

    - unreachable, restarting or locked database, serialisation failures, pool exhaustion:
      :class:`LedgerUnavailable` (transient: :meth:`Connector.run` retries these);
    - constraint violations: :class:`LedgerIntegrityError`;
    - anything else (a bug in a query, a type mismatch): :class:`LedgerError`.
    """
    if isinstance(exc, LedgerError):
        return exc
    first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, sa_exc.DBAPIError) and exc.connection_invalidated:
        return LedgerUnavailable(f"lost the database connection: {first_line}")
    if isinstance(exc, sa_exc.OperationalError | sa_exc.InterfaceError | sa_exc.TimeoutError):
        return LedgerUnavailable(f"the database is unavailable: {first_line}")
    if isinstance(exc, sa_exc.IntegrityError):
        return LedgerIntegrityError(f"the database refused the write: {first_line}")
    return LedgerError(f"database error ({type(exc).__name__}): {first_line}")


class Tx:
    """One open transaction: run named queries from ``queries.sql``."""

    def __init__(self, conn: Connection, queries: Mapping[str, Any], dialect: str) -> None:
        self.conn = conn
        self.dialect = dialect
        self._queries = queries

    def execute(self, query: str, /, **params: Any) -> int:
        """Run a named query for its effect; returns the number of rows it changed."""
        return int(self.conn.execute(self._queries[query], params).rowcount)

    def one(self, query: str, /, **params: Any) -> RowMapping | None:
        """The first row of a named query (or None)."""
        return self.conn.execute(self._queries[query], params).mappings().first()

    def all(self, query: str, /, **params: Any) -> list[RowMapping]:
        """Every row of a named query."""
        return list(self.conn.execute(self._queries[query], params).mappings().all())

    def scalar(self, query: str, /, **params: Any) -> Any:
        """The first column of the first row of a named query (or None)."""
        return self.conn.execute(self._queries[query], params).scalar()


class Connector:
    """Transactions over the named queries of one database, with error mapping and retries."""

    def __init__(self, resolved: ResolvedUrl) -> None:
        self.resolved = resolved
        self.dialect = resolved.dialect
        self.engine = _make_engine(resolved)
        self.queries = load_queries(self.dialect)

    @contextlib.contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[Tx]:
        """Open a transaction; commit on success, roll back on error.

        Parameters
        ----------
        write
            On SQLite, take the write lock at BEGIN (``BEGIN IMMEDIATE``). Ignored on PostgreSQL.

        Raises
        ------
        LedgerError
            Mapped from any database error (see :func:`map_db_error`).
        """
        try:
            with self.engine.connect().execution_options(solforge_write=write) as conn, conn.begin():
                yield Tx(conn, self.queries, self.dialect)
        except (sa_exc.SQLAlchemyError, OSError) as exc:
            if isinstance(exc, OSError):
                raise LedgerUnavailable(f"the database is unavailable: {exc}") from exc
            raise map_db_error(exc) from exc

    def run(self, fn: Callable[[Tx], T], *, write: bool = True, retry_s: float = 10.0) -> T:
        """Run ``fn`` in a transaction, retrying it while the database is unavailable.

        Every attempt is a fresh transaction, so ``fn`` must only touch the database through its
        argument. Writes that must not happen twice are fenced in SQL (claim tokens, ``ON CONFLICT``).

        Parameters
        ----------
        fn
            Called with the open :class:`Tx`; its return value is returned.
        write
            See :meth:`transaction`.
        retry_s
            Keep retrying :class:`LedgerUnavailable` for this long (jittered exponential back-off
            from 50 ms to 2 s); 0 tries once.

        Raises
        ------
        LedgerUnavailable
            Still unavailable after ``retry_s``.
        LedgerError
            Any other database error (not retried).
        """
        deadline = time.monotonic() + retry_s
        delay = 0.05
        while True:
            try:
                with self.transaction(write=write) as tx:
                    return fn(tx)
            except LedgerUnavailable as exc:
                if time.monotonic() + delay > deadline:
                    raise
                log.warning(
                    "ledger unavailable, retrying in %.2fs: %s", delay, exc, extra={"action": "db_retry"}
                )
                time.sleep(delay * (0.5 + random.random()))
                delay = min(delay * 2, 2.0)

    def dispose(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()


# ---------------------------------------------------------------------------------------------------
# Migrations


def _migrations_dir() -> Path:
    return Path(__file__).resolve().parent / "migrations"


def _alembic_config(conn: Connection) -> Any:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(_migrations_dir()))
    cfg.attributes["connection"] = conn
    return cfg


def current_revision(connector: Connector) -> str | None:
    """The revision the database is at (None for an empty database)."""
    from alembic.runtime.migration import MigrationContext

    with connector.engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def head_revision() -> str:
    """The newest migration shipped with this version of solforge."""
    from alembic.script import ScriptDirectory

    script = ScriptDirectory(str(_migrations_dir()))
    head = script.get_current_head()
    if head is None:
        raise LedgerError("no migrations are packaged with solforge.planner; the install is broken")
    return head


@contextlib.contextmanager
def _migration_lock(connector: Connector, conn: Connection) -> Iterator[None]:
    if connector.dialect == "postgresql":
        conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": _MIGRATION_LOCK_KEY})
        conn.commit()
        try:
            yield
        finally:
            conn.rollback()
            conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": _MIGRATION_LOCK_KEY})
            conn.commit()
        return
    db_path = make_url(connector.resolved.url).database or ""
    lock_path = Path(f"{db_path}.migrate-lock")
    with open(lock_path, "a+b") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def migrate(connector: Connector) -> str:
    """Bring the database to the newest schema; safe when many processes start at once.

    Runs the packaged alembic migrations (``solforge/planner/ledger/migrations``; no alembic.ini needed)
    under a cross-process lock: a PostgreSQL advisory lock, or a lock file next to the SQLite file.

    Returns
    -------
    str
        The revision the database is at afterwards.

    Raises
    ------
    LedgerError
        The database is newer than this solforge (a downgrade would lose data), or a migration failed.
    """
    from .migrations import HEAD_REVISION

    with connector.transaction(write=False) as tx:  # the common case, without importing alembic
        if (
            sa_inspect(tx.conn).has_table("alembic_version")
            and tx.conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar() == HEAD_REVISION
        ):
            return HEAD_REVISION
    alembic_log = logging.getLogger("alembic")
    if alembic_log.level == logging.NOTSET:
        alembic_log.setLevel(logging.WARNING)  # its INFO lines are noise at every start
    from alembic import command
    from alembic.runtime.migration import MigrationContext

    head = head_revision()
    try:
        with (
            connector.engine.connect().execution_options(solforge_write=True) as conn,
            _migration_lock(connector, conn),
        ):
            current = MigrationContext.configure(conn).get_current_revision()
            conn.commit()
            if current == head:
                return head
            from alembic.script import ScriptDirectory

            known = {s.revision for s in ScriptDirectory(str(_migrations_dir())).walk_revisions()}
            if current is not None and current not in known:
                raise LedgerError(
                    f"the ledger database is at schema revision {current}, newer than this solforge "
                    f"knows (head {head}); upgrade solforge on this host"
                )
            log.info("migrating the ledger from %s to %s", current, head, extra={"action": "migrate"})
            command.upgrade(_alembic_config(conn), "head")
            conn.commit()
    except sa_exc.SQLAlchemyError as exc:
        raise map_db_error(exc) from exc
    return head


def remove_temporary(resolved: ResolvedUrl) -> None:
    """Delete a throwaway ledger's folder."""
    if resolved.temporary_dir is not None:
        shutil.rmtree(resolved.temporary_dir, ignore_errors=True)
