"""Defences against reward hacking beyond process isolation: static checks, runtime guards, confinement.

The trust boundary itself (judge and candidate processes, scrubbed environment, rlimits, network
namespace, tree kill, JSON-only answers) lives in judge.py, candidate.py, channel.py and
isolation.py. This module adds what closes the remaining gaps; tools/docs/trust-boundary.md has the
table of every known hack, the defence and the test that proves it.

Four groups, each used by one side of the boundary:

**Static checks** (:func:`scan_solution`, run by the judge before the candidate starts). Cheap AST
and pattern rules over the solution's sources. A finding is either ``reject`` (the solution is a
REWARD_HACK without running: only patterns no honest kernel needs, such as walking the caller's
frames or scanning the garbage collector) or ``warn`` (reported with the results; the runtime checks
decide). Static checks are evadable by obfuscation; they exist to fail the common hacks fast and
with a clear message, not as the last line.

**Runtime guards in the candidate** (:class:`AuditGuard`, :class:`Integrity`,
:func:`thread_problems`, :func:`torch_state_problems`, :class:`FreshInputs`). An audit hook
(PEP 578; it cannot be removed once added) sees frame access, gc scans, process and socket
creation, environment writes, file writes outside the scratch folder and ``__code__``/``__class__``
replacement, and blocks each when the code that asked for it is the solution's (attribution by the
calling frame, so torch, triton and the CuTe DSL doing the same things internally are not
affected). An integrity snapshot of the harness's functions (identity and bytecode) and of the
modules it relies on catches monkey-patching. Threads are judged by what they run, not by count.
:class:`FreshInputs` gives every timed call freshly generated inputs, so nothing computed for one
call can be replayed for another.

**Confinement of the whole process** (:func:`confine_process`, in the candidate before any solution
code is loaded, and in the build worker before a CuTe DSL import runs candidate code). Landlock
restricts writes to the scratch folder (and ``/dev``), forbids TCP and scopes signals and ptrace
to the sandbox; a seccomp filter refuses the system calls that leave a namespace or reach into
another process (setns, unshare, ptrace, process_vm_*, mount, bpf, ...). Both hold for native code
(cuda_cpp) too, which the audit hook cannot see. Where the kernel lacks them the evaluation goes on
and the report says so.

**The switch** (:func:`defences_enabled`). ``SOLFORGE_DEFENCES=off`` in the judge's environment
turns off the defences added here (never the process boundary), for the overhead benchmark
(benchmarks/trust/bench_defences.py) only; it is ignored for submissions.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

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

DEFENCES_ENV = "SOLFORGE_DEFENCES"
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
    value = (environ if environ is not None else os.environ).get(DEFENCES_ENV, "on").strip().lower()
    return submission or value not in ("off", "0", "false", "no")


# =============================================================================================
