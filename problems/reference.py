"""Executing a definition's reference source.

The reference is trusted code shipped with the problem (never candidate code), but it still runs only
in worker processes: this module is imported by the sandbox and by input generation, never by the
MCP server.
"""

from __future__ import annotations

import hashlib
import linecache
import re
import sys
import traceback
import types
from collections.abc import Callable
from typing import Any

from .definition import Definition
from .errors import FormatError


def reference_module_name(definition: Definition) -> str:
    """The module name a definition's reference is loaded under (unique per name and source)."""
    digest = hashlib.sha256(definition.reference.encode("utf-8")).hexdigest()[:12]
    safe = re.sub(r"\W", "_", definition.name)
    return f"solforge_reference_{safe}_{digest}"


def load_reference_module(definition: Definition) -> types.ModuleType:
    """Execute ``definition.reference`` in a fresh module and return the module.

    The source is registered with :mod:`linecache` under a pseudo file name so that tracebacks show
    the reference's lines and decorators that read their function's source (``@triton.jit``,
    ``inspect.getsource``) work. The module is also placed in :data:`sys.modules` (under a name that
    hashes the source) because dataclasses and pickling look modules up there.

    Parameters
    ----------
    definition
        The problem whose reference to load.

    Returns
    -------
    types.ModuleType
        A new module object; every call executes the source again.

    Raises
    ------
    FormatError
        If the source does not compile or raises while executing, or defines no callable ``run``.
    """
    name = reference_module_name(definition)
    filename = f"<reference of {definition.name}>"
    source = definition.reference
    lines = source.splitlines(keepends=True)
    # (size, mtime, lines, fullname); mtime None marks an entry linecache.checkcache must keep.
    linecache.cache[filename] = (len(source), None, lines, filename)
    module = types.ModuleType(name, f"Reference implementation of {definition.name}")
    module.__file__ = filename
    try:
        code = compile(source, filename, "exec")
    except SyntaxError as exc:
        raise FormatError(
            f"{definition.name}: reference: line {exc.lineno}: syntax error: {exc.msg}; fix the reference source"
        ) from exc
    sys.modules[name] = module
    try:
        exec(code, module.__dict__)
    except Exception as exc:
        sys.modules.pop(name, None)
        tb = "".join(traceback.format_exception(exc, limit=-3)).strip()
        raise FormatError(f"{definition.name}: reference raised while loading: {exc!r}\n{tb}") from exc
    run = getattr(module, "run", None)
    if not callable(run):
        raise FormatError(f"{definition.name}: reference defines no callable run(...); define a top-level run")
    return module


def reference_function(module: types.ModuleType, name: str, definition: Definition) -> Callable[..., Any]:
    """Look up a top-level function of a loaded reference, with an error that names it."""
    fn = getattr(module, name, None)
    if not callable(fn):
        raise FormatError(f"{definition.name}: reference defines no callable {name!r}")
    return fn
