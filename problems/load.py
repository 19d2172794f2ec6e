"""Reading and writing problem folders and solution files, with errors that name the file, field and fix."""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from . import config
from .definition import Definition
from .errors import FormatError, ProblemNotFound
from .solution import Solution
from .trace import Trace
from .workload import Workload

CATALOGUE_DIR = Path(__file__).parent / "catalogue"
"""The bundled problems, one folder each."""
TABLES_DIR = Path(__file__).parent / "baselines"
"""Tables shipped with the catalogue: baselines per GPU model (``<gpu>.jsonl``) and speed-of-light counts
(``sol_counts.jsonl``)."""
TABLES_DIR_ENV = config.TABLES_DIR_ENV
"""Another folder of such tables, used instead of the shipped one."""
PROBLEM_DIRS_ENV = config.PROBLEM_DIRS_ENV
"""Folders of problem folders (os.pathsep-separated), searched before the bundled catalogue."""

M = TypeVar("M", bound=BaseModel)


def tables_dir() -> Path:
    """The folder of the catalogue's shipped tables (:data:`TABLES_DIR`, or the one ``SOLFORGE_BASELINE_TABLES`` names)."""
    return config.baseline_tables_dir() or TABLES_DIR


@dataclass(frozen=True)
class Problem:
    """A definition with its workloads and the folder they came from."""

    definition: Definition
    workloads: list[Workload]
    folder: Path | None = None
    extra_files: dict[str, Path] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.definition.name

    def workload(self, uuid: str) -> Workload:
        for w in self.workloads:
            if w.uuid == uuid:
                return w
        raise ProblemNotFound(f"problem {self.name} has no workload {uuid!r}; known: {[w.uuid for w in self.workloads]}")


def describe_validation_error(exc: ValidationError, where: str) -> str:
    """Turn a pydantic error into 'file: field: problem' lines an agent can act on."""
    lines = []
    for err in exc.errors()[:8]:
        loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
        msg = err["msg"].removeprefix("Value error, ")
        hint = ""
        if err["type"] == "missing":
            hint = " (add this field)"
        elif err["type"] in ("literal_error", "enum"):
            expected = str(err.get("ctx", {}).get("expected", ""))
            if expected and expected not in msg:  # pydantic's own message usually lists them already
                hint = f" (allowed: {expected})"
        lines.append(f"{where}: {loc}: {msg}{hint}")
    more = len(exc.errors()) - 8
    if more > 0:
        lines.append(f"{where}: ... and {more} more errors")
    return "\n".join(lines)


def parse_model(model: type[M], data: object, where: str) -> M:
    """Validate ``data`` as ``model``; raise FormatError naming ``where``."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise FormatError(describe_validation_error(exc, where)) from exc


def read_json(path: Path) -> object:
    """The JSON in ``path``; FormatError naming the file, line and column when it is not valid UTF-8 JSON."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"{path}: not UTF-8 text (byte {exc.start}); save the file as UTF-8") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormatError(f"{path}: line {exc.lineno} column {exc.colno}: invalid JSON: {exc.msg}") from exc


def load_definition(path: Path) -> Definition:
    data = read_json(path)
    # SOL-ExecBench keeps the reference beside the definition as reference.py when it is not inline.
    ref = path.parent / "reference.py"
    if isinstance(data, dict) and not data.get("reference") and ref.is_file():
        data["reference"] = ref.read_text(encoding="utf-8")
    return parse_model(Definition, data, str(path))


def load_workloads(path: Path) -> list[Workload]:
    workloads: list[Workload] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise FormatError(f"{path}: not UTF-8 text; save the file as UTF-8") from exc
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise FormatError(f"{path}:{lineno}: invalid JSON: {exc.msg}") from exc
        # FlashInfer-Trace stores workloads as traces with solution/evaluation null.
        if isinstance(data, dict) and "workload" in data and "uuid" not in data:
            data = data["workload"]
        workloads.append(parse_model(Workload, data, f"{path}:{lineno}"))
    uuids = [w.uuid for w in workloads]
    dupes = sorted({u for u in uuids if uuids.count(u) > 1})
    if dupes:
        raise FormatError(f"{path}: workload uuids {dupes} repeat; give every line its own uuid")
    return workloads


def load_problem_folder(folder: Path) -> Problem:
    """Load ``definition.json`` + ``workload.jsonl`` from a SOL-ExecBench style folder."""
    definition_path = folder / "definition.json"
    if not definition_path.is_file():
        raise ProblemNotFound(f"{folder}: no definition.json; a problem folder holds definition.json and workload.jsonl")
    definition = load_definition(definition_path)
    workload_path = folder / "workload.jsonl"
    if not workload_path.is_file():
        raise FormatError(f"{folder}: no workload.jsonl; add one line per workload")
    workloads = load_workloads(workload_path)
    if not workloads:
        raise FormatError(f"{workload_path}: no workloads; add at least one line")
    for i, w in enumerate(workloads, 1):
        try:
            definition.resolve_axes(w.axes)
        except ValueError as exc:
            raise FormatError(f"{workload_path}:{i}: axes: {exc}") from exc
        unknown = set(w.inputs) - set(definition.inputs)
        if unknown:
            raise FormatError(f"{workload_path}:{i}: inputs names {sorted(unknown)}, which the definition does not have")
    return Problem(definition=definition, workloads=workloads, folder=folder)


def catalogue_names() -> list[str]:
    """Names of the bundled problems, sorted."""
    if not CATALOGUE_DIR.is_dir():
        return []
    return sorted(p.name for p in CATALOGUE_DIR.iterdir() if (p / "definition.json").is_file())


def iter_catalogue() -> Iterator[Problem]:
    for name in catalogue_names():
        yield load_problem_folder(CATALOGUE_DIR / name)


def env_problem_dirs() -> list[Path]:
    """The folders named by ``SOLFORGE_PROBLEM_DIRS``, in order (empty entries skipped)."""
    return config.problem_dirs()


def close_names(name: str, names: list[str], limit: int = 5) -> list[str]:
    """Up to ``limit`` of ``names`` that look like ``name``: spelling neighbours first, then substrings."""
    lowered = {n.lower(): n for n in names}
    close = [lowered[n] for n in difflib.get_close_matches(name.lower(), list(lowered), n=limit, cutoff=0.75)]
    for n in names:
        if len(close) >= limit:
            break
        if n not in close and (name.lower() in n.lower() or n.lower() in name.lower()):
            close.append(n)
    return close


def load_problem(name_or_path: str | Path) -> Problem:
    """A path to a problem folder, or a name: looked up in ``SOLFORGE_PROBLEM_DIRS``, then the catalogue."""
    path = Path(name_or_path)
    if path.is_dir():
        return load_problem_folder(path)
    name = str(name_or_path)
    roots = [*env_problem_dirs(), CATALOGUE_DIR]
    if name and "/" not in name and os.sep not in name:
        for root in roots:
            if (root / name / "definition.json").is_file():
                return load_problem_folder(root / name)
    known = sorted(
        {p.name for root in roots if root.is_dir() for p in root.iterdir() if (p / "definition.json").is_file()}
    )
    close = close_names(name, known)
    hint = f"; did you mean {close}?" if close else "; list them with `solforge problems list`"
    where = f"in {PROBLEM_DIRS_ENV}, " if env_problem_dirs() else ""
    raise ProblemNotFound(f"no problem {name!r} {where}in the catalogue or as a folder at that path{hint}")


def load_solution(path: Path) -> Solution:
    if not path.is_file():
        raise FormatError(f"{path}: no such solution file")
    return parse_model(Solution, read_json(path), str(path))


def parse_solution(data: str | dict, where: str = "solution") -> Solution:
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except json.JSONDecodeError as exc:
            raise FormatError(f"{where}: line {exc.lineno} column {exc.colno}: invalid JSON: {exc.msg}") from exc
    return parse_model(Solution, data, where)


def write_problem_folder(problem: Problem, folder: Path) -> None:
    """Write a problem in SOL-ExecBench layout (definition.json with the reference inline, workload.jsonl)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "definition.json").write_text(json.dumps(problem.definition.to_json_dict(), indent=2) + "\n")
    with (folder / "workload.jsonl").open("w") as f:
        for w in problem.workloads:
            f.write(json.dumps(w.to_json_dict(), separators=(", ", ": ")) + "\n")


def write_traces(traces: list[Trace], path: Path) -> None:
    with path.open("a") as f:
        for t in traces:
            f.write(t.model_dump_json() + "\n")
