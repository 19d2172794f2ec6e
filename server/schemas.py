"""Tool schemas as agents read them: every agent pays for ``tools/list`` in context before its first call.

pydantic's JSON schemas are made for validators. For an agent:

- an input schema keeps what helps to write a call (types, bounds, defaults, each argument's
  description) and drops what repeats it (titles, ``anyOf`` with ``null`` for an optional argument,
  ``default: null``);
- an output schema says which fields a result has and of which type, and nothing more: the tool's
  text answer explains them, and the full models are in ``read_docs(topic="api")``. Structured output
  stays: every result still validates against its schema.

The arguments are still validated against the full pydantic models.
"""

from __future__ import annotations

from typing import Any

__all__ = ["compact_input", "compact_output"]

_DROP = ("title", "maxLength", "maxItems", "pattern")
"""What an agent does not need to write a valid call (the pydantic models check lengths and patterns)."""


def compact_output(schema: dict[str, Any]) -> dict[str, Any]:
    """An object schema naming each field (see the module docstring): the values speak for themselves,
    and the text answer and ``read_docs(topic="api")`` explain them."""
    return {"type": "object", "properties": {name: {} for name in schema.get("properties", {})}}


def _optional(node: dict[str, Any]) -> dict[str, Any] | None:
    """``X`` for an ``anyOf: [X, {type: null}]`` (an argument that may be left out)."""
    options = node.get("anyOf")
    if not isinstance(options, list) or len(options) != 2:
        return None
    rest = [o for o in options if o != {"type": "null"}]
    return rest[0] if len(rest) == 1 else None


def _compact_node(node: Any) -> Any:
    if isinstance(node, list):
        return [_compact_node(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _compact_node(v) for k, v in node.items() if k not in _DROP}
    inner = _optional(out)
    if inner is not None and out.get("default", ...) is None:
        merged = {**inner, **{k: v for k, v in out.items() if k not in ("anyOf", "default")}}
        return merged
    return out


def _inline_enums(node: Any, defs: dict[str, Any]) -> Any:
    """Replace a ``$ref`` to an enum definition by the enum itself (the definition's text is the argument's)."""
    if isinstance(node, list):
        return [_inline_enums(n, defs) for n in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref", "")
    target = defs.get(ref.removeprefix("#/$defs/")) if ref.startswith("#/$defs/") else None
    if target is not None and "enum" in target:
        node = {**{k: v for k, v in node.items() if k != "$ref"}, "type": target.get("type", "string"),
                "enum": target["enum"]}
    return {k: _inline_enums(v, defs) for k, v in node.items()}


def compact_input(schema: dict[str, Any]) -> dict[str, Any]:
    """The argument schema without titles, validation-only keywords and ``null`` alternatives for
    optional arguments; its own description repeats the tool's and goes too."""
    defs = schema.get("$defs", {})
    out = _inline_enums({k: v for k, v in schema.items() if k not in ("$defs", "description")}, defs)
    kept = {name: {k: v for k, v in d.items() if k != "description"} for name, d in defs.items() if "enum" not in d}
    if kept:
        out["$defs"] = kept
    return _compact_node(out)
