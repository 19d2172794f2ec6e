"""FlashInfer-Trace definitions with their workloads (FlashInfer-Bench's trace set).

A trace set (``flashinfer_bench.data.TraceSet``) is laid out as::

    <root>/definitions/<op_type>/<name>.json      one Definition per file
    <root>/workloads/<op_type>/<name>.jsonl       workload traces, one per line: {"definition",
                                                  "workload", "solution": null, "evaluation": null}
    <root>/blob/workloads/...                     safetensors files the workloads load
    <root>/solutions/, <root>/traces/             not imported

The source is the root, or one definition file inside it (its workloads are then looked up in the
root), or a lone definition file with its workloads beside it in ``<stem>.jsonl``.

FlashInfer-Trace is the format SOL-ExecBench extended, so a definition mostly carries over as is.
The differences handled here: early definitions name the category ``type`` instead of ``op_type``;
``float8_e4m3`` is the old spelling of ``float8_e4m3fn``; a safetensors ``path`` is relative to the
trace-set root (``./blob/workloads/...``), so each referenced file is copied into the problem folder
under the same relative path, making the problem self-contained. Workloads carry no tolerance and
get FlashInfer-Bench's (and SOL-ExecBench's) default, atol = rtol = 1e-2, matched ratio 0.99.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import FormatError
from .common import Importer, Staged
from .sol_execbench import _read_object, read_workload_lines

_DTYPE_ALIASES = {"float8_e4m3": "float8_e4m3fn", "fp8_e4m3": "float8_e4m3fn", "fp8_e5m2": "float8_e5m2"}


def _trace_root(definition_file: Path) -> Path | None:
    """The trace-set root above a definition file (the parent of its ``definitions`` folder)."""
    for parent in definition_file.parents:
        if parent.name == "definitions":
            return parent.parent
    return None


class FlashInferTraceImporter(Importer):
    """Stages each definition of a trace set with its workloads and data files."""

    def __init__(self) -> None:
        self._index: dict[Path, dict[str, list[tuple[str, dict[str, Any]]]]] = {}

    def discover(self, source: Path) -> list[Path]:
        if source.is_file():
            return [source]
        definitions = sorted((source / "definitions").rglob("*.json"))
        if not definitions:
            raise FormatError(
                f"{source}: no definitions/**/*.json; "
                "a FlashInfer-Bench trace set keeps one definition per file there"
            )
        return definitions

    def _workloads_by_definition(self, root: Path) -> dict[str, list[tuple[str, dict[str, Any]]]]:
        """Every workload line under ``root/workloads``, by definition name, with where it came from."""
        if root in self._index:
            return self._index[root]
        index: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        for path in sorted((root / "workloads").rglob("*.jsonl")):
            for lineno, line in enumerate(read_workload_lines(path), 1):
                owner, workload = _split_trace(line, default_owner=path.stem)
                index.setdefault(owner, []).append((f"{path}:{lineno}", workload))
        self._index[root] = index
        return index

    def stage(self, entry: Path) -> Staged:
        definition = _read_object(entry)
        name = definition.get("name")
        if not isinstance(name, str) or not name:
            raise FormatError(f"{entry}: name: missing; a FlashInfer-Trace definition names itself in 'name'")
        _upgrade_definition(definition, entry)
        root = _trace_root(entry)
        found: list[tuple[str, dict[str, Any]]] = []
        looked = []
        if root is not None:
            found = list(self._workloads_by_definition(root).get(name, []))
            looked.append(f"{root / 'workloads'}/**/*.jsonl")
        sibling = entry.with_suffix(".jsonl")
        if not found and sibling.is_file():
            for lineno, line in enumerate(read_workload_lines(sibling), 1):
                owner, workload = _split_trace(line, default_owner=name)
                if owner == name:
                    found.append((f"{sibling}:{lineno}", workload))
        looked.append(str(sibling))
        if not found:
            raise FormatError(
                f"{entry}: no workloads for definition {name!r} (looked in {', '.join(looked)}); "
                "add workload "
                f"lines whose 'definition' is {name!r}"
            )
        files: dict[str, Path] = {}
        base = root if root is not None else entry.parent
        workloads = [_localise_blobs(w, where, base, files) for where, w in found]
        notes = []
        if not any("tolerance" in w for w in workloads):
            notes.append(
                "workloads carry no tolerance: the default atol = rtol = 1e-2, matched ratio 0.99 applies"
            )
        if files:
            notes.append(f"copied {len(files)} safetensors files into the problem folder")
        return Staged(
            definition=definition,
            workloads=workloads,
            source=str(entry),
            files=files,
            notes=notes,
            definition_where=str(entry),
            workloads_where=", ".join(sorted({w.rsplit(":", 1)[0] for w, _ in found})),
        )


def _split_trace(line: dict[str, Any], *, default_owner: str) -> tuple[str, dict[str, Any]]:
    """(definition name, workload object) of a workload-trace line or of a bare workload line."""
    if isinstance(line.get("workload"), dict):
        return str(line.get("definition") or default_owner), dict(line["workload"])
    return default_owner, dict(line)


def _upgrade_definition(definition: dict[str, Any], entry: Path) -> None:
    """Bring an early FlashInfer-Trace definition to the current field names, in place."""
    if "op_type" not in definition and isinstance(definition.get("type"), str):
        definition["op_type"] = definition.pop("type")
    for kind in ("inputs", "outputs"):
        specs = definition.get(kind)
        if not isinstance(specs, dict):
            continue
        for tensor, spec in specs.items():
            if isinstance(spec, dict) and isinstance(spec.get("dtype"), str):
                spec["dtype"] = _DTYPE_ALIASES.get(spec["dtype"], spec["dtype"])
            if not isinstance(spec, dict) or "shape" not in spec:
                raise FormatError(
                    f"{entry}: {kind}.{tensor}.shape: missing; "
                    "give a list of axis names ([] for a 0-D tensor, "
                    "null for a Python scalar)"
                )


def _localise_blobs(
    workload: dict[str, Any], where: str, base: Path, files: dict[str, Path]
) -> dict[str, Any]:
    """Point each safetensors input at a copy inside the problem folder; record the copy in ``files``."""
    inputs = workload.get("inputs")
    if not isinstance(inputs, dict):
        return workload
    for input_name, descriptor in inputs.items():
        if not isinstance(descriptor, dict) or descriptor.get("type") != "safetensors":
            continue
        raw = descriptor.get("path")
        if not isinstance(raw, str) or not raw:
            raise FormatError(f"{where}: inputs.{input_name}.path: missing; give the safetensors file's path")
        path = Path(raw)
        candidates = [path] if path.is_absolute() else [base / path]
        if not path.is_absolute() and os.environ.get("FLASHINFER_TRACE_DIR"):
            candidates.append(Path(os.environ["FLASHINFER_TRACE_DIR"]) / path)
        src = next((c for c in candidates if c.is_file()), None)
        if src is None:
            raise FormatError(
                f"{where}: inputs.{input_name}.path: {raw} not found "
                f"(looked at {[str(c) for c in candidates]}); "
                "keep the trace set's blob/ folder beside definitions/, or set FLASHINFER_TRACE_DIR"
            )
        rel = PurePosixPath(raw.replace("\\", "/"))
        if path.is_absolute() or ".." in rel.parts:
            rel = PurePosixPath("blob") / src.name
        rel_str = str(rel).removeprefix("./")
        if rel_str in files and files[rel_str].resolve() != src.resolve():
            raise FormatError(
                f"{where}: inputs.{input_name}.path: two different files would both be copied to {rel_str}"
            )
        files[rel_str] = src
        descriptor["path"] = rel_str
    return workload
