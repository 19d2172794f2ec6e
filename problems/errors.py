"""The one exception family of solforge.

::

    SolforgeError
    ├── FormatError          a definition, workload or solution file does not validate
    ├── ProblemNotFound      no catalogue entry or folder by that name
    ├── ExpressionError      an axis expression, constraint or override is not plain arithmetic
    ├── InfrastructureError  the harness itself failed (not the candidate): a worker died, a GPU fell off
    ├── JobNotFound          no job by that id belongs to the caller (raised by the ledger and the tools)
    ├── CountingError        a workload's FLOPs cannot be derived from its reference (solforge.sandbox.sol.counting)
    ├── LedgerError          the ledger refused or failed an operation (solforge.planner.errors:
    │   │                    AgentNotFound, LedgerUnavailable, ...)
    │   └── SwarmError       a swarm run cannot start, resume or stop as asked (solforge.planner.swarm.runs)
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


class JobNotFound(SolforgeError):
    """No job with that id belongs to this agent.

    Unknown ids and other agents' jobs give the same error on purpose: a job id is not a credential and
    must not reveal that someone else's job exists. The ledger raises it (solforge.planner), and the tools
    raise it again with a message for the agent; it lives here so that the tools need not import the ledger.
    """


class InfrastructureError(SolforgeError):
    """The harness failed for a reason that is not the candidate's fault; the job may be retried."""
