"""What the importers share: the staged problem, validation and the atomic write of its folder."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import FormatError, ProblemNotFound
from ..load import Problem, load_problem_folder
from ..workload import SafetensorsInput
from .report import ImportedProblem, ImportReport, RejectedProblem

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,199}$")
"""Problem names the server accepts (tools/catalogue.py uses the same rule)."""

Overrides = Callable[[dict[str, Any]], None]


@dataclass
class Staged:
    """One problem as an importer produced it, before it is validated and written."""

    definition: dict[str, Any]
    """definition.json as a JSON object (unknown keys are kept)."""
    workloads: list[dict[str, Any]]
    """workload.jsonl, one JSON object per line."""
    source: str
    """The file or folder the problem came from (named in every error)."""
    files: dict[str, Path] = field(default_factory=dict)
    """Extra files to copy into the folder: relative destination path -> source file."""
    notes: list[str] = field(default_factory=list)
    definition_where: str | None = None
    """The file errors about the definition should name (default: ``<source>/definition.json``)."""
    workloads_where: str | None = None
    """The file errors about the workloads should name (default: ``<source>/workload.jsonl``)."""


def slug(text: str) -> str:
    """A problem-name-safe version of ``text``: lowercase, runs of other characters become '_'."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "problem"


def apply_overrides(definition: dict[str, Any], *, hf_id: str | None, category: str | None) -> None:
    """Fill ``hf_id`` and ``category`` where the definition has none."""
    if hf_id and not definition.get("hf_id"):
        definition["hf_id"] = hf_id
    if category and not definition.get("category"):
        definition["category"] = category


def check_reference_compiles(problem: Problem, where: str) -> None:
    """Compile (never execute) the reference, so a syntax error is caught at import.

    Raises
    ------
    FormatError
        Naming the line of the syntax error.
    """
    try:
        compile(problem.definition.reference, f"<reference of {problem.name}>", "exec")
    except SyntaxError as exc:
        raise FormatError(
            f"{where}: reference: line {exc.lineno}: syntax error: {exc.msg}; fix the reference source"
        ) from exc


def missing_safetensors(problem: Problem) -> list[str]:
    """Relative safetensors paths of the workloads that are not inside the problem folder."""
    assert problem.folder is not None
    missing: set[str] = set()
    for w in problem.workloads:
        for d in w.inputs.values():
            if isinstance(d, SafetensorsInput):
                path = Path(d.path)
                if not (path if path.is_absolute() else problem.folder / path).is_file():
                    missing.add(d.path)
    return sorted(missing)


def write_staged(staged: Staged, out_dir: Path, *, overwrite: bool) -> tuple[Path, Problem]:
    """Validate ``staged`` in a scratch folder under ``out_dir``, then move it into place.

    Returns
    -------
    tuple[Path, Problem]
        The final folder and the problem loaded from it.

    Raises
    ------
    FormatError
        When the name is not usable, the folder exists (without ``overwrite``), or the files do not
        validate; the message names the file and field.
    """
    name = staged.definition.get("name")
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise FormatError(
            f"{staged.source}: name: {name!r} is not a usable problem name (letters, digits and '._+-', "
            "at most 200); pass --name to choose one"
        )
    final = out_dir / name
    if final.exists() and not overwrite:
        raise FormatError(
            f"{final} already exists; pass --overwrite to replace it, or --out to import elsewhere"
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".import-{name}-", dir=out_dir))
    try:
        (scratch / "definition.json").write_text(
            json.dumps(staged.definition, indent=2) + "\n", encoding="utf-8"
        )
        with (scratch / "workload.jsonl").open("w", encoding="utf-8") as f:
            for w in staged.workloads:
                f.write(json.dumps(w, separators=(", ", ": ")) + "\n")
        for rel, src in staged.files.items():
            dest = scratch / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest)
        try:
            problem = load_problem_folder(scratch)
        except (FormatError, ProblemNotFound) as exc:
            message = str(exc)
            for written, original in (
                ("definition.json", staged.definition_where),
                ("workload.jsonl", staged.workloads_where),
            ):
                if original:
                    message = message.replace(str(scratch / written), original)
            raise FormatError(message.replace(str(scratch), staged.source)) from exc
        check_reference_compiles(problem, staged.source)
        if final.exists():
            shutil.rmtree(final)
        scratch.rename(final)
    finally:
        if scratch.exists():
            shutil.rmtree(scratch, ignore_errors=True)
    return final, load_problem_folder(final)


class Importer(ABC):
    """Finds the problems in a source and stages each; :meth:`run` writes them and fills the report."""

    @abstractmethod
    def discover(self, source: Path) -> list[Path]:
        """The entries of ``source`` that each become one problem.

        Raises
        ------
        FormatError
            When the source holds none.
        """

    @abstractmethod
    def stage(self, entry: Path) -> Staged:
        """Convert one entry.

        Raises
        ------
        FormatError
            Naming the file, the field and the fix.
        """

    def run(
        self,
        source: Path,
        out_dir: Path,
        report: ImportReport,
        *,
        name: str | None,
        overwrite: bool,
        overrides: Overrides,
    ) -> None:
        entries = self.discover(source)
        if name is not None and len(entries) != 1:
            raise FormatError(f"--name renames one problem, but {source} holds {len(entries)}; drop --name")
        for entry in entries:
            try:
                staged = self.stage(entry)
                if name is not None:
                    staged.definition["name"] = name
                overrides(staged.definition)
                folder, problem = write_staged(staged, out_dir, overwrite=overwrite)
            except FormatError as exc:
                report.rejected.append(RejectedProblem(source=str(entry), reason=str(exc)))
                continue
            notes = list(staged.notes)
            missing = missing_safetensors(problem)
            if missing:
                notes.append(
                    f"{len(missing)} safetensors files are not in the folder (e.g. {missing[0]}); "
                    "they are looked "
                    "up under $FLASHINFER_TRACE_DIR when the problem runs"
                )
            report.imported.append(
                ImportedProblem(
                    name=problem.name,
                    folder=folder,
                    source=str(entry),
                    workloads=len(problem.workloads),
                    notes=notes,
                )
            )
