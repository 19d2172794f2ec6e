"""Warnings a CuTe DSL build gives about kernels that compile but hang or misbehave on the GPU.

Read from the source text with :mod:`ast` (nothing of the solution runs here). One pattern so far, the
one that hung an H200: a warp-wide operation (a ``*_sync`` shuffle, a warp reduction, or
``warp_idx()``, which broadcasts with a full-warp ``shfl.sync``) inside an ``if`` that only some lanes
of a warp take (a test on ``lane_idx()`` or on ``tid % 32``). The other lanes never reach the
shuffle, and the warp waits for them forever. Branches on warp-uniform values (``warp == 0``,
``tidx < 32``) are fine and not reported.
"""

from __future__ import annotations

import ast

from solforge.problems import Solution

__all__ = ["cute_warnings"]

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


def _file_warnings(path: str, text: str) -> list[str]:
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError:
        return []  # the build itself reports it
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


def cute_warnings(solution: Solution) -> list[str]:
    """Lint warnings for the Python sources of a CuTe DSL solution (at most a few)."""
    found: list[str] = []
    for source in solution.sources:
        if source.path.endswith(".py"):
            found += _file_warnings(source.path, source.content)
    return found[:_MAX_WARNINGS]
