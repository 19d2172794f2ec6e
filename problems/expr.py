"""Safe evaluation of the small arithmetic language used in axes, constraints and SOL overrides.

Expressions such as ``"batch_size * seq_len"`` or ``"H_qo == H_kv * H_r"`` are parsed with ``ast``
and evaluated over a mapping of names to numbers; nothing but arithmetic, comparisons and a few
pure functions is accepted, so a definition file can never run code in the process reading it.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from .errors import ExpressionError

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {ast.USub: operator.neg, ast.UAdd: operator.pos}
_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "min": min,
    "max": max,
    "ceil": math.ceil,
    "floor": math.floor,
    "ceil_div": lambda a, b: -(-a // b),
    "log2": math.log2,
    "sqrt": math.sqrt,
    "abs": abs,
}


@lru_cache(maxsize=4096)
def _parse(source: str) -> ast.Expression:
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"cannot parse expression {source!r}: {exc.msg}") from exc
    return tree


def names_in(source: str) -> set[str]:
    """Return the free names an expression uses (function names excluded)."""
    tree = _parse(source)
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - called


def evaluate(source: str, names: Mapping[str, float | int | bool]) -> Any:
    """Evaluate ``source`` with ``names`` bound.

    Raises
    ------
    ExpressionError
        If the expression uses anything but numbers, the names given, arithmetic, comparisons,
        ``and``/``or``/``not`` and the functions min, max, ceil, floor, ceil_div, log2, sqrt, abs.
    """
    return _eval(_parse(source).body, names, source)


def _eval(node: ast.AST, names: Mapping[str, Any], source: str) -> Any:
    match node:
        case ast.Constant(value=value) if isinstance(value, int | float | bool):
            return value
        case ast.Name(id=name):
            if name not in names:
                raise ExpressionError(f"unknown name {name!r} in expression {source!r}; known: {sorted(names)}")
            return names[name]
        case ast.BinOp(left=left, op=op, right=right) if type(op) in _BINARY:
            return _BINARY[type(op)](_eval(left, names, source), _eval(right, names, source))
        case ast.UnaryOp(op=ast.Not(), operand=operand):
            return not _eval(operand, names, source)
        case ast.UnaryOp(op=op, operand=operand) if type(op) in _UNARY:
            return _UNARY[type(op)](_eval(operand, names, source))
        case ast.BoolOp(op=op, values=values):
            results = [_eval(v, names, source) for v in values]
            return all(results) if isinstance(op, ast.And) else any(results)
        case ast.Compare(left=left, ops=ops, comparators=comparators):
            current = _eval(left, names, source)
            for op, comparator in zip(ops, comparators, strict=True):
                if type(op) not in _COMPARE:
                    break
                right = _eval(comparator, names, source)
                if not _COMPARE[type(op)](current, right):
                    return False
                current = right
            else:
                return True
        case ast.Call(func=ast.Name(id=fname), args=args, keywords=[]) if fname in _FUNCTIONS:
            return _FUNCTIONS[fname](*(_eval(a, names, source) for a in args))
    raise ExpressionError(
        f"unsupported syntax {ast.dump(node)[:60]} in expression {source!r}: use numbers, axis names, "
        "+ - * / // % **, comparisons, and/or/not and min/max/ceil/floor/ceil_div/log2/sqrt/abs"
    )
