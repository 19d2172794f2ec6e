"""Building solutions: compile (cuda_cpp, cute_dsl) or check (pytorch, triton) in an isolated child,
through a content-addressed cache, and load or disassemble the result.

::

    report = build_solution(solution, target_arch="sm_90a", cache_dir=cache, timeout_s=300)
    if report.ok:
        run = load_entry(report, solution)          # inside the candidate process only
        sass = disassemble(report, report.kernels[0].name, "sass")
"""

from __future__ import annotations

from .artifacts import disassemble, load_built_module, load_entry, load_python_entry
from .builder import DEFAULT_BUILD_MEMORY_BYTES, build_cache_key, build_solution
from .toolchain import normalize_arch, resolve_target_arch, toolchain_versions

__all__ = [
    "DEFAULT_BUILD_MEMORY_BYTES",
    "build_cache_key",
    "build_solution",
    "disassemble",
    "load_built_module",
    "load_entry",
    "load_python_entry",
    "normalize_arch",
    "resolve_target_arch",
    "toolchain_versions",
]
