"""``solforge problems list|show|summary|import|export``: the catalogue from the command line.

``list`` and ``summary`` take the same filters (category, model, op type, dtype, bound, text). The
bound of a workload (memory or compute) is its speed-of-light bound on a GPU's datasheet peaks
(H200 unless ``--gpu``), from the FLOPs and bytes :mod:`solforge.sandbox.sol.counting` derives from the
reference, as get_sol_score computes it; a problem whose workloads disagree is ``mixed``. Counting
traces each reference on meta tensors and is cached on disk, so only the first run is slow; it is
done only when a bound is asked for.

``summary`` also places the GPU's shipped baseline table against the speed of light: T_SOL / T_b per workload,
by bound and by category, with a histogram (:mod:`solforge.sandbox.sol.catalogue`, printed by
:mod:`solforge.server.cli_catalogue_sol`); ``--no-bound`` skips it with the counting.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from solforge.problems import Problem
    from solforge.sandbox.sol.catalogue import CatalogueSol

DEFAULT_GPU = "H200"
"""Whose datasheet peaks decide the bound in listings (the GPU the catalogue's tables are for)."""
DEFAULT_IMPORT_DIR = "solforge-problems"
"""Where ``import`` writes without --out and without SOLFORGE_PROBLEM_DIRS."""
BOUNDS = ("memory", "compute", "mixed")


@dataclass
class Row:
    """One problem as the listing shows it."""

    problem: Problem
    dtypes: list[str]
    bound: str | None = None
    workload_bounds: Counter[str] = field(default_factory=Counter)

    def summary_json(self) -> dict[str, Any]:
        d = self.problem.definition
        out: dict[str, Any] = {
            "name": d.name,
            "category": d.category,
            "op_type": d.op_type,
            "hf_id": d.hf_id,
            "workloads": len(self.problem.workloads),
            "dtypes": self.dtypes,
        }
        if self.bound is not None:
            out["bound"] = self.bound
        return out


def _dtypes(problem: Problem) -> list[str]:
    d = problem.definition
    return sorted({s.dtype.value for s in [*d.inputs.values(), *d.outputs.values()] if s.shape is not None})


def _load_rows(dirs: list[str]) -> list[Row]:
    """Problems in ``dirs`` (--dir), then in SOLFORGE_PROBLEM_DIRS, then the catalogue; the first of a name wins."""
    from solforge.problems import iter_catalogue, load_problem_folder
    from solforge.problems.load import env_problem_dirs

    problems: dict[str, Problem] = {}
    roots = [Path(d) for d in dirs] + [d for d in env_problem_dirs() if d.is_dir()]
    for root in roots:
        for folder in sorted(root.iterdir()):
            if (folder / "definition.json").is_file():
                p = load_problem_folder(folder)
                problems.setdefault(p.name, p)
    for p in iter_catalogue():
        problems.setdefault(p.name, p)
    return [Row(problem=p, dtypes=_dtypes(p)) for p in sorted(problems.values(), key=lambda p: p.name)]


def _add_bounds(rows: list[Row], gpu: str) -> None:
    """Fill each row's bound from the counted FLOPs and bytes on ``gpu``'s datasheet peaks."""
    from solforge.problems.config import cache_dir
    from solforge.sandbox.sol.counting import CountingError, counts_for_problem
    from solforge.sandbox.sol.hardware import datasheet_peaks, match_spec
    from solforge.sandbox.sol.score import sol_time

    spec = match_spec(gpu)
    if spec is None:
        from solforge.sandbox.sol.hardware import GPU_SPECS

        raise ValueError(f"no datasheet for GPU {gpu!r}; use one of {sorted(GPU_SPECS)}")
    peaks = datasheet_peaks(spec)
    cache = cache_dir()
    for row in rows:
        try:
            counts = counts_for_problem(row.problem, cache_dir=cache)
        except (CountingError, ValueError) as exc:
            print(f"warning: {row.problem.name}: cannot count FLOPs: {exc}", file=sys.stderr)
            row.bound = "unknown"
            continue
        row.workload_bounds = Counter(sol_time(c, peaks).bound for c in counts.values())
        row.bound = next(iter(row.workload_bounds)) if len(row.workload_bounds) == 1 else "mixed"


def _filter(rows: list[Row], args: argparse.Namespace) -> list[Row]:
    def keep(row: Row) -> bool:
        d = row.problem.definition
        if args.category and d.category != args.category:
            return False
        if args.model and args.model.lower() not in (d.hf_id or "").lower():
            return False
        # A substring, as list_problems matches it: "norm" finds rmsnorm and layernorm.
        if args.op_type and args.op_type.lower() not in (d.op_type or "").lower():
            return False
        if args.dtype and args.dtype not in row.dtypes:
            return False
        if args.text:
            haystack = " ".join(
                [d.name, d.description or "", d.hf_id or "", d.op_type or "", *d.tags]
            ).lower()
            if args.text.lower() not in haystack:
                return False
        return True

    kept = [r for r in rows if keep(r)]
    if args.bound:
        _add_bounds(kept, args.gpu)
        kept = [r for r in kept if r.bound == args.bound]
    return kept


def summarise(rows: list[Row]) -> dict[str, Any]:
    """Counts by category, model, op type, dtype and bound (problems, and workloads for the bound)."""

    def counts(values: list[str]) -> dict[str, int]:
        return dict(sorted(Counter(values).items(), key=lambda kv: (-kv[1], kv[0])))

    defs = [r.problem.definition for r in rows]
    workloads = [len(r.problem.workloads) for r in rows]
    out: dict[str, Any] = {
        "problems": len(rows),
        "models": len({d.hf_id for d in defs if d.hf_id}),
        "categories": len({d.category for d in defs if d.category}),
        "workloads": sum(workloads),
        "min_workloads": min(workloads, default=0),
        "by_category": counts([str(d.category or "-") for d in defs]),
        "by_model": counts([d.hf_id or "-" for d in defs]),
        "by_op_type": counts([d.op_type or "-" for d in defs]),
        "by_dtype": counts([t for r in rows for t in r.dtypes]),
    }
    if any(r.bound is not None for r in rows):
        out["by_bound"] = counts([r.bound or "-" for r in rows])
        total: Counter[str] = Counter()
        for r in rows:
            total.update(r.workload_bounds)
        out["workloads_by_bound"] = dict(total)
    return out


def _print_summary(summary: dict[str, Any], gpu: str | None) -> None:
    print(
        f"{summary['problems']} problems from {summary['models']} models "
        f"in {summary['categories']} categories; "
        f"{summary['workloads']} workloads (at least {summary['min_workloads']} per problem)"
    )
    for key, title in (
        ("by_category", "category"),
        ("by_op_type", "op type"),
        ("by_dtype", "dtype (problems using it)"),
        ("by_bound", f"bound on {gpu} (problems)"),
        ("workloads_by_bound", f"bound on {gpu} (workloads)"),
        ("by_model", "model"),
    ):
        if key in summary:
            items = ", ".join(f"{k} {v}" for k, v in summary[key].items())
            print(f"{title}: {items}")


def _baseline_sol(rows: list[Row], gpu: str) -> CatalogueSol | None:
    """The listed problems' shipped baselines on ``gpu`` against the speed of light (None: no table ships)."""
    from solforge.problems.config import cache_dir
    from solforge.sandbox.sol.catalogue import catalogue_sol

    return catalogue_sol(gpu, problem_names=[r.problem.name for r in rows], cache_dir=cache_dir())


def _list(args: argparse.Namespace) -> int:
    from rich import box
    from rich.console import Console
    from rich.table import Table

    rows = _filter(_load_rows(args.dir or []), args)
    if args.summary:
        if not args.no_bound and not args.bound:
            _add_bounds(rows, args.gpu)
        summary = summarise(rows)
        baselines = None if args.no_bound else _baseline_sol(rows, args.gpu)
        if baselines is not None:
            from .cli_catalogue_sol import baseline_sol_json

            summary["baseline_sol"] = baseline_sol_json(baselines)
        if args.json:
            print(json.dumps(summary, indent=2))
        else:
            _print_summary(summary, args.gpu)
            if baselines is not None:
                from .cli_catalogue_sol import print_baseline_sol

                print_baseline_sol(baselines)
        return 0
    if args.json:
        for r in rows:
            print(json.dumps(r.summary_json()))
        return 0
    table = Table(title=f"{len(rows)} problems", box=box.SIMPLE_HEAD, pad_edge=False)
    # Names and op types are copied into other commands: never cut them; only the model column folds.
    for col, values in (
        ("name", [r.problem.name for r in rows]),
        ("category", [str(r.problem.definition.category or "-") for r in rows]),
        ("op_type", [r.problem.definition.op_type or "-" for r in rows]),
    ):
        table.add_column(col, no_wrap=True, min_width=max(map(len, [col, *values])))
    table.add_column("model", overflow="fold", min_width=12)
    table.add_column("workloads", no_wrap=True, justify="right", min_width=len("workloads"))
    if args.bound:
        table.add_column("bound", no_wrap=True, min_width=len("compute"))
    for r in rows:
        d = r.problem.definition
        cells = [
            d.name,
            str(d.category or "-"),
            d.op_type or "-",
            d.hf_id or "-",
            str(len(r.problem.workloads)),
        ]
        if args.bound:
            cells.append(r.bound or "-")
        table.add_row(*cells)
    Console().print(table)
    return 0


def _show(args: argparse.Namespace) -> int:
    from rich.console import Console

    from solforge.problems import SolforgeError, load_problem
    from solforge.sandbox.baseline import is_launch_bound, shipped_by_gpu

    try:
        problem = load_problem(args.name)
    except SolforgeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    shipped = {gpu: {r.workload: r.baseline_ms for r in records} for gpu, records in shipped_by_gpu(problem.name).items()}
    if args.json:
        print(
            json.dumps(
                {
                    "definition": problem.definition.to_json_dict(),
                    "workloads": [w.to_json_dict() for w in problem.workloads],
                    "shipped_baselines": {
                        gpu: {uuid: {"baseline_ms": ms, "launch_bound": is_launch_bound(ms)} for uuid, ms in times.items()}
                        for gpu, times in shipped.items()
                    },
                },
                indent=2,
            )
        )
        return 0
    d = problem.definition
    # Descriptions and code hold [brackets] (shapes, indexing): no markup, no highlighting, no wrapping.
    console = Console(soft_wrap=True, markup=False, highlight=False)
    console.print(f"{d.name} ({d.category}, {d.op_type}) from {d.hf_id}", style="bold")
    console.print(d.description or "")
    console.print(f"axes: {json.dumps({k: v.to_json_dict() for k, v in d.axes.items()})}")
    gpus = sorted(shipped)
    console.print(f"{len(problem.workloads)} workloads" + (f" (T_b shipped for {', '.join(gpus)})" if gpus else "") + ":")
    for w in problem.workloads:
        times = [(gpu, shipped[gpu][w.uuid]) for gpu in gpus if w.uuid in shipped[gpu]]
        line = f"  {w.uuid} {json.dumps(w.axes)}"
        line += "".join(f"  T_b {ms * 1e3:.1f} us" + (" launch-bound" if is_launch_bound(ms) else "") for _, ms in times)
        console.print(line)
    if any(is_launch_bound(ms) for times in shipped.values() for ms in times.values()):
        console.print("launch-bound: a baseline under 5 us, where launches and per-call overhead are much of the time")
    console.print(f"reference:\n{d.reference}")
    return 0


def _parse_var(values: list[str] | None) -> dict[str, list[int] | None]:
    out: dict[str, list[int] | None] = {}
    for item in values or []:
        name, _, sizes = item.partition("=")
        try:
            out[name.strip()] = [int(s) for s in sizes.split(",") if s.strip()] if sizes else None
        except ValueError:
            raise ValueError(f"--var {item}: sizes must be integers, e.g. --var batch_size=1,8,64") from None
    return out


def _default_out() -> Path:
    from solforge.problems.load import env_problem_dirs

    env = env_problem_dirs()
    return env[0] if env else Path(DEFAULT_IMPORT_DIR)


def _import(args: argparse.Namespace) -> int:
    from solforge.problems import SolforgeError
    from solforge.problems.importers import ImportFormat, import_problems

    out = Path(args.out) if args.out else _default_out()
    try:
        report = import_problems(
            Path(args.source),
            out,
            fmt=ImportFormat(args.format),
            name=args.name,
            overwrite=args.overwrite,
            hf_id=args.hf_id,
            category=args.category,
            var_axes=_parse_var(args.var),
            timeout_s=args.timeout,
        )
    except (SolforgeError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(report.model_dump_json(indent=2))
    else:
        print(report.render())
        if report.imported:
            example = report.imported[0].folder
            print(
                f"next: solforge problems show {example}; solforge eval {example} --solution FILE; "
                f"serve them with SOLFORGE_PROBLEM_DIRS={out.resolve()}"
            )
    return 0 if not report.rejected else 1


def _export(args: argparse.Namespace) -> int:
    from solforge.problems import SolforgeError
    from solforge.problems.importers import export_problem

    try:
        folder = export_problem(args.name, Path(args.out))
    except SolforgeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {folder} (SOL-ExecBench layout: definition.json, reference.py, workload.jsonl)")
    return 0


def _enum_value(enum_name: str) -> Any:
    """An argparse ``type`` checking a value against an enum of solforge.problems when it is given.

    Importing solforge.problems (pydantic models) takes a quarter of a second: building the parser
    must not, since every command builds it, ``solforge serve`` included.
    """

    def convert(value: str) -> str:
        import solforge.problems

        enum = getattr(solforge.problems, enum_name)
        try:
            return enum(value).value
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value!r} is not one of {', '.join(e.value for e in enum)}") from None

    convert.__name__ = enum_name.lower()
    return convert


def _add_filters(q: argparse.ArgumentParser) -> None:
    q.add_argument("--category", type=_enum_value("Category"), help="llm, diffusion, vision, audio, video, multimodal")
    q.add_argument(
        "--model", "--hf-id", dest="model", metavar="HF_ID", help="source model (substring of hf_id)"
    )
    q.add_argument("--op-type", help="operation family, e.g. gemm, rmsnorm, attention")
    q.add_argument("--dtype", type=_enum_value("DType"), help="problems with an input or output of this dtype")
    q.add_argument(
        "--bound", choices=BOUNDS, help="speed-of-light bound on --gpu (counts FLOPs; slow the first time)"
    )
    q.add_argument(
        "--gpu", default=DEFAULT_GPU, help="datasheet peaks for --bound and the summary (default H200)"
    )
    q.add_argument("--text", help="substring of the name, description, model, op type or tags")
    q.add_argument(
        "--dir", action="append", metavar="DIR", help="also list the problem folders in DIR (repeatable)"
    )
    q.add_argument("--json", action="store_true")


def register(sub: Any) -> None:
    """Add ``problems`` and its subcommands to the top-level subparsers ``sub``."""
    p = sub.add_parser("problems", help="the problem catalogue: list, show, summary, import, export")
    psub = p.add_subparsers(dest="problems_cmd", required=True)

    q = psub.add_parser("list", help="problems, filtered")
    _add_filters(q)
    q.add_argument(
        "--summary", action="store_true", help="counts instead of the list (as `problems summary`)"
    )
    q.add_argument(
        "--no-bound", action="store_true", help="summary without the bound counts (no FLOP counting)"
    )
    q.set_defaults(func=_list)

    q = psub.add_parser(
        "summary", help="counts by category, model, op type, dtype and bound; the shipped baselines against SOL"
    )
    _add_filters(q)
    q.add_argument("--no-bound", action="store_true", help="skip the bound counts (no FLOP counting)")
    q.set_defaults(func=_list, summary=True)

    q = psub.add_parser("show", help="one problem: definition, axes, reference")
    q.add_argument("name", help="catalogue name or problem folder")
    q.add_argument("--json", action="store_true")
    q.set_defaults(func=_show)

    q = psub.add_parser(
        "import",
        help="import SOL-ExecBench folders, FlashInfer-Trace definitions or KernelBench files",
        description="Write one solforge problem folder per problem found at SOURCE. KernelBench files are "
        "user code: they run only in a child process (python -I) under --timeout.",
    )
    q.add_argument(
        "source", help="a problem folder, a dataset folder, a trace set, a definition .json or a .py file"
    )
    q.add_argument(
        "--format", choices=["auto", "sol-execbench", "flashinfer-trace", "kernelbench"], default="auto"
    )
    q.add_argument(
        "--out", help=f"output folder (default: first of SOLFORGE_PROBLEM_DIRS, else ./{DEFAULT_IMPORT_DIR})"
    )
    q.add_argument("--name", help="new name for the problem (a source with exactly one problem)")
    q.add_argument(
        "--overwrite", action="store_true", help="replace existing problem folders of the same name"
    )
    q.add_argument("--hf-id", help="set hf_id (source model) where the source has none")
    q.add_argument("--category", type=_enum_value("Category"), help="set category where the source has none")
    q.add_argument(
        "--var",
        action="append",
        metavar="NAME[=SIZES]",
        help="KernelBench: make a batch-like constant a var axis (sizes like 1,8,64; "
        "default powers of two up to "
        "the file's value); 'auto' takes every batch-like constant",
    )
    q.add_argument(
        "--timeout", type=float, default=300.0, help="KernelBench: seconds per file for the CPU run"
    )
    q.add_argument("--json", action="store_true", help="print the import report as JSON")
    q.set_defaults(func=_import)

    q = psub.add_parser("export", help="write a problem in SOL-ExecBench format")
    q.add_argument("name", help="catalogue name or problem folder")
    q.add_argument("--out", required=True, help="folder to write <name>/ into")
    q.set_defaults(func=_export)
