"""Reading the solution an agent sends: inline solution.json, or a path to one on the server's machine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import Field

from solforge.problems import FormatError, Problem, Solution, parse_solution
from solforge.problems.solution import MAX_SOURCE_BYTES, MAX_TOTAL_SOURCE_BYTES

from .base import ToolContext, ToolModel
from .errors import ToolInputError

MAX_SOLUTION_FILE_BYTES = MAX_TOTAL_SOURCE_BYTES + 1_000_000
"""Largest solution.json read from disk: every source at its limit plus room for the JSON around them."""


class SolutionInput(ToolModel):
    """The fields every tool that takes a solution shares. Give exactly one of solution and solution_path."""

    problem: str | None = Field(default=None, max_length=200)
    """Default: the solution's 'definition'."""
    solution: dict[str, Any] | None = None
    """The solution.json object: {name, definition, author, spec: {languages, entry_point}, sources: [{path, content}]}."""
    solution_path: str | None = Field(default=None, max_length=4096)
    """A solution.json on the server's machine; a source with a path and no content is read beside it."""


def read_sources_beside(data: dict[str, Any], folder: Path) -> None:
    sources = data.get("sources")
    if not isinstance(sources, list):
        return
    root = folder.resolve()
    for i, src in enumerate(sources):
        if not isinstance(src, dict) or "content" in src or not isinstance(src.get("path"), str):
            continue
        rel = src["path"]
        target = (folder / rel).resolve()
        if not target.is_relative_to(root):
            raise FormatError(
                f"sources[{i}].path {rel!r} leaves the solution's folder; keep sources beside solution.json"
            )
        if not target.is_file():
            raise FormatError(
                f"sources[{i}] has no content and there is no file {target}; add content or create the file"
            )
        size = target.stat().st_size
        if size > MAX_SOURCE_BYTES:
            raise FormatError(
                f"sources[{i}] file {target} is {size} bytes; the limit is {MAX_SOURCE_BYTES} bytes per file"
            )
        try:
            src["content"] = target.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise FormatError(f"sources[{i}] file {target} is not UTF-8 text; save it as UTF-8") from exc


def read_solution(args: SolutionInput, ctx: ToolContext) -> Solution:
    """The validated solution named by ``args``.

    Raises
    ------
    ToolInputError
        When both or neither of solution and solution_path are given, or paths are not allowed here.
    FormatError
        When the solution does not validate; the message names the field and the fix.
    """
    if (args.solution is None) == (args.solution_path is None):
        raise ToolInputError(
            "give exactly one of `solution` (the solution.json object) and `solution_path` (a path to solution.json)"
        )
    if args.solution is not None:
        size = len(json.dumps(args.solution))
        if size > MAX_SOLUTION_FILE_BYTES:
            raise FormatError(f"solution is {size} bytes of JSON; the limit is {MAX_SOLUTION_FILE_BYTES}")
        return parse_solution(args.solution, "solution")
    if not ctx.settings.allow_local_paths:
        raise ToolInputError(
            "this server is reached over the network and cannot read files on your machine; "
            "send the solution.json object as `solution` instead of `solution_path`"
        )
    path = Path(args.solution_path or "").expanduser()
    if path.is_dir():
        path = path / "solution.json"
    if not path.is_file():
        raise ToolInputError(
            f"no file at solution_path {str(path)!r} (the server's working directory is {Path.cwd()})"
        )
    size = path.stat().st_size
    if size > MAX_SOLUTION_FILE_BYTES:
        raise FormatError(f"{path} is {size} bytes; the limit is {MAX_SOLUTION_FILE_BYTES}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise FormatError(f"{path}: not UTF-8 text; save it as UTF-8") from exc
    except json.JSONDecodeError as exc:
        raise FormatError(f"{path}: line {exc.lineno} column {exc.colno}: invalid JSON: {exc.msg}") from exc
    if not isinstance(data, dict):
        raise FormatError(f"{path}: a solution.json holds one JSON object")
    read_sources_beside(data, path.parent)
    return parse_solution(data, str(path))


def solution_and_problem(args: SolutionInput, ctx: ToolContext) -> tuple[Solution, Problem]:
    """Read the solution and the problem it solves, and check that they belong together.

    Raises
    ------
    ToolInputError, FormatError, ProblemNotFound
        With a message naming the fix.
    """
    solution = read_solution(args, ctx)
    name = args.problem or solution.definition
    problem = ctx.services.problems.load(name)
    if solution.definition != problem.name:
        raise ToolInputError(
            f"the solution's definition is {solution.definition!r} but the problem is {problem.name!r}; "
            f'set "definition": {problem.name!r} in solution.json'
        )
    return solution, problem
