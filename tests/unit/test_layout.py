"""The module graph, held where it is: no import cycle (imports inside functions counted), no module over 700
lines. ``python scripts/module_graph.py`` prints the graph.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import module_graph

MAX_LINES = 700


def _short(name: str) -> str:
    return name.removeprefix("solforge.")


def test_no_import_cycle() -> None:
    found = module_graph.modules()
    graph = {name: module_graph.imports(name, path, set(found)) for name, path in found.items()}
    cycles = [sorted(_short(m) for m in component) for component in module_graph.cycles(graph)]
    assert len(found) > 100  # the layout was read
    assert not cycles, f"import cycles: {cycles}"


def test_the_cycle_finder_sees_a_function_level_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert module_graph.cycles(graph) == [["a", "b", "c"]]


def test_no_module_over_700_lines() -> None:
    sizes = {_short(name): len(path.read_text().splitlines()) for name, path in module_graph.modules().items()}
    large = {name: lines for name, lines in sizes.items() if lines > MAX_LINES}
    assert not large, f"split these into modules of one job each: {large}"
