"""The report's catalogue section: how close the shipped baselines already are to the speed of light.

Drawn from a :class:`~solforge.sandbox.sol.catalogue.CatalogueSol` (the shipped table of one GPU model against
T_SOL on its datasheet peaks), not from the ledger: it says where the catalogue leaves room before any agent runs.
"""

from __future__ import annotations

from solforge.sandbox.sol.catalogue import CatalogueSol, SolGroup, log2_edges

from . import svg
from .svg import Spread, esc

__all__ = ["catalogue_section"]


def _spread(g: SolGroup) -> Spread:
    note = f"{g.workloads} workloads of {g.problems} problems, {g.launch_bound} launch-bound"
    return Spread(g.name, g.low, g.p25, g.median, g.p75, g.high, note=note)


def _fraction(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _group_table(title: str, groups: list[SolGroup]) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in (title, "problems", "workloads", "median T_SOL/T_b",
                                                    "quartiles", "range", "median T_SOL/compiled", "launch-bound"))
    rows = "".join(
        f"<tr><td>{esc(g.name)}</td><td>{g.problems}</td><td>{g.workloads}</td><td>{_fraction(g.median)}</td>"
        f"<td>{_fraction(g.p25)} – {_fraction(g.p75)}</td><td>{_fraction(g.low)} – {_fraction(g.high)}</td>"
        f"<td>{_fraction(g.compiled_median)}</td><td>{g.launch_bound}</td></tr>"
        for g in groups
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def catalogue_section(data: CatalogueSol) -> str:
    """The section's HTML: a histogram by bound, a spread per category, and both as tables."""
    overall = data.overall()
    if overall is None:
        return (f"<p>The shipped table for {esc(data.gpu)} ({esc(data.table)}) holds no workload that can be placed "
                "against its speed of light.</p>")
    values = [w.fraction for w in data.workloads]
    edges = log2_edges(values, per_octave=2)
    by_bound = data.by("bound")
    by_category = data.by("category")
    histogram = svg.stacked_histogram(
        [(g.name, [w.fraction for w in data.workloads if w.bound == g.name]) for g in by_bound], edges,
        label="baseline distance from SOL", x_label="T_SOL / T_b (log scale; 1 is the speed of light)",
        y_label="workloads", log_x=True,
    )
    spreads = svg.spread_rows([_spread(g) for g in [overall, *by_category]], label="T_SOL / T_b by category",
                              x_label="T_SOL / T_b (log scale)", x_range=(edges[0], 1.0))
    skipped = "".join(f"<li>{esc(name)}: {esc(why)}</li>" for name, why in sorted(data.skipped.items()))
    parts = [
        f'<p class="meta">{data.problems} problems and {len(data.workloads)} workloads of the table shipped for '
        f"{esc(data.gpu)} ({esc(data.table)}), against T_SOL on {esc(data.peaks)} peaks. T_b is the faster of eager "
        "PyTorch and torch.compile; T_SOL / T_b of 1 means the baseline already runs at the speed of light. Median "
        f"{overall.median:.3f}; {overall.launch_bound} workloads are launch-bound (T_b under 5 us).</p>",
        f"<figure>{histogram}<figcaption>Workloads by T_SOL / T_b, half-octave bins, stacked by the bound "
        "(memory or compute on the datasheet peaks). Far left is where a kernel has the most room.</figcaption></figure>",
        f"<figure>{spreads}<figcaption>Per category: the line spans the range, the box the quartiles, the red tick "
        "the median (hover a row for its figures).</figcaption></figure>",
        _group_table("bound", by_bound),
        _group_table("category", by_category),
    ]
    if skipped:
        parts.append(f'<ul class="notes">{skipped}</ul>')
    return "\n".join(parts)
