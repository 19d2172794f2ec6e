"""The solution and problem named on the command line (``solforge eval`` and ``solforge profile``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def read_solution(path: Path) -> Any:
    """solution.json at ``path`` (or in the folder ``path``); a source given by path only is read from
    beside it, as the MCP tools' solution_path does (PROTOCOL section 1)."""
    from solforge.problems import FormatError, parse_solution
    from solforge.problems.load import read_json
    from solforge.tools.solutions import read_sources_beside

    if path.is_dir():
        path = path / "solution.json"
    if not path.is_file():
        raise FormatError(f"{path}: no such solution file; pass --solution path/to/solution.json")
    data = read_json(path)
    if isinstance(data, dict):
        read_sources_beside(data, path.parent)
    return parse_solution(data, str(path))  # type: ignore[arg-type]


def problem_reference(name: str, problem: Any) -> str:
    """What the judge is told to load: the catalogue name, or the folder itself when the problem was found in
    $SOLFORGE_PROBLEM_DIRS or given as a path (the judge's children read it from there)."""
    from solforge.problems import CATALOGUE_DIR

    if problem.folder is not None and problem.folder.parent != CATALOGUE_DIR:
        return str(problem.folder.resolve())
    return name
