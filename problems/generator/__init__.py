"""Generate the bundled catalogue from operator templates and model configurations.

``python -m solforge.problems.generator`` writes ``problems/catalogue/<name>/{definition.json,
workload.jsonl}`` (SOL-ExecBench layout, reference inline); ``--check`` verifies that the committed
folders are exactly what the generator produces and exits 1 listing the differences otherwise.

- :mod:`.models`, :mod:`.models_llm` and ``models_*`` of the media families (diffusion, vision,
  audio, video, multimodal): model configurations, numbers copied from each model's config.json
  (under the same keys);
- operator templates ``(model, **options) -> Problem``: :mod:`.llm` and ``llm_*`` (norms, rotary,
  attention, GEMMs, MoE, quantisation, backward passes, whole layers, state-space models; shared
  shape helpers in :mod:`.llm_shapes`), :mod:`.media` and ``media_*`` (diffusion UNets and VAEs,
  diffusion transformers, vision, audio, video, multimodal; shared blocks in :mod:`.media_layers`,
  their backward passes in :mod:`.media_backward`, helpers in :mod:`.media_common`);
- :mod:`.catalogue` (with :mod:`.catalogue_llm` and :mod:`.catalogue_media`): which template runs on
  which model, one line per problem;
- :mod:`.common`: shared pieces (tolerance presets with their justification, uuids, workloads).

Packed fp4 (NVFP4) tensors are declared ``uint8``, two e2m1 codes per byte, as FlashInfer and vLLM
hold them: the CPU build of torch cannot yet copy or compare ``float4_e2m1fn_x2`` tensors, which
the catalogue's checks need. Their speed of light is still counted at the fp4 tensor-core rate.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..load import CATALOGUE_DIR, Problem
from .catalogue import ALL_MODELS as MODELS
from .catalogue import ENTRIES
from .entry import Entry
from .models import ModelConfig

__all__ = [
    "ENTRIES",
    "MODELS",
    "Entry",
    "ModelConfig",
    "build_catalogue",
    "check_catalogue",
    "render_problem",
    "write_catalogue",
]

# Key order of definition.json: identity first, then the contract, then the code.
_DEFINITION_ORDER = (
    "name", "category", "op_type", "hf_id", "tags", "description", "axes", "constraints",
    "inputs", "outputs", "custom_inputs_entrypoint", "reference",
)  # fmt: skip


def build_catalogue(entries: Iterable[Entry] = ENTRIES) -> list[Problem]:
    """Build every catalogue problem in memory.

    Raises
    ------
    ValueError
        If two entries produce the same problem name.
    """
    problems = [entry.build() for entry in entries]
    names = [p.name for p in problems]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"catalogue entries produce the same problem names {dupes}; pass name options apart")
    return problems


def render_problem(problem: Problem) -> dict[str, str]:
    """The files of one problem folder, name to text, exactly as written to disk."""
    data = _drop_nulls(problem.definition.model_dump(mode="json", by_alias=True))
    ordered = {k: data.pop(k) for k in _DEFINITION_ORDER if k in data}
    ordered.update(data)
    definition = _pretty_json(ordered) + "\n"
    lines = [
        json.dumps(w.model_dump(mode="json", by_alias=True, exclude_none=True), ensure_ascii=False)
        for w in problem.workloads
    ]
    return {"definition.json": definition, "workload.jsonl": "\n".join(lines) + "\n"}


def write_catalogue(root: Path = CATALOGUE_DIR, problems: Iterable[Problem] | None = None) -> list[Path]:
    """Write every problem folder under ``root``; return the files that changed."""
    changed: list[Path] = []
    for problem in build_catalogue() if problems is None else problems:
        folder = root / problem.name
        folder.mkdir(parents=True, exist_ok=True)
        for filename, text in render_problem(problem).items():
            path = folder / filename
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                path.write_text(text, encoding="utf-8")
                changed.append(path)
    return changed


def check_catalogue(root: Path = CATALOGUE_DIR, problems: Iterable[Problem] | None = None) -> list[str]:
    """Compare the folders under ``root`` with what the generator produces.

    Returns
    -------
    list[str]
        One line per difference (missing, changed or unexpected folder or file); empty when equal.
    """
    differences: list[str] = []
    expected = {p.name: render_problem(p) for p in (build_catalogue() if problems is None else problems)}
    present = {p.name for p in root.iterdir() if p.is_dir()} if root.is_dir() else set()
    for name in sorted(present - set(expected)):
        if (root / name / "definition.json").is_file():
            differences.append(f"{name}: folder is not produced by the generator (remove it or add a catalogue entry)")
    for name, files in sorted(expected.items()):
        folder = root / name
        if not folder.is_dir():
            differences.append(f"{name}: folder missing")
            continue
        for filename, text in files.items():
            path = folder / filename
            if not path.is_file():
                differences.append(f"{name}/{filename}: missing")
                continue
            actual = path.read_text(encoding="utf-8")
            if actual != text:
                differences.append(f"{name}/{filename}: differs ({_first_difference(actual, text)})")
        extra = sorted(p.name for p in folder.iterdir() if p.is_file() and p.name not in files)
        differences.extend(f"{name}/{filename}: not produced by the generator" for filename in extra)
    return differences


def _drop_nulls(value: Any) -> Any:
    """Remove null-valued keys (unset optional fields), except ``shape``, where null means a Python scalar."""
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None or k == "shape"}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def _pretty_json(value: object, indent: int = 0, width: int = 110) -> str:
    """JSON with nested values on one line when they fit in ``width`` (shapes, axes, tags), else expanded."""
    compact = json.dumps(value, ensure_ascii=False)
    if not isinstance(value, dict | list) or not value or (indent > 0 and indent + len(compact) <= width):
        return compact
    pad, inner = " " * indent, " " * (indent + 2)
    if isinstance(value, dict):
        items = [f"{inner}{json.dumps(k, ensure_ascii=False)}: {_pretty_json(v, indent + 2, width)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    items = [f"{inner}{_pretty_json(v, indent + 2, width)}" for v in value]
    return "[\n" + ",\n".join(items) + "\n" + pad + "]"


def _first_difference(actual: str, expected: str) -> str:
    a_lines, e_lines = actual.splitlines(), expected.splitlines()
    for i, (a, e) in enumerate(zip(a_lines, e_lines, strict=False), 1):
        if a != e:
            return f"first at line {i}: has {a[:80]!r}, generator writes {e[:80]!r}"
    return f"{len(a_lines)} lines on disk, the generator writes {len(e_lines)}"
