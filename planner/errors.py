"""The planner's exceptions, all in solforge's one family.

::

    SolforgeError                      (solforge.problems.errors)
    └── LedgerError                    the ledger refused or failed an operation
        ├── LedgerUnavailable          the database cannot be reached (after retries); try again later
        ├── LedgerIntegrityError       the database refused a write that breaks a constraint
        ├── InvalidJobRequest          bad arguments to enqueue and friends (also a ValueError)
        ├── AgentNotFound              no agent by that name
        ├── AgentExists                register_agent with a name already taken
        └── AuthenticationFailed       no enabled agent holds this token

``JobNotFound`` (no such job for this agent: an unknown id or another agent's job) is what the
ledger raises for those; it is defined in :mod:`solforge.problems.errors`, so that the tools need not
import the ledger to name it.

SQLAlchemy and driver errors are translated once, in :mod:`solforge.planner.ledger.db`, with the
original kept as ``__cause__``.
"""

from __future__ import annotations

from solforge.problems.errors import JobNotFound, SolforgeError

__all__ = [
    "AgentExists",
    "AgentNotFound",
    "AuthenticationFailed",
    "InvalidJobRequest",
    "JobNotFound",
    "LedgerError",
    "LedgerIntegrityError",
    "LedgerUnavailable",
]


class LedgerError(SolforgeError):
    """The ledger failed or refused the operation."""


class LedgerUnavailable(LedgerError):
    """The ledger's database cannot be reached right now; retry in a few seconds.

    Raised after the ledger's own short retries (a restarting PostgreSQL, a locked SQLite file).
    """


class LedgerIntegrityError(LedgerError):
    """The database refused a write that would break one of the ledger's constraints."""


class InvalidJobRequest(LedgerError, ValueError):
    """The arguments do not describe a job the ledger can queue; the message names the field and the fix."""


class AgentNotFound(LedgerError):
    """No agent by that name; register it first with Ledger.register_agent or Ledger.ensure_agent."""


class AgentExists(LedgerError):
    """An agent by that name already exists; pick another name or rotate its token."""


class AuthenticationFailed(LedgerError):
    """No enabled agent holds this token."""
