"""The baselines' distance from the speed of light in ``solforge problems summary``: JSON and a terminal plot.

The figures come from :func:`solforge.sandbox.sol.catalogue.catalogue_sol` (the shipped baseline table of the
summary's GPU against T_SOL on its datasheet peaks); this module only prints them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from solforge.sandbox.sol.catalogue import CatalogueSol

__all__ = ["baseline_sol_json", "print_baseline_sol"]

BAR_WIDTH = 40
"""Characters of the longest bar of the terminal histogram."""


def _histogram(data: CatalogueSol) -> dict[str, Any]:
    from solforge.planner.report.svg import bin_counts
    from solforge.sandbox.sol.catalogue import log2_edges

    edges = log2_edges([w.fraction for w in data.workloads])
    bounds = sorted({w.bound for w in data.workloads})
    counts = {b: bin_counts([w.fraction for w in data.workloads if w.bound == b], edges) for b in bounds}
    return {"edges": edges, "counts": counts}


def baseline_sol_json(data: CatalogueSol) -> dict[str, Any]:
    """The summary's ``baseline_sol`` entry: where the figures come from, the groups and the histogram."""
    overall = data.overall()
    return {
        "gpu": data.gpu,
        "table": data.table,
        "peaks": data.peaks,
        "problems": data.problems,
        "workloads": len(data.workloads),
        "overall": overall.model_dump() if overall else None,
        "by_bound": [g.model_dump() for g in data.by("bound")],
        "by_category": [g.model_dump() for g in data.by("category")],
        "histogram": _histogram(data) if data.workloads else None,
        "skipped": data.skipped,
    }


def print_baseline_sol(data: CatalogueSol) -> None:
    """The groups as lines and the histogram as bars, one character per bound (``#`` memory, ``+`` compute)."""
    overall = data.overall()
    print(f"\nbaselines against the speed of light on {data.gpu} (shipped table {data.table}, "
          f"T_SOL on {data.peaks} peaks): {data.problems} problems, {len(data.workloads)} workloads")
    if overall is None:
        print("  no workload of the table could be placed against its speed of light")
        return
    print(f"  T_SOL / T_b (1 = the baseline runs at the speed of light): median {overall.median:.3f}, quartiles "
          f"{overall.p25:.3f}-{overall.p75:.3f}, range {overall.low:.4f}-{overall.high:.3f}; "
          f"{overall.launch_bound} launch-bound (T_b under 5 us)")
    from solforge.planner.report.svg import fraction_label

    hist = _histogram(data)
    marks = {"memory": "#", "compute": "+"}
    totals = [sum(c[k] for c in hist["counts"].values()) for k in range(len(hist["edges"]) - 1)]
    scale = BAR_WIDTH / max(totals)
    legend = ", ".join(f"{marks.get(b, '?')} {b}" for b in hist["counts"])
    print(f"  workloads by T_SOL / T_b ({legend}):")
    for k, total in enumerate(totals):
        bar = "".join(marks.get(b, "?") * round(c[k] * scale) for b, c in hist["counts"].items())
        span = f"{fraction_label(hist['edges'][k])}-{fraction_label(hist['edges'][k + 1])}"
        print(f"  {span:>11} {bar} {total}")
    for title, groups in (("bound", data.by("bound")), ("category", data.by("category"))):
        print(f"  by {title}:")
        for g in groups:
            compiled = f", torch.compile alone {g.compiled_median:.3f}" if g.compiled_median is not None else ""
            print(f"    {g.name:<12} {g.workloads:>4} workloads of {g.problems:>3} problems: median {g.median:.3f} "
                  f"(quartiles {g.p25:.3f}-{g.p75:.3f}){compiled}; {g.launch_bound} launch-bound")
    for name, why in sorted(data.skipped.items()):
        print(f"  left out: {name}: {why}")
