"""Turn the plain tools of ``solforge.tools`` into MCP tools, and map solforge's errors in one place.

Each :class:`~solforge.tools.registry.ToolSpec` becomes an MCP tool whose arguments are the fields of
its input model (flat, as a model expects to call them), validated by that model (unknown arguments
are refused) before any work. The result is the tool's text (:meth:`ToolResult.render`) plus the model as structured content.

Errors reach the agent only as ``ToolError`` messages, decided by :func:`tool_error`:

- ``SolforgeError`` (an unknown problem, a malformed solution, a job that is not yours): its message.
- pydantic ``ValidationError``: which field, what is wrong.
- anything else: a bug. Its traceback goes to stderr and the agent reads a generic message.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sys
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import ValidationError

from solforge.problems.errors import SolforgeError
from solforge.problems.files import write_text_atomic
from solforge.problems.load import describe_validation_error
from solforge.tools.base import DEFAULT_MAX_CHARS, MAX_MAX_CHARS, ToolContext, ToolServices, clip
from solforge.tools.registry import ToolSpec

from .schemas import compact_input, compact_output

log = logging.getLogger("solforge.server")

AgentResolver = Callable[[], str]
"""Returns the caller's agent name for the current request."""


def default_agent_resolver(default_agent: str) -> AgentResolver:
    """The caller is its bearer token's agent on HTTP, else the server's own agent name (stdio, in-memory)."""

    def resolve() -> str:
        token = get_access_token()
        if token is not None:
            return token.client_id
        return default_agent

    return resolve


def tool_error(exc: Exception, tool: str) -> ToolError:
    """The one place a Python exception becomes the message an agent reads.

    Parameters
    ----------
    exc
        What the tool raised.
    tool
        The tool's name, for the log.

    Returns
    -------
    ToolError
        To raise from the MCP handler.
    """
    if isinstance(exc, SolforgeError):
        log.info(
            "tool %s refused: %s", tool, str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
        )
        return ToolError(str(exc))
    if isinstance(exc, ValidationError):
        return ToolError(describe_validation_error(exc, "arguments"))
    log.error("tool %s crashed", tool, exc_info=exc)
    return ToolError(
        f"solforge hit an internal error in {tool} ({type(exc).__name__}); the server logged the traceback. "
        "Your arguments were accepted; retry once, and if it happens again, report it and move on."
    )


def _argument_model(spec: ToolSpec) -> type[ArgModelBase]:
    """The SDK's argument model for ``spec``: its input model itself (fields, validators, extra="forbid",
    so a misspelt argument fails loudly), with the SDK's one-level dump."""
    name = "".join(part.title() for part in spec.name.split("_")) + "Arguments"
    return type(
        name, (spec.input_model, ArgModelBase), {"__module__": __name__, "__doc__": spec.input_model.__doc__}
    )


_INVALID = "_solforge_invalid_arguments"
"""Where :class:`_PhrasedArguments` hands arguments that failed validation on to the handler."""


class _PhrasedArguments(FuncMetadata):
    """The SDK's argument handling, except that arguments which fail validation reach the handler,
    whose own validation phrases the error (field, problem, fix): the SDK would answer with pydantic's
    text and documentation links."""

    def validate_arguments(self, arguments_to_validate: dict[str, Any]) -> dict[str, Any]:
        parsed = self.pre_parse_json(arguments_to_validate)
        try:
            return self.arg_model.model_validate(parsed).model_dump_one_level()
        except ValidationError:
            return {_INVALID: parsed}


Schemas = dict[str, tuple[dict[str, Any], dict[str, Any]]]
"""tool name -> (input schema, output schema)."""


def _schema_cache_path(specs: list[ToolSpec]) -> Path:
    """Where the schemas of exactly these tools, in this code and these library versions, are cached."""
    digest = hashlib.sha256()
    for package in ("mcp", "pydantic"):
        try:
            digest.update(f"{package}={version(package)};".encode())
        except Exception:
            digest.update(f"{package}=?;".encode())
    files = {Path(__file__)}
    for spec in specs:
        for model in (spec.input_model, spec.result_model):
            for base in model.__mro__:  # a field inherited from a shared base changes the schema too
                module = sys.modules.get(base.__module__)
                if module is not None and getattr(module, "__file__", None) and base.__module__.startswith("solforge"):
                    files.add(Path(module.__file__))  # type: ignore[arg-type]
            digest.update(f"{spec.name}:{model.__module__}.{model.__qualname__};".encode())
    files.add(Path(__file__).with_name("schemas.py"))  # how the schemas are compacted
    for path in sorted(files):
        try:
            digest.update(path.read_bytes())
        except OSError:
            digest.update(str(path).encode())
    from solforge.problems.config import cache_dir

    root = cache_dir()
    return root / "mcp" / f"tool-schemas-{digest.hexdigest()[:20]}.json"


def tool_schemas(specs: list[ToolSpec]) -> Schemas:
    """The published schemas of ``specs``, from a cache keyed on their source and library versions.

    Generating them takes a noticeable part of start-up; a cold cache generates and writes them (a
    cache that cannot be written is not an error).
    """
    path = _schema_cache_path(specs)
    try:
        cached = json.loads(path.read_text())
        if isinstance(cached, dict) and set(cached) == {s.name for s in specs}:
            return {name: (pair[0], pair[1]) for name, pair in cached.items()}
    except (OSError, ValueError, TypeError, IndexError):
        pass
    schemas: Schemas = {
        spec.name: (
            compact_input(_argument_model(spec).model_json_schema(by_alias=True)),
            compact_output(spec.result_model.model_json_schema()),
        )
        for spec in specs
    }
    try:
        write_text_atomic(path, json.dumps(schemas))
    except OSError as exc:
        log.debug("tool schema cache not written: %s", exc)
    return schemas


def build_tool(
    spec: ToolSpec,
    services: ToolServices,
    resolve_agent: AgentResolver,
    schemas: tuple[dict[str, Any], dict[str, Any]] | None = None,
) -> Tool:
    """The MCP tool for one ToolSpec.

    The tool is assembled from the spec's models directly (one schema generation each), not by
    introspecting a function signature: start-up time matters to clients that bound the connect.

    Parameters
    ----------
    spec
        The tool.
    services
        Shared state handed to every call.
    resolve_agent
        Who is calling (see :func:`default_agent_resolver`).
    schemas
        The (input, output) schemas, when already known (:func:`tool_schemas`).
    """
    has_max_chars = "max_chars" in spec.input_model.model_fields
    pages = [f for f in ("offset", "workload_offset") if f in spec.input_model.model_fields]
    hint = "ask for more with max_chars" + (f", or page with {pages[0]}" if pages else "")

    async def handler(ctx: Context, **arguments: Any) -> CallToolResult:
        try:
            args = spec.input_model.model_validate(arguments.get(_INVALID, arguments))

            async def progress(done: float, total: float | None, message: str | None) -> None:
                await ctx.report_progress(done, total, message)

            tool_ctx = ToolContext(
                services=services,
                agent=resolve_agent(),
                progress_fn=progress if spec.long_running else None,
            )
            result = await spec.fn(args, tool_ctx)
        except ToolError:
            raise
        except Exception as exc:
            raise tool_error(exc, spec.name) from exc
        limit = int(getattr(args, "max_chars", DEFAULT_MAX_CHARS)) if has_max_chars else DEFAULT_MAX_CHARS
        text, cut = clip(result.render(), limit, hint=hint)
        if cut:
            log.warning("tool %s answer cut to %d characters", spec.name, limit)
        return CallToolResult(
            content=[TextContent(type="text", text=text)],
            structured_content=result.model_dump(mode="json"),
        )

    handler.__name__ = handler.__qualname__ = spec.name
    meta: dict[str, Any] | None = None
    if has_max_chars:
        # Claude Code cuts tool answers it thinks are too long; an agent that asks for more should get it.
        meta = {"anthropic/maxResultSizeChars": MAX_MAX_CHARS + 10_000}
    arg_model = _argument_model(spec)
    if schemas is None:
        schemas = (compact_input(arg_model.model_json_schema(by_alias=True)),
                   compact_output(spec.result_model.model_json_schema()))
    return Tool(
        fn=handler,
        name=spec.name,
        title=spec.title,
        description=spec.description,
        parameters=schemas[0],
        fn_metadata=_PhrasedArguments(
            arg_model=arg_model,
            output_model=spec.result_model,
            output_schema=schemas[1],
        ),
        is_async=True,
        context_kwarg="ctx",
        # Only the hints that differ from the protocol's defaults (not read-only, destructive, not
        # idempotent, open world); no title: the tool's own says it.
        annotations=ToolAnnotations(
            read_only_hint=True if spec.read_only else None,
            destructive_hint=None if spec.read_only or spec.destructive else False,
            idempotent_hint=True if spec.idempotent else None,
            open_world_hint=False,
        ),
        meta=meta,
    )


def build_tools(specs: list[ToolSpec], services: ToolServices, resolve_agent: AgentResolver) -> list[Tool]:
    """Every MCP tool, in order."""
    schemas = tool_schemas(specs)
    return [build_tool(spec, services, resolve_agent, schemas[spec.name]) for spec in specs]
