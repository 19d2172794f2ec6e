"""Defences against reward hacking beyond process isolation, one module per side of the boundary.

The boundary itself (judge and candidate processes, scrubbed environment, rlimits, network
namespace, tree kill, JSON-only answers) lives in judge/, candidate.py, channel.py and
isolation.py; tools/docs/trust-boundary.md has the table of every known hack, its defence and its test.

=================  ==========================================  ====================================
module             what it does                                where it runs
=================  ==========================================  ====================================
``static``         AST and pattern rules over the sources:     the judge, before any candidate
                   ``reject`` (only a hack needs it) or        starts
                   ``warn`` (the runtime checks decide)
``guards``         the audit hook, the integrity snapshot of   the candidate, armed before the
                   the harness, thread and torch-state         solution's code first runs
                   checks, fresh inputs for every timed call
``confinement``    Landlock and seccomp for the whole process  the candidate and the build worker,
                   (native code included)                      before any candidate code
=================  ==========================================  ====================================

**The switch** (:func:`defences_enabled`). ``SOLFORGE_DEFENCES=off`` in the judge's environment
turns off the defences of this package (never the process boundary), for the overhead benchmark
(benchmarks/trust/bench_defences.py) only; it is ignored for submissions.
"""

from __future__ import annotations

from collections.abc import Mapping

from solforge.problems import config

from .confinement import confine_process, writable_folders
from .guards import (
    AuditGuard,
    FreshInputs,
    Integrity,
    harness_namespaces,
    invoker_codes,
    plain_tensor_problems,
    thread_problems,
    torch_state_problems,
)
from .static import Finding, describe_findings, reject_message, scan_cpp, scan_python, scan_solution

__all__ = [
    "DEFENCES_ENV",
    "AuditGuard",
    "Finding",
    "FreshInputs",
    "Integrity",
    "confine_process",
    "defences_enabled",
    "describe_findings",
    "harness_namespaces",
    "invoker_codes",
    "plain_tensor_problems",
    "reject_message",
    "scan_cpp",
    "scan_python",
    "scan_solution",
    "thread_problems",
    "torch_state_problems",
    "writable_folders",
]

DEFENCES_ENV = config.DEFENCES_ENV
"""``off`` disables the defences of this module (benchmarking only; never for submissions)."""


def defences_enabled(*, submission: bool, environ: Mapping[str, str] | None = None) -> bool:
    """Whether the judge applies the defences of this module.

    Parameters
    ----------
    submission
        A submission always runs with every defence, whatever the environment says.
    environ
        The environment to read (the judge's own by default).

    Returns
    -------
    bool
        False only when ``SOLFORGE_DEFENCES=off`` and this is not a submission.
    """
    return submission or not config.defences_off(environ)


# =============================================================================================
