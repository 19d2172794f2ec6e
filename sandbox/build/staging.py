"""Writing a solution's sources to disk safely, and the static checks of Python sources.

None of this runs candidate code: Python sources are byte-compiled (syntax only) and the entry point
is looked up in the syntax tree.
"""

from __future__ import annotations

import ast
import difflib
import os
import py_compile
from pathlib import Path, PurePosixPath

from solforge.problems import Solution

from .logs import shorten_paths

__all__ = ["check_entry_symbol", "check_python_syntax", "stage_sources", "top_level_names"]


def stage_sources(solution: Solution, dest: Path) -> Path:
    """Write every source file under ``dest`` (created; must not exist) and return ``dest``.

    The paths were validated when the solution was parsed; they are checked again here against the
    real filesystem (defence in depth): no absolute paths, no ``..``, no path through a symlink,
    no file written twice, nothing followed out of ``dest``.

    Raises
    ------
    ValueError
        A path would leave ``dest``; the message names it.
    """
    dest.mkdir(parents=True, exist_ok=False)
    root = dest.resolve()
    for source in solution.sources:
        rel = PurePosixPath(source.path.replace("\\", "/"))
        if rel.is_absolute() or ".." in rel.parts or not rel.parts or rel.parts[0] in ("", "/"):
            raise ValueError(f"source path {source.path!r} leaves the solution folder")
        folder = root
        for part in rel.parts[:-1]:
            folder = folder / part
            if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
                raise ValueError(f"source path {source.path!r} goes through {part!r}, which is not a folder")
            folder.mkdir(exist_ok=True)
        target = folder / rel.parts[-1]
        if not target.resolve().is_relative_to(root):
            raise ValueError(f"source path {source.path!r} resolves outside the solution folder")
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        except FileExistsError as exc:
            raise ValueError(f"source path {source.path!r} collides with another source") from exc
        with os.fdopen(fd, "wb") as handle:
            handle.write(source.content.encode("utf-8", "surrogatepass"))
    return dest


def check_python_syntax(solution: Solution, src_dir: Path, pyc_dir: Path) -> list[str]:
    """Byte-compile every ``.py`` source; return one message per file with a SyntaxError.

    Each message reads ``main.py:12:9: SyntaxError: ...`` followed by the offending line and a
    caret, as Python itself prints it.
    """
    errors = []
    pyc_dir.mkdir(parents=True, exist_ok=True)
    for index, source in enumerate(solution.sources):
        if not source.path.endswith(".py"):
            continue
        try:
            py_compile.compile(
                str(src_dir / source.path),
                cfile=str(pyc_dir / f"{index}.pyc"),
                dfile=source.path,
                doraise=True,
            )
        except py_compile.PyCompileError as exc:
            errors.append(_format_syntax_error(exc.exc_value, source.path, src_dir))
    return errors


def _format_syntax_error(exc: BaseException, path: str, src_dir: Path) -> str:
    if isinstance(exc, SyntaxError):
        where = f"{path}:{exc.lineno or '?'}" + (f":{exc.offset}" if exc.offset else "")
        lines = [f"{where}: {type(exc).__name__}: {exc.msg}"]
        if exc.text:
            text = exc.text.rstrip("\n")
            stripped = text.lstrip()
            lines.append("    " + stripped)
            if exc.offset:
                caret = max(0, exc.offset - 1 - (len(text) - len(stripped)))
                lines.append("    " + " " * caret + "^")
        return "\n".join(lines)
    # ValueError for NUL bytes, UnicodeDecodeError for bad encodings
    return f"{path}: {type(exc).__name__}: {shorten_paths(str(exc), [src_dir])}"


def top_level_names(tree: ast.Module) -> dict[str, str]:
    """Names a module defines at top level (also inside top-level if/try/with), with their kind."""
    names: dict[str, str] = {}

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                names.setdefault(node.name, "function")
            elif isinstance(node, ast.ClassDef):
                names.setdefault(node.name, "class")
            elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for sub in ast.walk(target):
                        if isinstance(sub, ast.Name):
                            names.setdefault(sub.id, "variable")
            elif isinstance(node, ast.Import | ast.ImportFrom):
                for alias in node.names:
                    if alias.name != "*":
                        names.setdefault(alias.asname or alias.name.split(".")[0], "import")
            elif isinstance(node, ast.If | ast.Try | ast.With):
                visit(node.body)
                visit(getattr(node, "orelse", []))
                visit(getattr(node, "finalbody", []))
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)

    visit(tree.body)
    return names


def check_entry_symbol(solution: Solution) -> str | None:
    """None when the entry file defines the entry symbol at top level, else a message saying what
    is missing, what the file does define, and the closest match."""
    spec = solution.spec
    source = solution.source(spec.entry_file)
    if source is None:
        return f"entry file {spec.entry_file!r} (from spec.entry_point) is not among the sources"
    tree = ast.parse(source.content, filename=spec.entry_file)
    names = top_level_names(tree)
    if spec.entry_symbol in names:
        return None
    if any(
        isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names) for node in ast.walk(tree)
    ):
        return None  # `from x import *` may bring it in; the import in the candidate process decides
    functions = sorted(n for n, kind in names.items() if kind == "function")
    others = sorted(n for n, kind in names.items() if kind in ("class", "variable"))
    message = (
        f"entry point {spec.entry_point!r}: {spec.entry_file} defines no top-level {spec.entry_symbol!r}. "
        f"It defines functions {functions or 'none'}" + (f" and names {others}" if others else "") + "."
    )
    close = difflib.get_close_matches(spec.entry_symbol, list(names), n=1)
    if close:
        message += f" Did you mean {close[0]!r}? Rename it or set spec.entry_point to '{spec.entry_file}::{close[0]}'."
    else:
        message += f" Define `def {spec.entry_symbol}(...)` at module level of {spec.entry_file}."
    return message
