"""alembic's environment: always run on the connection :func:`solforge.planner.ledger.db.migrate` passes in."""

from __future__ import annotations

from alembic import context

from solforge.planner.ledger.tables import metadata


def _include_object(obj: object, name: str | None, type_: str, reflected: bool, compare_to: object) -> bool:
    # Only the ledger's own tables: other applications may share a PostgreSQL database.
    return not (type_ == "table" and reflected and compare_to is None and name not in metadata.tables)


connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
    include_object=_include_object,
)
with context.begin_transaction():
    context.run_migrations()
