"""The module graph of solforge: import cycles between modules and the largest modules.

Every import counts, including those inside functions (they are how most cycles are hidden), and
``from package import module`` counts as an import of that module. Run from the checkout::

    python scripts/module_graph.py              # cycles, then the 15 largest modules
    python scripts/module_graph.py --top 40 --package sandbox

Reads the package layout from pyproject.toml's ``[tool.setuptools.package-dir]``; needs nothing
installed.
"""

from __future__ import annotations

import argparse
import ast
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def modules() -> dict[str, Path]:
    """Every solforge module name and its file."""
    layout = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    found: dict[str, Path] = {}
    for package, folder in layout.items():
        for path in sorted((ROOT / folder).glob("*.py")):
            name = package if path.stem == "__init__" else f"{package}.{path.stem}"
            found[name] = path
    return found


def _resolve(module: str, level: int, name: str | None, is_package: bool) -> str:
    if level == 0:
        return name or ""
    parts = module.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The solforge modules ``name`` imports anywhere in its file."""
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.stem == "__init__"
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(name, node.level, node.module, is_package)
            # ``from package import module`` imports the module (and runs the package's __init__, which
            # only matters when the names come from the package itself).
            submodules = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in known]
            targets = submodules if len(submodules) == len(node.names) else [base, *submodules]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for succ in graph.get(node, ()):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=15, help="how many of the largest modules to list")
    parser.add_argument("--package", help="only modules under solforge.<package>")
    args = parser.parse_args(argv)
    found = modules()
    graph = {name: imports(name, path, set(found)) for name, path in found.items()}
    prefix = f"solforge.{args.package}" if args.package else "solforge"
    shown = [c for c in cycles(graph) if any(m.startswith(prefix) for m in c)]
    print(f"{len(shown)} import cycles (function-level imports included):")
    for component in shown:
        print("  " + " <-> ".join(m.removeprefix("solforge.") for m in component))
    sizes = sorted(((len(path.read_text().splitlines()), name) for name, path in found.items()
                    if name.startswith(prefix)), reverse=True)
    print(f"\n{args.top} largest modules (lines):")
    for lines, name in sizes[: args.top]:
        print(f"  {lines:5d}  {name.removeprefix('solforge.')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
