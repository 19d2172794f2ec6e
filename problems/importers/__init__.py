"""Importers that turn other benchmarks' problem sets into solforge problem folders, and the exporter.

``solforge problems import SOURCE`` reads one of three formats and writes one folder per problem
(SOL-ExecBench layout: ``definition.json`` + ``workload.jsonl``, plus any data files):

- :mod:`.sol_execbench`: a SOL-ExecBench problem folder, or a dataset folder holding many
  (``data/benchmark/<subset>/<NNN_name>/``); validated and copied, names kept.
- :mod:`.flashinfer_trace`: a FlashInfer-Bench trace set (``definitions/**/*.json``,
  ``workloads/**/*.jsonl``, ``blob/`` safetensors) or one definition file from it.
- :mod:`.kernelbench`: KernelBench problem files (``class Model``, ``get_inputs``,
  ``get_init_inputs``); the file is user code and is only ever executed in a child process.

:mod:`.export` writes any solforge problem back in SOL-ExecBench format.

Every importer returns an :class:`ImportReport`: what was written where, and what was rejected
with a reason that names the file, the field and the fix. One bad problem never stops the others.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import FormatError
from .report import ImportedProblem, ImportFormat, ImportReport, RejectedProblem


def detect_format(source: Path) -> ImportFormat:
    """The format of ``source`` (see :attr:`ImportFormat.auto`).

    Raises
    ------
    FormatError
        When the source does not exist or matches none of the formats.
    """
    if not source.exists():
        raise FormatError(
            f"{source}: no such file or folder; give a problem folder, a trace set or a .py file"
        )
    if source.is_file():
        if source.suffix == ".py":
            return ImportFormat.kernelbench
        if source.suffix == ".json":
            if source.name == "definition.json":
                return ImportFormat.sol_execbench
            return ImportFormat.flashinfer_trace
        raise FormatError(
            f"{source}: cannot tell the format of a {source.suffix or 'suffix-less'} file; "
            "import a KernelBench "
            ".py file, a FlashInfer-Trace definition .json, or a folder (pass --format to say which)"
        )
    if (source / "definitions").is_dir():
        return ImportFormat.flashinfer_trace
    if (source / "definition.json").is_file() or any(source.rglob("definition.json")):
        return ImportFormat.sol_execbench
    if any(source.glob("*.py")):
        return ImportFormat.kernelbench
    raise FormatError(
        f"{source}: holds no definition.json, no definitions/ folder and no .py files; "
        "point at a SOL-ExecBench problem folder, a FlashInfer-Bench trace set or KernelBench files"
    )


def import_problems(
    source: Path,
    out_dir: Path,
    *,
    fmt: ImportFormat = ImportFormat.auto,
    name: str | None = None,
    overwrite: bool = False,
    hf_id: str | None = None,
    category: str | None = None,
    var_axes: dict[str, list[int] | None] | None = None,
    timeout_s: float = 300.0,
) -> ImportReport:
    """Import every problem found at ``source`` into ``out_dir`` (one folder per problem).

    Parameters
    ----------
    source
        A file or folder in one of the :class:`ImportFormat` formats.
    out_dir
        Where the problem folders go; created if missing.
    fmt
        The source format; ``auto`` detects it.
    name
        New name for the problem (only when the source holds exactly one).
    overwrite
        Replace an existing folder of the same name instead of rejecting the problem.
    hf_id, category
        Set on every imported definition that has none (for listing and summaries).
    var_axes
        KernelBench only: constants to turn into var axes, each with the sizes to sweep
        (None: powers of two up to the file's value); ``{"auto": None}`` picks every batch-like constant.
    timeout_s
        KernelBench only: how long the child process that inspects one file may run.

    Raises
    ------
    FormatError
        When the source cannot be read at all (each bad problem inside it is reported, not raised).
    """
    from .common import Importer, apply_overrides

    source = Path(source)
    resolved = detect_format(source) if fmt is ImportFormat.auto else ImportFormat(fmt)
    importer: Importer
    if resolved is ImportFormat.sol_execbench:
        from .sol_execbench import SolExecBenchImporter

        importer = SolExecBenchImporter()
    elif resolved is ImportFormat.flashinfer_trace:
        from .flashinfer_trace import FlashInferTraceImporter

        importer = FlashInferTraceImporter()
    else:
        from .kernelbench import KernelBenchImporter

        importer = KernelBenchImporter(var_axes=var_axes or {}, timeout_s=timeout_s)
    report = ImportReport(format=resolved, out_dir=Path(out_dir))
    importer.run(
        source,
        Path(out_dir),
        report,
        name=name,
        overwrite=overwrite,
        overrides=lambda d: apply_overrides(d, hf_id=hf_id, category=category),
    )
    return report


def export_problem(problem_name_or_path: str | Path, out_dir: Path) -> Path:
    """Write a solforge problem in SOL-ExecBench format; see :func:`.export.export_problem`."""
    from .export import export_problem as _export

    return _export(problem_name_or_path, out_dir)


__all__ = [
    "ImportFormat",
    "ImportReport",
    "ImportedProblem",
    "RejectedProblem",
    "detect_format",
    "export_problem",
    "import_problems",
]
