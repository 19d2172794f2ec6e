"""Reading a solution.json named on the command line (``solforge eval`` and ``solforge profile``)."""

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
