"""How close the catalogue's baselines already are to the speed of light, on one GPU model.

The shipped baseline table of a GPU (``problems/baselines/<gpu>.jsonl``) holds T_b, the faster of the eager
reference and torch.compile, for every workload measured on it. Against the workload's T_SOL on the same GPU's
datasheet peaks, ``T_SOL / T_b`` says how much room a kernel has: 1.0 is a baseline at the speed of light, 0.01
one a hundred times slower. (The SOL score of a kernel that only matches the baseline is 0.5 by definition, so
this fraction, not the score, is the baseline's own distance from SOL.)

:func:`catalogue_sol` gathers it per workload; :func:`group` summarises any slice of it (by category, by bound).
``solforge problems summary`` and ``solforge report`` show both. Counting runs the reference on meta tensors
(torch), cached on disk and shipped for the catalogue, as everywhere else.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

__all__ = ["CatalogueSol", "SolGroup", "WorkloadSol", "catalogue_sol", "group", "log2_edges"]


class WorkloadSol(BaseModel):
    """One workload's shipped baseline against its speed of light."""

    model_config = ConfigDict(extra="forbid")

    problem: str
    category: str
    workload: str
    bound: str
    """memory or compute, on the GPU's datasheet peaks."""
    t_sol_ms: float
    baseline_ms: float
    eager_ms: float | None
    compiled_ms: float | None
    fraction: float
    """T_SOL / T_b."""
    compiled_fraction: float | None
    """T_SOL / the compiled reference's time: how close torch.compile alone comes."""
    launch_bound: bool
    """T_b under 5 us: launches and the harness's per-call cost are much of it."""


class SolGroup(BaseModel):
    """The fractions of one slice of the workloads."""

    model_config = ConfigDict(extra="forbid")

    name: str
    workloads: int
    problems: int
    median: float
    p25: float
    p75: float
    low: float
    high: float
    launch_bound: int
    compiled_median: float | None
    """The median of T_SOL / compiled over the workloads where torch.compile was timed."""


class CatalogueSol(BaseModel):
    """Every workload of a GPU's shipped table that can be placed against its speed of light."""

    model_config = ConfigDict(extra="forbid")

    gpu: str
    """The GPU model the table was measured on, as its records name it."""
    peaks: str
    """Which peaks gave T_SOL (the datasheet entry)."""
    table: str
    """The table's file name."""
    workloads: list[WorkloadSol]
    skipped: dict[str, str]
    """Problems of the table left out, with why (no longer in the catalogue, changed since measured, not countable)."""

    @property
    def problems(self) -> int:
        return len({w.problem for w in self.workloads})

    def by(self, field: str) -> list[SolGroup]:
        """One group per value of ``field`` (``category`` or ``bound``), largest first."""
        keys: dict[str, list[WorkloadSol]] = {}
        for w in self.workloads:
            keys.setdefault(str(getattr(w, field)), []).append(w)
        groups = [group(name, items) for name, items in keys.items()]
        return sorted(groups, key=lambda g: (-g.workloads, g.name))

    def overall(self) -> SolGroup | None:
        return group("all", self.workloads) if self.workloads else None


def group(name: str, items: Sequence[WorkloadSol]) -> SolGroup:
    """The median, quartiles and range of ``items``' fractions (``items`` must not be empty)."""
    values = sorted(w.fraction for w in items)
    compiled = [w.compiled_fraction for w in items if w.compiled_fraction is not None]
    # "inclusive" is numpy's default (linear) quantile, as the report's other figures use.
    p25, median, p75 = statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else values * 3
    return SolGroup(
        name=name, workloads=len(values), problems=len({w.problem for w in items}),
        median=median, p25=p25, p75=p75,
        low=values[0], high=values[-1], launch_bound=sum(w.launch_bound for w in items),
        compiled_median=statistics.median(compiled) if compiled else None,
    )


def log2_edges(values: Sequence[float], *, per_octave: int = 1) -> list[float]:
    """Bin edges at powers of two (``per_octave`` bins each) from below the smallest value up to 1."""
    low = min(min(values), 1.0)
    start = math.floor(math.log2(low) * per_octave) if low > 0 else -10 * per_octave
    return [2.0 ** (k / per_octave) for k in range(start, 1)]


def catalogue_sol(gpu: str, *, problem_names: Iterable[str] | None = None, tables_dir: Path | None = None,
                  cache_dir: Path | None = None) -> CatalogueSol | None:
    """The shipped baselines of ``gpu``'s model against T_SOL on its datasheet peaks.

    Parameters
    ----------
    gpu
        A GPU name or datasheet key (``H200``, ``NVIDIA H200``).
    problem_names
        Only these problems (default: every problem the table holds).
    tables_dir
        Where the tables are (default: the catalogue's shipped tables).
    cache_dir
        The counts cache (:func:`solforge.sandbox.sol.counting.counts_for_problem`).

    Returns
    -------
    CatalogueSol | None
        None when the GPU has no datasheet entry or no table ships for it.
    """
    import solforge.problems as problems_package
    from solforge.problems import load_problem
    from solforge.problems.errors import SolforgeError

    from ..baseline import (
        definition_digest,
        is_launch_bound,
        shipped_gpus,
        shipped_problem_names,
        shipped_records,
        table_name,
    )
    from .counting import CountingError, counts_for_problem
    from .hardware import datasheet_peaks, match_spec
    from .score import sol_time

    spec = match_spec(gpu)
    if spec is None:
        return None
    folder = tables_dir if tables_dir is not None else problems_package.tables_dir()
    # A table is named after the GPU as torch reports it (NVIDIA H200), the datasheet after the product.
    hardware = next((h for h in shipped_gpus(folder) if (m := match_spec(h)) is not None and m.key == spec.key), None)
    if hardware is None:
        return None
    shipped = shipped_problem_names(hardware, folder)
    names = sorted(set(problem_names) & set(shipped) if problem_names is not None else shipped)
    peaks = datasheet_peaks(spec)
    rows: list[WorkloadSol] = []
    skipped: dict[str, str] = {}
    for name in names:
        records = {r.workload: r for r in shipped_records(name, hardware, folder)}  # the table's latest record wins
        try:
            problem = load_problem(name)
        except SolforgeError as exc:
            skipped[name] = f"not in the catalogue: {exc}"
            continue
        digest = definition_digest(problem.definition)
        current = {uuid: r for uuid, r in records.items() if r.key.startswith(digest + "|")}
        if not current:
            skipped[name] = "its definition changed since the table was measured"
            continue
        try:
            counts = counts_for_problem(problem, cache_dir=cache_dir)
        except (CountingError, ValueError) as exc:
            skipped[name] = f"cannot count FLOPs and bytes: {exc}"
            continue
        category = str(problem.definition.category or "-")
        for uuid, record in current.items():
            if uuid not in counts or record.baseline_ms <= 0:
                continue
            estimate = sol_time(counts[uuid], peaks)
            rows.append(WorkloadSol(
                problem=name, category=category, workload=uuid, bound=estimate.bound, t_sol_ms=estimate.t_sol_ms,
                baseline_ms=record.baseline_ms, eager_ms=record.eager_ms, compiled_ms=record.compiled_ms,
                fraction=estimate.t_sol_ms / record.baseline_ms,
                compiled_fraction=estimate.t_sol_ms / record.compiled_ms if record.compiled_ms else None,
                launch_bound=is_launch_bound(record.baseline_ms),
            ))
    return CatalogueSol(gpu=hardware, peaks=peaks.source, table=table_name(hardware), workloads=rows, skipped=skipped)
