"""Errors the tools raise, part of solforge's one exception family.

::

    SolforgeError                         (solforge.problems.errors)
    ├── FormatError, ProblemNotFound, ...  (solforge.problems.errors)
    ├── ToolInputError        an argument is well-typed but unusable here (both or neither of two, a path
    │                         outside the allowed root, a solution for another problem)
    ├── ServiceUnavailable    the ledger or the evaluation engine cannot be reached from this server
    └── JobNotFound           (solforge.problems.errors) no job by that id belongs to the caller: the class
                              the ledger raises, re-exported here; the tools raise it again for the agent

Every message says what was wrong and what to call next. The MCP server turns any ``SolforgeError``
into a tool error the agent reads (``solforge.server.adapter``); anything else is a bug, logged with
its traceback on stderr and answered with a generic message.
"""

from __future__ import annotations

from solforge.problems.errors import JobNotFound, SolforgeError

__all__ = ["JobNotFound", "ServiceUnavailable", "ToolInputError"]


class ToolInputError(SolforgeError):
    """An argument is well-formed but cannot be used; the message names it and says what to send instead."""


class ServiceUnavailable(SolforgeError):
    """A part of solforge this tool needs is not available on this server; the message says which and why."""
