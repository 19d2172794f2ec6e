"""Baselines measured once and shared by every worker and host.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "baseline",
        sa.Column("baseline_key", sa.String(512), nullable=False),
        sa.Column("problem", sa.String(256), nullable=False),
        sa.Column("workload_uuid", sa.String(128), nullable=False),
        sa.Column("hardware", sa.String(128), nullable=False),
        sa.Column("record_json", sa.Text(), nullable=False),
        sa.Column("worker_id", sa.String(128), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("baseline_key", name="pk_baseline"),
    )
    op.create_index("ix_baseline_problem", "baseline", ["problem"])


def downgrade() -> None:
    op.drop_table("baseline")
