"""The initial ledger schema: agents, problems, jobs (and their payloads), runs, submissions, GPUs, leases, workers, events.

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _where(condition: str) -> dict[str, object]:
    return {"sqlite_where": sa.text(condition), "postgresql_where": sa.text(condition)}


# The event log is append-only: the database refuses UPDATE and DELETE on it.
_PG_APPEND_ONLY = """
CREATE FUNCTION solforge_event_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the solforge event log is append-only (% refused)', TG_OP;
END $$;
CREATE TRIGGER event_append_only BEFORE UPDATE OR DELETE ON event
    FOR EACH ROW EXECUTE FUNCTION solforge_event_append_only();
"""
_SQLITE_APPEND_ONLY = [
    "CREATE TRIGGER event_no_update BEFORE UPDATE ON event "
    "BEGIN SELECT RAISE(ABORT, 'the solforge event log is append-only (UPDATE refused)'); END",
    "CREATE TRIGGER event_no_delete BEFORE DELETE ON event "
    "BEGIN SELECT RAISE(ABORT, 'the solforge event log is append-only (DELETE refused)'); END",
]


def upgrade() -> None:
    op.create_table(
        "agent",
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=True),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("last_seen_at", sa.Float(), nullable=True),
        sa.Column("disabled", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_agent"),
        sa.UniqueConstraint("token_hash", name="uq_agent_token_hash"),
    )
    op.create_table(
        "problem",
        sa.Column("name", sa.String(256), nullable=False),
        sa.Column("op_type", sa.String(64), nullable=True),
        sa.Column("category", sa.String(32), nullable=True),
        sa.Column("first_seen_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_problem"),
    )
    op.create_table(
        "gpu",
        sa.Column("id", sa.String(160), nullable=False),
        sa.Column("host", sa.String(128), nullable=False),
        sa.Column("device_index", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("name", sa.String(128), nullable=True),
        sa.Column("uuid", sa.String(64), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("status_reason", sa.Text(), nullable=True),
        sa.Column("needs_check", sa.Boolean(), nullable=False),
        sa.Column("worker_id", sa.String(128), nullable=True),
        sa.Column("registered_at", sa.Float(), nullable=False),
        sa.Column("checked_at", sa.Float(), nullable=True),
        sa.CheckConstraint("kind IN ('cuda', 'cpu')", name="ck_gpu_kind"),
        sa.CheckConstraint("status IN ('available', 'out_of_service')", name="ck_gpu_status"),
        sa.PrimaryKeyConstraint("id", name="pk_gpu"),
    )
    op.create_table(
        "worker",
        sa.Column("id", sa.String(128), nullable=False),
        sa.Column("host", sa.String(128), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.Float(), nullable=False),
        sa.Column("heartbeat_at", sa.Float(), nullable=False),
        sa.Column("stopped_at", sa.Float(), nullable=True),
        sa.Column("slots_json", sa.Text(), nullable=False),
        sa.Column("version", sa.String(32), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_worker"),
    )
    op.create_table(
        "job",
        sa.Column("id", sa.String(32), nullable=False),
        sa.Column("agent", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("problem", sa.String(256), nullable=False),
        sa.Column("solution_name", sa.String(256), nullable=False),
        sa.Column("solution_hash", sa.String(64), nullable=False),
        sa.Column("priority", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("needs_gpu", sa.Boolean(), nullable=False),
        sa.Column("slot_kind", sa.String(8), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("max_attempts", sa.Integer(), nullable=False),
        sa.Column("timeout_s", sa.Float(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("run_after", sa.Float(), nullable=False),
        sa.Column("started_at", sa.Float(), nullable=True),
        sa.Column("finished_at", sa.Float(), nullable=True),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.Column("worker_id", sa.String(128), nullable=True),
        sa.Column("gpu_id", sa.String(160), nullable=True),
        sa.Column("claim_token", sa.String(32), nullable=True),
        sa.Column("heartbeat_at", sa.Float(), nullable=True),
        sa.Column("deadline_at", sa.Float(), nullable=True),
        sa.Column("cancel_requested", sa.Boolean(), nullable=False),
        sa.Column("progress_json", sa.Text(), nullable=True),
        sa.CheckConstraint("kind IN ('compile', 'benchmark', 'submit')", name="ck_job_kind"),
        sa.CheckConstraint(
            "status IN ('queued', 'running', 'done', 'failed', 'cancelled')", name="ck_job_status"
        ),
        sa.ForeignKeyConstraint(["agent"], ["agent.name"], name="fk_job_agent_agent"),
        sa.PrimaryKeyConstraint("id", name="pk_job"),
    )
    op.create_index("ix_job_queued", "job", ["needs_gpu", "run_after"], **_where("status = 'queued'"))
    op.create_index("ix_job_running", "job", ["needs_gpu", "agent"], **_where("status = 'running'"))
    op.create_index("ix_job_deadline", "job", ["deadline_at"], **_where("status = 'running'"))
    op.create_index("ix_job_started", "job", ["needs_gpu", "started_at", "agent"])
    op.create_index("ix_job_finished", "job", ["finished_at"])
    op.create_index("ix_job_agent_created", "job", ["agent", "created_at"])
    op.create_index("ix_job_problem", "job", ["problem"])
    op.create_table(
        "job_payload",
        sa.Column("job_id", sa.String(32), nullable=False),
        sa.Column("request_json", sa.Text(), nullable=False),
        sa.Column("result_json", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(["job_id"], ["job.id"], name="fk_job_payload_job_id_job"),
        sa.PrimaryKeyConstraint("job_id", name="pk_job_payload"),
    )
    op.create_table(
        "lease",
        sa.Column("id", _BigId, autoincrement=True, nullable=False),
        sa.Column("gpu_id", sa.String(160), nullable=False),
        sa.Column("job_id", sa.String(32), nullable=False),
        sa.Column("worker_id", sa.String(128), nullable=False),
        sa.Column("token", sa.String(32), nullable=False),
        sa.Column("acquired_at", sa.Float(), nullable=False),
        sa.Column("heartbeat_at", sa.Float(), nullable=False),
        sa.Column("deadline_at", sa.Float(), nullable=False),
        sa.Column("released_at", sa.Float(), nullable=True),
        sa.Column("release_reason", sa.String(32), nullable=True),
        sa.ForeignKeyConstraint(["gpu_id"], ["gpu.id"], name="fk_lease_gpu_id_gpu"),
        sa.ForeignKeyConstraint(["job_id"], ["job.id"], name="fk_lease_job_id_job"),
        sa.PrimaryKeyConstraint("id", name="pk_lease"),
    )
    op.create_index("ix_lease_gpu_acquired", "lease", ["gpu_id", "acquired_at"])
    op.create_index("ix_lease_released", "lease", ["released_at"])
    op.create_index("ix_lease_job_id", "lease", ["job_id"])
    op.create_index("uq_lease_active_gpu", "lease", ["gpu_id"], unique=True, **_where("released_at IS NULL"))
    op.create_table(
        "run",
        sa.Column("id", _BigId, autoincrement=True, nullable=False),
        sa.Column("job_id", sa.String(32), nullable=False),
        sa.Column("agent", sa.String(64), nullable=False),
        sa.Column("problem", sa.String(256), nullable=False),
        sa.Column("solution_name", sa.String(256), nullable=False),
        sa.Column("workload_uuid", sa.String(128), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("latency_ms", sa.Float(), nullable=True),
        sa.Column("sol_score", sa.Float(), nullable=True),
        sa.Column("speedup", sa.Float(), nullable=True),
        sa.Column("hardware", sa.String(128), nullable=True),
        sa.Column("trace_json", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["job_id"], ["job.id"], name="fk_run_job_id_job"),
        sa.PrimaryKeyConstraint("id", name="pk_run"),
    )
    op.create_index("ix_run_job_id", "run", ["job_id"])
    op.create_index("ix_run_problem", "run", ["problem"])
    op.create_table(
        "submission",
        sa.Column("id", _BigId, autoincrement=True, nullable=False),
        sa.Column("agent", sa.String(64), nullable=False),
        sa.Column("problem", sa.String(256), nullable=False),
        sa.Column("solution_name", sa.String(256), nullable=False),
        sa.Column("solution_hash", sa.String(64), nullable=False),
        sa.Column("job_id", sa.String(32), nullable=True),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("speedup", sa.Float(), nullable=True),
        sa.Column("passed", sa.Integer(), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("hardware", sa.String(128), nullable=True),
        sa.Column("solution_json", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["agent"], ["agent.name"], name="fk_submission_agent_agent"),
        sa.ForeignKeyConstraint(["job_id"], ["job.id"], name="fk_submission_job_id_job"),
        sa.PrimaryKeyConstraint("id", name="pk_submission"),
        sa.UniqueConstraint("job_id", name="uq_submission_job_id"),
    )
    op.create_index("ix_submission_agent", "submission", ["agent"])
    op.create_index("ix_submission_problem_score", "submission", ["problem", "score"])
    op.create_table(
        "event",
        sa.Column("id", _BigId, autoincrement=True, nullable=False),
        sa.Column("at", sa.Float(), nullable=False),
        sa.Column("kind", sa.String(48), nullable=False),
        sa.Column("job_id", sa.String(32), nullable=True),
        sa.Column("gpu_id", sa.String(160), nullable=True),
        sa.Column("worker_id", sa.String(128), nullable=True),
        sa.Column("agent", sa.String(64), nullable=True),
        sa.Column("lease_id", sa.BigInteger(), nullable=True),
        sa.Column("detail_json", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_event"),
    )
    op.create_index("ix_event_gpu_id", "event", ["gpu_id"])
    op.create_index("ix_event_job_id", "event", ["job_id"])
    op.create_index("ix_event_kind_at", "event", ["kind", "at"])
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_PG_APPEND_ONLY)
    else:
        for statement in _SQLITE_APPEND_ONLY:
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER IF EXISTS event_append_only ON event")
        op.execute("DROP FUNCTION IF EXISTS solforge_event_append_only()")
    for table in (
        "event",
        "submission",
        "run",
        "lease",
        "job_payload",
        "job",
        "worker",
        "gpu",
        "problem",
        "agent",
    ):
        op.drop_table(table)
