"""The ledger's alembic migrations, applied by :func:`solforge.planner.ledger.db.migrate` (no alembic.ini).

To change the schema: edit :mod:`solforge.planner.ledger.tables`, then add ``versions/NNNN_what.py`` with
``revision = "NNNN"`` and ``down_revision`` the previous number (copy the newest file; keep the
numbers ordered), and set :data:`HEAD_REVISION` to its number. ``tests/unit/planner/test_ledger_migrations.py``
fails until the migrated schema matches the tables again, on SQLite and on PostgreSQL. Autogenerate can draft the file::

    python -c "from solforge.planner.ledger.migrations.draft import draft; draft('add x', 'sqlite:///draft.db')"
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["HEAD_REVISION", "MIGRATIONS_DIR"]

MIGRATIONS_DIR = Path(__file__).resolve().parent
HEAD_REVISION = "0004"
"""The newest migration; lets an up-to-date database open without importing alembic (a test checks it)."""

