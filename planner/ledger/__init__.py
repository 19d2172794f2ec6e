"""The ledger: the one shared record of agents, jobs, leases, submissions and GPUs (SQLite or PostgreSQL).

::

    core.py         the Ledger facade: opening, agents and jobs; made of results.py (submissions,
                    leaderboards, standings), operations.py (queue statistics, GPUs, workers, events) and
                    async_api.py (every method's *_async twin, in one place), which share common.py
                    (limits, token hashing, rows to views)
    db.py, sql.py   the connector (engines, transactions, error mapping, migrate) and the named queries of
                    queries.sql, one text per backend
    tables.py       the SQLModel tables (the schema alembic's migrations/ bring a database to)
    queue.py        claiming, leasing, fairness, retries and recording, each a transaction
    models.py       the typed views the ledger returns
    changes.py      a process-local signal that the ledger changed, so waiters wake at once

Everything here runs in trusted processes (the server, workers, the planner); nothing here imports the
workers, the swarm or the report.
"""

from __future__ import annotations

from .core import DEFAULT_MAX_ATTEMPTS, Ledger

__all__ = ["DEFAULT_MAX_ATTEMPTS", "Ledger"]
