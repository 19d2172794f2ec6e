"""The swarm planner's tables: runs, their agents, and the assignment history.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

_BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _where(condition: str) -> dict[str, object]:
    return {"sqlite_where": sa.text(condition), "postgresql_where": sa.text(condition)}


def upgrade() -> None:
    op.create_table(
        "swarm_run",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("config_json", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.Column("ended_at", sa.Float(), nullable=True),
        sa.Column("heartbeat_at", sa.Float(), nullable=True),
        sa.Column("active_s", sa.Float(), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=True),
        sa.Column("host", sa.String(128), nullable=True),
        sa.Column("server_url", sa.String(256), nullable=True),
        sa.Column("stop_requested", sa.Boolean(), nullable=False),
        sa.Column("stop_reason", sa.Text(), nullable=True),
        sa.CheckConstraint(
            "status IN ('running', 'stopping', 'stopped', 'finished', 'failed')", name="ck_swarm_run_status"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_swarm_run"),
    )
    op.create_table(
        "swarm_agent",
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("run_id", sa.String(32), nullable=False),
        sa.Column("idx", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("problem", sa.String(256), nullable=True),
        sa.Column("pid", sa.Integer(), nullable=True),
        sa.Column("workspace", sa.Text(), nullable=False),
        sa.Column("log_path", sa.Text(), nullable=False),
        sa.Column("restarts", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.Float(), nullable=True),
        sa.Column("activity_at", sa.Float(), nullable=True),
        sa.Column("phase", sa.String(64), nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.CheckConstraint(
            "state IN ('idle', 'working', 'backoff', 'held', 'stopped', 'failed')", name="ck_swarm_agent_state"
        ),
        sa.ForeignKeyConstraint(["name"], ["agent.name"], name="fk_swarm_agent_name_agent"),
        sa.ForeignKeyConstraint(["run_id"], ["swarm_run.id"], name="fk_swarm_agent_run_id_swarm_run"),
        sa.PrimaryKeyConstraint("name", name="pk_swarm_agent"),
    )
    op.create_index("ix_swarm_agent_run_id", "swarm_agent", ["run_id"])
    op.create_table(
        "swarm_assignment",
        sa.Column("id", _BigId, autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(32), nullable=False),
        sa.Column("agent", sa.String(64), nullable=False),
        sa.Column("problem", sa.String(256), nullable=False),
        sa.Column("share", sa.Integer(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("started_at", sa.Float(), nullable=False),
        sa.Column("ended_at", sa.Float(), nullable=True),
        sa.Column("end_reason", sa.String(32), nullable=True),
        sa.ForeignKeyConstraint(["agent"], ["agent.name"], name="fk_swarm_assignment_agent_agent"),
        sa.ForeignKeyConstraint(["run_id"], ["swarm_run.id"], name="fk_swarm_assignment_run_id_swarm_run"),
        sa.PrimaryKeyConstraint("id", name="pk_swarm_assignment"),
    )
    op.create_index("ix_swarm_assignment_run_started", "swarm_assignment", ["run_id", "started_at"])
    op.create_index(
        "uq_swarm_assignment_open_agent", "swarm_assignment", ["agent"], unique=True, **_where("ended_at IS NULL")
    )
    op.create_index(
        "uq_swarm_assignment_open_problem",
        "swarm_assignment",
        ["run_id", "problem", "share"],
        unique=True,
        **_where("ended_at IS NULL"),
    )


def downgrade() -> None:
    for table in ("swarm_assignment", "swarm_agent", "swarm_run"):
        op.drop_table(table)
