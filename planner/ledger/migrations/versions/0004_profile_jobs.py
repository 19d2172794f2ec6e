"""Profile jobs: one call of a solution under Nsight Compute, in a GPU lease like a benchmark.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-03

Only the CHECK on ``job.kind`` changes. PostgreSQL replaces the constraint; SQLite edits the table's stored
definition in place (the procedure SQLite's documentation gives for changing a CHECK constraint: the rows
on disk do not change, and every existing row satisfies the wider check), which keeps the table, its
partial indexes and the foreign keys that point at it as they are.
"""

from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_NAME = "ck_job_ck_job_kind"
_OLD = "kind IN ('compile', 'benchmark', 'submit')"
_NEW = "kind IN ('compile', 'benchmark', 'submit', 'profile')"


def _replace_check(old: str, new: str) -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        version = bind.exec_driver_sql("PRAGMA schema_version").scalar()
        bind.exec_driver_sql("PRAGMA writable_schema = ON")
        bind.exec_driver_sql("UPDATE sqlite_master SET sql = replace(sql, ?, ?) WHERE type = 'table' AND name = 'job'",
                             (old, new))
        bind.exec_driver_sql(f"PRAGMA schema_version = {int(version) + 1}")
        bind.exec_driver_sql("PRAGMA writable_schema = OFF")
        return
    op.drop_constraint(op.f(_NAME), "job", type_="check")  # op.f: the name as it is, not run through the convention
    op.create_check_constraint(op.f(_NAME), "job", new)


def upgrade() -> None:
    _replace_check(_OLD, _NEW)


def downgrade() -> None:
    op.execute("DELETE FROM job_payload WHERE job_id IN (SELECT id FROM job WHERE kind = 'profile')")
    op.execute("DELETE FROM lease WHERE job_id IN (SELECT id FROM job WHERE kind = 'profile')")
    op.execute("DELETE FROM run WHERE job_id IN (SELECT id FROM job WHERE kind = 'profile')")
    op.execute("DELETE FROM job WHERE kind = 'profile'")
    _replace_check(_NEW, _OLD)
