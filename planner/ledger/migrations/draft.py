"""Draft a migration with alembic's autogenerate (a developer's tool; see :mod:`solforge.planner.ledger.migrations`).

Apart from the package, which :mod:`solforge.planner.ledger.db` imports for :data:`HEAD_REVISION`, because this needs
``_db`` itself.
"""

from __future__ import annotations

__all__ = ["draft"]


def draft(message: str, db_url: str) -> None:
    """Write a draft migration for the difference between ``db_url`` (migrated to head) and the tables.

    Review it before keeping it: autogenerate misses triggers and renames.
    """
    from alembic import command

    from ..db import Connector, _alembic_config, migrate, resolve_db_url

    connector = Connector(resolve_db_url(db_url))
    migrate(connector)
    with connector.engine.connect() as conn:
        command.revision(_alembic_config(conn), message=message, autogenerate=True)
    connector.dispose()
