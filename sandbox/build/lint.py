"""Warnings a build gives about Python kernels that pass the build but fail or hang on the GPU.

Read from the source text with :mod:`ast` (nothing of the solution runs here), because the build of a
CuTe DSL or Triton solution on a machine without the judge's GPU cannot see these:

- CuTe DSL, the pattern that hung an H200: a warp-wide operation (a ``*_sync`` shuffle, a warp
  reduction, or ``warp_idx()``, which broadcasts with a full-warp ``shfl.sync``) inside an ``if`` that
  only some lanes of a warp take (a test on ``lane_idx()`` or on ``tid % 32``). The other lanes never
  reach the shuffle, and the warp waits for them forever. Branches on warp-uniform values
  (``warp == 0``, ``tidx < 32``) are fine and not reported.
- Triton, the pattern that failed a hand-written solution on an H100 (Triton 3.6): a ``@triton.jit``
  function reading a module-level constant defined as a plain value (``FP8_MAX = 448.0``). Triton
  only compiles the kernel at its first call, on the GPU, and then refuses every global that is not a
  ``tl.constexpr(...)`` instance, so every workload fails there.
"""

from __future__ import annotations

import ast
import contextlib
from collections.abc import Callable

from solforge.problems import Language, Solution

__all__ = ["cute_warnings", "lint_warnings", "triton_warnings"]

_WARP_WIDE = frozenset({
    "warp_idx", "make_warp_uniform", "warp_reduction", "warp_reduction_sum", "warp_reduction_max",
    "warp_redux_sync", "shuffle_sync", "shuffle_sync_bfly", "shuffle_sync_up", "shuffle_sync_down",
    "vote_ballot_sync", "vote_any_sync", "vote_all_sync", "vote_uni_sync",
})
"""CuTe DSL helpers that every lane of the warp must reach together."""
_LANE_SOURCES = frozenset({"lane_idx"})
_MAX_WARNINGS = 5


def _called(node: ast.AST) -> str | None:
    """The name of the function ``node`` calls (``cute.arch.warp_idx()`` -> ``warp_idx``)."""
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute):
            return func.attr
        if isinstance(func, ast.Name):
            return func.id
    return None


def _lane_names(tree: ast.AST) -> set[str]:
    """Names assigned from ``lane_idx()`` anywhere in the file (``lane = cute.arch.lane_idx()``)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _called(node.value) in _LANE_SOURCES:
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def _lane_dependent(test: ast.AST, lane_names: set[str]) -> bool:
    for node in ast.walk(test):
        if _called(node) in _LANE_SOURCES or (isinstance(node, ast.Name) and node.id in lane_names):
            return True
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.right, ast.Constant) \
                and node.right.value == 32:
            return True
    return False


def _cute_file_warnings(path: str, tree: ast.Module) -> list[str]:
    lane_names = _lane_names(tree)
    found: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.If) or not _lane_dependent(node.test, lane_names):
            continue
        for inner in (n for body in (node.body, node.orelse) for stmt in body for n in ast.walk(stmt)):
            name = _called(inner)
            if name in _WARP_WIDE:
                found.append(
                    f"{path}:{inner.lineno}: {name}() inside the lane-dependent branch of line {node.lineno}: it is a "
                    "warp-wide operation (a full-warp shfl.sync), so the lanes that skip the branch never reach it "
                    "and the kernel can hang; compute it before the branch")
    return found


def _python_sources_warnings(solution: Solution, file_warnings: Callable[[str, ast.Module], list[str]]) -> list[str]:
    found: list[str] = []
    for source in (s for s in solution.sources if s.path.endswith(".py")):
        with contextlib.suppress(SyntaxError):  # the build itself reports it
            found += file_warnings(source.path, ast.parse(source.content, filename=source.path))
    return found[:_MAX_WARNINGS]


def cute_warnings(solution: Solution) -> list[str]:
    """Lint warnings for the Python sources of a CuTe DSL solution (at most a few)."""
    return _python_sources_warnings(solution, _cute_file_warnings)


# --- Triton ------------------------------------------------------------------------------------

_PLAIN_VALUES = (ast.Constant, ast.UnaryOp, ast.BinOp, ast.BoolOp, ast.Compare, ast.Tuple, ast.List, ast.Dict, ast.Set)
"""Module-level values Triton refuses to read from a kernel: numbers, strings and containers of them."""


def _is_jit(decorator: ast.expr) -> bool:
    """``@triton.jit``, ``@jit`` or ``@triton.jit(...)`` (autotune and heuristics wrap a jit function)."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
    return name == "jit"


def _plain_globals(tree: ast.Module) -> dict[str, int]:
    """Module-level names bound only to plain values, with the line that binds them.

    ``x = tl.constexpr(42)`` (a call) is what Triton accepts; ``x: tl.constexpr = 42`` is an annotation on a
    plain value, which it refuses, so it counts as plain. A name also bound by ``def``, ``class`` or an import
    is left out: the lint cannot tell which binding the kernel sees.
    """
    plain: dict[str, int] = {}
    other: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            (plain.update({n: stmt.lineno for n in names}) if isinstance(stmt.value, _PLAIN_VALUES)
             else other.update(names))
        elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            other.add(stmt.name)
        elif isinstance(stmt, ast.Import | ast.ImportFrom):
            other.update((a.asname or a.name).split(".")[0] for a in stmt.names)
    return {name: line for name, line in plain.items() if name not in other}


def _local_names(function: ast.FunctionDef) -> set[str]:
    """Arguments and every name the body binds (Python makes those local to the whole function)."""
    args = function.args
    names = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg] if a}
    for node in ast.walk(function):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
    return names


def _triton_file_warnings(path: str, tree: ast.Module) -> list[str]:
    plain = _plain_globals(tree)
    found: list[str] = []
    kernels = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and any(map(_is_jit, n.decorator_list))]
    for kernel in kernels:
        local = _local_names(kernel)
        seen: set[str] = set()
        for node in (n for stmt in kernel.body for n in ast.walk(stmt)):  # not the defaults: Triton allows those
            if (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in plain
                    and node.id not in local and node.id not in seen):
                seen.add(node.id)
                found.append(
                    f"{path}:{node.lineno}: the @triton.jit function {kernel.name}() reads {node.id}, a plain global "
                    f"(line {plain[node.id]}); Triton refuses it when it compiles the kernel on the GPU ('Cannot "
                    f"access global variable {node.id}'), so every workload fails: define it as "
                    f"{node.id} = tl.constexpr(...) or pass it in as a tl.constexpr argument")
    return found


def triton_warnings(solution: Solution) -> list[str]:
    """Lint warnings for the Python sources of a Triton solution (at most a few)."""
    return _python_sources_warnings(solution, _triton_file_warnings)


def lint_warnings(solution: Solution) -> list[str]:
    """The lint of the solution's language (none for cuda_cpp and pytorch)."""
    language = solution.spec.language
    if language is Language.cute_dsl:
        return cute_warnings(solution)
    if language is Language.triton:
        return triton_warnings(solution)
    return []
