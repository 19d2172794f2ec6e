"""Write any solforge problem in SOL-ExecBench format, so SOL-ExecBench loads it unchanged.

The folder gets ``definition.json`` (reference inline, as SOL-ExecBench's ``Definition`` expects),
``reference.py`` (the same source, as SOL-ExecBench's downloader lays problems out), ``workload.jsonl``
and every other file of the source folder (safetensors data, helper sources). solforge's extension
keys (``category``, ``tags``, ``flops``, ``bytes``, ``baseline``) stay: SOL-ExecBench's models ignore
unknown keys. Two things SOL-ExecBench's schema does not allow are rewritten: a literal size in a
shape becomes a const axis, and ``uint8`` (not a SOL-ExecBench dtype) is refused.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from ..dtypes import DType
from ..errors import FormatError
from ..load import load_problem

_OWN_FILES = {"definition.json", "workload.jsonl", "reference.py"}


def sol_execbench_definition(definition: dict[str, Any]) -> dict[str, Any]:
    """The definition as SOL-ExecBench reads it: every shape entry an axis name.

    Raises
    ------
    FormatError
        For a dtype SOL-ExecBench does not have.
    """
    out = json.loads(json.dumps(definition))
    axes: dict[str, Any] = out["axes"]
    for kind in ("inputs", "outputs"):
        for tensor, spec in out[kind].items():
            if spec.get("dtype") == DType.uint8.value:
                raise FormatError(
                    f"{out['name']}: {kind}.{tensor}.dtype: uint8 is not a SOL-ExecBench dtype; "
                    "use int8 or a float4 dtype before exporting"
                )
            shape = spec.get("shape")
            if shape is None:
                continue
            named = []
            for dim in shape:
                if isinstance(dim, int):
                    axis = f"size_{dim}"
                    axes.setdefault(axis, {"type": "const", "value": dim, "description": "literal size"})
                    named.append(axis)
                else:
                    named.append(dim)
            spec["shape"] = named
    return out


def export_problem(problem_name_or_path: str | Path, out_dir: Path) -> Path:
    """Write the problem to ``out_dir/<name>/`` in SOL-ExecBench layout.

    Parameters
    ----------
    problem_name_or_path
        A catalogue name or a problem folder.
    out_dir
        The folder to write into; created if missing. An existing ``<name>`` folder is replaced.

    Returns
    -------
    Path
        The problem folder written.

    Raises
    ------
    ProblemNotFound, FormatError
        When the problem does not load or cannot be expressed in SOL-ExecBench's schema.
    """
    problem = load_problem(problem_name_or_path)
    definition = sol_execbench_definition(problem.definition.to_json_dict())
    folder = Path(out_dir) / problem.name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / "definition.json").write_text(json.dumps(definition, indent=2) + "\n", encoding="utf-8")
    (folder / "reference.py").write_text(problem.definition.reference, encoding="utf-8")
    with (folder / "workload.jsonl").open("w", encoding="utf-8") as f:
        for w in problem.workloads:
            f.write(json.dumps(w.to_json_dict(), separators=(", ", ": ")) + "\n")
    if problem.folder is not None:
        for src in sorted(problem.folder.rglob("*")):
            rel = src.relative_to(problem.folder)
            if src.is_file() and str(rel) not in _OWN_FILES and not src.name.startswith("."):
                dest = folder / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dest)
    return folder
