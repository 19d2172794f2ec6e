"""The one exception family of solforge.

::

    SolforgeError
    ├── FormatError          a definition, workload or solution file does not validate
    ├── ProblemNotFound      no catalogue entry or folder by that name
    ├── ExpressionError      an axis expression, constraint or override is not plain arithmetic
    ├── InfrastructureError  the harness itself failed (not the candidate): a worker died, a GPU fell off
    ├── CountingError        a workload's FLOPs cannot be derived from its reference (solforge.sandbox.sol.counting)
    ├── LedgerError          the ledger refused or failed an operation (solforge.planner.errors: JobNotFound,
    │   │                    AgentNotFound, LedgerUnavailable, ...)
    │   └── SwarmError       a swarm run cannot start, resume or stop as asked (solforge.planner.swarm.runner)
    ├── ReportError          the HTML report cannot be made (solforge.planner.report.gather)
    ├── ToolInputError       a tool's argument is well-typed but unusable (solforge.tools.errors)
    └── ServiceUnavailable   a part a tool needs is not on this server (solforge.tools.errors)

Every exception class solforge defines is in this tree, and the MCP server turns any of them into a tool
error the agent reads; built-in ``ValueError`` and ``RuntimeError`` still mark bad arguments to library
calls. Two internal signals stay outside it: ``LeaseCancelled`` (a worker's control flow) and
``ChannelClosed`` (a candidate's socket ended).

A candidate's own failure (a compile error, a wrong answer, a timeout, a detected hack) is never an
exception: it is a Trace with the matching status.
"""

from __future__ import annotations


class SolforgeError(Exception):
    """Something in solforge failed."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or (self.__doc__ or "").strip())


class FormatError(SolforgeError):
    """A definition, workload or solution does not validate.

    The message names the file, the field and the fix.
    """


class ProblemNotFound(SolforgeError):
    """No problem by that name in the catalogue, and no problem folder at that path."""


class ExpressionError(SolforgeError):
    """An expression is not plain arithmetic over axis names."""


class InfrastructureError(SolforgeError):
    """The harness failed for a reason that is not the candidate's fault; the job may be retried."""
