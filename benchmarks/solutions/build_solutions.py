"""Assemble the hand-written solutions' ``solution.json`` files from their readable sources.

Layout, one folder per catalogue problem::

    benchmarks/solutions/<problem>/src/<language>/...   the sources, as a person edits them
    benchmarks/solutions/<problem>/<language>.json      SOL-ExecBench solution.json, generated here

Every file under ``src/<language>/`` becomes one entry of ``sources`` (path relative to that
folder). The entry point is ``main.py::run`` for the Python languages and ``binding.cpp::run`` for
cuda_cpp (the torch binding; the kernels live in ``kernel.cu``, which includes no torch header).
The description is ``main.py``'s module docstring, or ``kernel.cu``'s leading ``//`` comment
block. Each file is validated with solforge's own Solution model before it is written.

    .venv/bin/python benchmarks/solutions/build_solutions.py           # regenerate every JSON
    .venv/bin/python benchmarks/solutions/build_solutions.py --check   # exit 1 if any is stale
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

from solforge.problems import Solution

ROOT = Path(__file__).resolve().parent
LANGUAGES = ("pytorch", "triton", "cuda_cpp", "cute_dsl")
ENTRY_FILE = {"pytorch": "main.py", "triton": "main.py", "cute_dsl": "main.py", "cuda_cpp": "binding.cpp"}
DESCRIPTION_FILE = {**ENTRY_FILE, "cuda_cpp": "kernel.cu"}
DEPENDENCIES = {
    "pytorch": ["torch"],
    "triton": ["torch", "triton"],
    "cute_dsl": ["torch", "cutlass"],
    "cuda_cpp": [],
}
# cuda_cpp: IEEE division and no flush-to-zero, so the kernels round exactly as the reference does;
# the fast paths they need (rsqrt, packed conversions) are spelled out in the code. No driver API
# is used, so libcuda is not linked.
CUDA_COMPILE_OPTIONS = {"cflags": [], "cuda_cflags": ["-O3"], "ld_flags": []}
SKIP_NAMES = {"__pycache__"}


def problems() -> list[Path]:
    return sorted(p for p in ROOT.iterdir() if (p / "src").is_dir())


def _paragraphs(text: str) -> str:
    """Hard-wrapped text to one line per paragraph."""
    blocks = [" ".join(line.strip() for line in block.splitlines()) for block in text.strip().split("\n\n")]
    return "\n\n".join(b for b in blocks if b)


def describe(entry: Path) -> str:
    text = entry.read_text()
    if entry.suffix == ".py":
        doc = ast.get_docstring(ast.parse(text))
        if not doc:
            raise SystemExit(f"{entry}: the module docstring is the solution's description; write one")
        return _paragraphs(doc)
    lines = []
    for line in text.splitlines():
        if not line.startswith("//"):
            break
        lines.append(line[2:].strip())
    if not lines:
        raise SystemExit(f"{entry}: the leading // comment block is the solution's description; write one")
    return _paragraphs("\n".join(lines))


def assemble(problem: Path, language: str) -> dict:
    folder = problem / "src" / language
    files = sorted(
        p for p in folder.rglob("*") if p.is_file() and not (SKIP_NAMES & set(p.relative_to(folder).parts))
    )
    entry = ENTRY_FILE[language]
    spec: dict = {
        "languages": [language],
        "target_hardware": ["H200"],
        "entry_point": f"{entry}::run",
        "dependencies": DEPENDENCIES[language],
        "destination_passing_style": True,
    }
    if language == "cuda_cpp":
        spec["binding"] = "torch"
        spec["compile_options"] = CUDA_COMPILE_OPTIONS
    data = {
        "name": f"{problem.name}_{language}_handwritten",
        "definition": problem.name,
        "author": "solforge",
        "description": describe(folder / DESCRIPTION_FILE[language]),
        "spec": spec,
        "sources": [{"path": p.relative_to(folder).as_posix(), "content": p.read_text()} for p in files],
    }
    Solution.model_validate(data)  # fails loudly on anything solforge would reject
    return data


def render(data: dict) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report JSON files that are out of date")
    args = parser.parse_args(argv)
    stale = []
    for problem in problems():
        for language in LANGUAGES:
            folder = problem / "src" / language
            if not folder.is_dir() or not any(folder.iterdir()):
                continue
            target = problem / f"{language}.json"
            text = render(assemble(problem, language))
            if target.is_file() and target.read_text() == text:
                continue
            stale.append(target.relative_to(ROOT))
            if not args.check:
                target.write_text(text)
    verb = "out of date" if args.check else "written"
    for path in stale:
        print(f"{verb}: {path}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
