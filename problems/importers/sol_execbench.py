"""SOL-ExecBench problem folders: one, or a dataset folder holding many.

SOL-ExecBench's downloader writes ``data/benchmark/<subset>/<NNN_name>/{definition.json,
reference.py, workload.jsonl}``; solforge reads that layout natively (the reference may be inline or
in ``reference.py``). Importing validates each folder with solforge's models, compiles (never runs)
the reference, and copies the folder under the definition's name, keeping every file and every
key, so the copy still loads in SOL-ExecBench. Safetensors paths relative to
``$FLASHINFER_TRACE_DIR`` (the FlashInfer-Bench subset) are kept and reported.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import FormatError
from ..load import read_json
from .common import Importer, Staged

_OWN_FILES = {"definition.json", "workload.jsonl"}


def _read_object(path: Path) -> dict[str, Any]:
    data = read_json(path)
    if not isinstance(data, dict):
        raise FormatError(f"{path}: expected a JSON object (the definition), got {type(data).__name__}")
    return data


def read_workload_lines(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a .jsonl file, with errors that name the line."""
    if not path.is_file():
        raise FormatError(f"{path.parent}: no {path.name}; add one JSON line per workload")
    lines: list[dict[str, Any]] = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise FormatError(
                f"{path}:{lineno}: invalid JSON: {exc.msg} (column {exc.colno}); fix the line"
            ) from exc
        if not isinstance(data, dict):
            raise FormatError(f"{path}:{lineno}: expected a JSON object per line, got {type(data).__name__}")
        lines.append(data)
    return lines


class SolExecBenchImporter(Importer):
    """Copies validated SOL-ExecBench problem folders."""

    def discover(self, source: Path) -> list[Path]:
        if source.is_file():
            if source.name != "definition.json":
                raise FormatError(f"{source}: a SOL-ExecBench problem is a folder holding definition.json")
            return [source.parent]
        if (source / "definition.json").is_file():
            return [source]
        folders = sorted(p.parent for p in source.rglob("definition.json"))
        if not folders:
            raise FormatError(
                f"{source}: no definition.json found below it; is this a SOL-ExecBench dataset folder?"
            )
        return folders

    def stage(self, entry: Path) -> Staged:
        definition = _read_object(entry / "definition.json")
        workloads = read_workload_lines(entry / "workload.jsonl")
        files = {
            str(p.relative_to(entry)): p
            for p in sorted(entry.rglob("*"))
            if p.is_file() and str(p.relative_to(entry)) not in _OWN_FILES and not p.name.startswith(".")
        }
        notes = []
        misspelt = sum(1 for w in workloads if "required_match_ratio" in (w.get("tolerance") or {}))
        if misspelt:
            notes.append(
                f"{misspelt} workloads spell 'required_match_ratio'; "
                "like SOL-ExecBench, solforge ignores it and "
                "uses required_matched_ratio (default 0.99)"
            )
        return Staged(definition=definition, workloads=workloads, source=str(entry), files=files, notes=notes)
