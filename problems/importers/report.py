"""What an import reports: the source formats, each problem written, each one rejected and why."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ImportFormat", "ImportReport", "ImportedProblem", "RejectedProblem"]


class ImportFormat(StrEnum):
    """The source formats ``solforge problems import`` understands."""

    auto = "auto"
    """Guess from the source: a .py file or a folder of them is KernelBench, a folder with
    ``definitions/`` (or a definition inside one) is FlashInfer-Trace, otherwise SOL-ExecBench."""
    sol_execbench = "sol-execbench"
    flashinfer_trace = "flashinfer-trace"
    kernelbench = "kernelbench"


class ImportedProblem(BaseModel):
    """One problem written by an importer."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    name: str
    folder: Path
    """The problem folder written (definition.json + workload.jsonl)."""
    source: str
    """The file or folder it came from."""
    workloads: int
    notes: list[str] = Field(default_factory=list)
    """Things the user should know: defaults applied, data files that need FLASHINFER_TRACE_DIR."""


class RejectedProblem(BaseModel):
    """A source entry that was not imported, and why."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    source: str
    reason: str
    """What failed, in which file and field, and what to do about it."""


class ImportReport(BaseModel):
    """What an import did."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    format: ImportFormat
    out_dir: Path
    imported: list[ImportedProblem] = Field(default_factory=list)
    rejected: list[RejectedProblem] = Field(default_factory=list)

    def render(self) -> str:
        """A short plain-text account for the terminal."""
        lines = [
            f"{len(self.imported)} imported, {len(self.rejected)} rejected ({self.format.value}) "
            f"-> {self.out_dir}"
        ]
        for p in self.imported:
            lines.append(f"  imported {p.name} ({p.workloads} workloads) from {p.source}")
            lines.extend(f"    note: {n}" for n in p.notes)
        for r in self.rejected:
            # Most reasons already start with the file they are about.
            lines.append(
                f"  rejected {r.reason}"
                if r.reason.startswith(r.source)
                else f"  rejected {r.source}: {r.reason}"
            )
        return "\n".join(lines)
