"""Render a :class:`ReportData` as one self-contained HTML page (inline CSS and SVG, no fetches).

Every piece of text from the ledger (problem, agent and slot names) passes through
:func:`~solforge.planner.report.svg.esc`; nothing is inserted raw.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from datetime import datetime

from solforge.sandbox.sol.catalogue import CatalogueSol, SolGroup, log2_edges

from . import svg
from .models import ReportData, ScalingPoint
from .svg import Series, Spread, esc

__all__ = ["render_html"]

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem auto;max-width:1100px;
color:#1d2330;padding:0 1rem}
h1{font-size:1.6rem;margin-bottom:.2rem}
h2{margin-top:2.2rem;border-bottom:1px solid #dde;padding-bottom:.2rem}
.meta{color:#5a6275}.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(170px,1fr));gap:.7rem}
.card{border:1px solid #dde;border-radius:8px;padding:.6rem .8rem;background:#f8f9fc}
.card .v{font-size:1.5rem;font-weight:600}.card .k{color:#5a6275;font-size:.85rem}
figure{margin:1.2rem 0}figcaption{color:#5a6275;font-size:.88rem;margin-top:.2rem}
svg.chart{width:100%;height:auto;background:#fff;border:1px solid #eef}
svg text{font-size:11px;fill:#333}svg .label{font-size:12px;fill:#222}svg .empty{font-size:14px;fill:#888}
svg .axis{stroke:#555;stroke-width:1}svg .grid{stroke:#e6e8ef;stroke-width:1}svg .bar{fill:#4c78a8}
svg .marker{stroke:#d62728;stroke-dasharray:4 3}svg .marker-label{fill:#d62728}svg .line{stroke-width:1.6}
svg .legend{font-size:11px}svg .median{stroke:#d62728;stroke-width:2}
table{border-collapse:collapse;width:100%;font-size:.88rem;margin:.6rem 0}
th,td{border-bottom:1px solid #e6e8ef;padding:.25rem .45rem;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left;white-space:normal;word-break:break-all}
th{background:#f1f3f8;position:sticky;top:0}tr:hover td{background:#fafbfe}
.notes li{color:#7a4b00}dl.defs dt{font-weight:600;margin-top:.4rem}dl.defs dd{margin-left:1rem;color:#444}
"""


def _num(value: float | None, fmt: str = "{:.3f}", none: str = "–") -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return none
    return fmt.format(value)


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S UTC") if value else "–"


def _time_unit(span_s: float) -> tuple[str, float]:
    """The unit the time axes use for a window of ``span_s`` seconds, and its length in seconds."""
    if span_s <= 2 * 3600:
        return "minutes", 60.0
    if span_s <= 72 * 3600:
        return "hours", 3600.0
    return "days", 86400.0


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, empty: str) -> str:
    """A table whose cells are already-escaped strings."""
    if not rows:
        return f'<p class="meta">{esc(empty)}</p>'
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _figure(chart: str, caption: str) -> str:
    return f"<figure>{chart}<figcaption>{esc(caption)}</figcaption></figure>"


def _cards(data: ReportData) -> str:
    """The headline as cards; ``data-field`` / ``data-value`` carry the raw number for scripts and tests."""
    h = data.headline
    cards: list[tuple[str, str, str]] = [
        ("problems attempted", "problems_attempted", str(h.problems_attempted)),
        (
            "problems beating the baseline",
            "problems_beating_baseline",
            f"{h.problems_beating_baseline} of {h.problems_with_speedup}",
        ),
        ("geomean speedup", "geomean_speedup", _num(h.geomean_speedup, "{:.2f}x")),
        ("problems above 2x", "problems_above_2x", str(h.problems_above_2x)),
        ("median SOL score", "median_sol_score", _num(h.median_sol_score)),
        ("agents", "agents", str(h.agents)),
        ("GPU-hours", "gpu_hours", _num(h.gpu_hours, "{:.1f}")),
        ("submissions", "submissions", str(h.submissions)),
        ("jobs", "jobs", str(h.jobs)),
    ]
    if h.cpu_slot_hours:
        cards.append(("CPU slot-hours", "cpu_slot_hours", _num(h.cpu_slot_hours, "{:.2f}")))
    raw = h.model_dump()
    items = [
        f'<div class="card" data-field="{esc(field)}" data-value="{esc(raw[field])}">'
        f'<div class="v">{esc(shown)}</div><div class="k">{esc(label)}</div></div>'
        for label, field, shown in cards
    ]
    return '<div class="cards">' + "".join(items) + "</div>"


def _speedup_edges(values: Sequence[float]) -> list[float]:
    """Quarter-octave bins covering the values and at least 0.5x to 4x."""
    lo = min(-1, math.floor(math.log2(min(values))))
    hi = max(2, math.ceil(math.log2(max(values))) if max(values) > 1 else 2)
    if max(values) >= 2.0**hi:
        hi += 1
    return [2.0 ** (k / 4) for k in range(lo * 4, hi * 4 + 1)]


def _plots(data: ReportData) -> list[str]:
    unit, unit_s = _time_unit(data.window.span_s)
    span = data.window.span_s / unit_s
    figures = []
    speedups = data.speedups
    figures.append(
        _figure(
            svg.histogram(
                speedups,
                _speedup_edges(speedups),
                label="speedup distribution",
                log_x=True,
                x_label="speedup over the baseline (log scale)",
                markers=(1.0, 2.0),
            )
            if speedups
            else svg.empty("speedup distribution", "no submission with a measured speedup"),
            "Best submission per problem: speedup over the baseline (faster of eager and torch.compile), "
            "quarter-octave bins. Right of the 1x line beats the baseline.",
        )
    )
    top = max([1.0, *data.scores])
    edges = [round(k * 0.05, 2) for k in range(math.ceil(top / 0.05) + 1)]
    figures.append(
        _figure(
            svg.histogram(data.scores, edges, label="SOL score distribution", x_label="SOL score"),
            "Best submission per problem: SOL score (0.5 matches the baseline, 1.0 is speed of light).",
        )
    )
    series = [Series(s.problem, [(t / unit_s, v) for t, v in s.points]) for s in data.best_over_time]
    figures.append(
        _figure(
            svg.line_chart(
                series,
                label="best score over time",
                x_label=f"{unit} since start",
                y_label="best SOL score",
                x_range=(0.0, max(span, 1e-9)),
                y_range=(0.0, max([1.0, *(v for s in series for _, v in s.points)])),
                step=True,
            ),
            "Best submission score of each problem over time (hover a line for its problem).",
        )
    )
    figures.append(
        _figure(
            svg.heatmap(
                [(s.gpu_id, s.buckets) for s in data.slots],
                label="slot utilisation over time",
                x_label=f"{unit} since start",
                x_span=span,
            ),
            f"Fraction of each {_num(data.bucket_s / unit_s, '{:.3g}')}-{unit[:-1]} bucket each slot spent "
            "under lease (darker is busier).",
        )
    )
    x_of = [(b.start_s + data.bucket_s / 2) / unit_s for b in data.queue]
    depth = [
        Series(
            "benchmark + submit jobs waiting",
            [(x, b.slot_depth) for x, b in zip(x_of, data.queue, strict=True)],
        ),
        Series(
            "compile jobs waiting",
            [(x, b.compile_depth) for x, b in zip(x_of, data.queue, strict=True)],
            dashed=True,
        ),
    ]
    figures.append(
        _figure(
            svg.line_chart(
                depth,
                label="queue depth over time",
                x_label=f"{unit} since start",
                y_label="jobs waiting (mean)",
                x_range=(0.0, max(span, 1e-9)),
            ),
            "Mean number of queued jobs in each bucket.",
        )
    )
    waits = [
        Series(
            name,
            [
                (x, getattr(b, key))
                for x, b in zip(x_of, data.queue, strict=True)
                if getattr(b, key) is not None
            ],
        )
        for name, key in (("p50 wait", "wait_p50_s"), ("p95 wait", "wait_p95_s"))
    ]
    figures.append(
        _figure(
            svg.line_chart(
                waits,
                label="queue wait over time",
                x_label=f"{unit} since start",
                y_label="seconds from enqueue to start",
                x_range=(0.0, max(span, 1e-9)),
            ),
            "Enqueue-to-start wait of the benchmark and submit jobs that started in each bucket. "
            f"Whole window: p50 {_num(data.wait_p50_s, '{:.1f}')} s, "
            f"p95 {_num(data.wait_p95_s, '{:.1f}')} s, "
            f"max {_num(data.wait_max_s, '{:.1f}')} s.",
        )
    )
    return figures


def _fraction(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _sol_group_table(title: str, groups: list[SolGroup]) -> str:
    rows = [
        [esc(g.name), str(g.problems), str(g.workloads), _fraction(g.median), f"{_fraction(g.p25)} – {_fraction(g.p75)}",
         f"{_fraction(g.low)} – {_fraction(g.high)}", _fraction(g.compiled_median), str(g.launch_bound)]
        for g in groups
    ]
    headers = (title, "problems", "workloads", "median T_SOL/T_b", "quartiles", "range", "median T_SOL/compiled",
               "launch-bound")
    return _table(headers, rows, empty="no workloads")


def _catalogue_section(data: CatalogueSol) -> str:
    """The shipped baselines of one GPU against the speed of light: a histogram by bound, a spread per category,
    and both as tables (from the package's tables, not the ledger: where the catalogue leaves room)."""
    overall = data.overall()
    if overall is None:
        return (f'<p class="meta">The shipped table for {esc(data.gpu)} ({esc(data.table)}) holds no workload that '
                "can be placed against its speed of light.</p>")
    edges = log2_edges([w.fraction for w in data.workloads], per_octave=2)
    by_bound, by_category = data.by("bound"), data.by("category")
    histogram = svg.stacked_histogram(
        [(g.name, [w.fraction for w in data.workloads if w.bound == g.name]) for g in by_bound], edges,
        label="baseline distance from SOL", x_label="T_SOL / T_b (log scale; 1 is the speed of light)",
        y_label="workloads", log_x=True,
    )
    spreads = svg.spread_rows(
        [Spread(g.name, g.low, g.p25, g.median, g.p75, g.high,
                note=f"{g.workloads} workloads of {g.problems} problems, {g.launch_bound} launch-bound")
         for g in [overall, *by_category]],
        label="T_SOL / T_b by category", x_label="T_SOL / T_b (log scale)", x_range=(edges[0], 1.0),
    )
    parts = [
        f'<p class="meta">{data.problems} problems and {len(data.workloads)} workloads of the table shipped for '
        f"{esc(data.gpu)} ({esc(data.table)}), against T_SOL on {esc(data.peaks)} peaks. T_b is the faster of eager "
        "PyTorch and torch.compile; T_SOL / T_b of 1 means the baseline already runs at the speed of light. Median "
        f"{overall.median:.3f}; {overall.launch_bound} workloads are launch-bound (T_b under 5 us).</p>",
        _figure(histogram, "Workloads by T_SOL / T_b, half-octave bins, stacked by the bound (memory or compute on "
                "the datasheet peaks). Far left is where a kernel has the most room."),
        _figure(spreads, "Per category: the line spans the range, the box the quartiles, the red tick the median "
                "(hover a row for its figures)."),
        _sol_group_table("bound", by_bound),
        _sol_group_table("category", by_category),
    ]
    if data.skipped:
        parts.append('<ul class="notes">' + "".join(f"<li>{esc(name)}: {esc(why)}</li>"
                                                    for name, why in sorted(data.skipped.items())) + "</ul>")
    return "\n".join(parts)


def _problem_table(data: ReportData) -> str:
    rows = [
        [
            esc(p.problem),
            esc(p.best_agent or "–"),
            _num(p.best_score),
            _num(p.speedup, "{:.2f}x"),
            _num(p.latency_ms, "{:.4g}"),
            _num(p.baseline_ms, "{:.4g}"),
            _num(p.t_sol_ms, "{:.4g}"),
            f"{p.passed}/{p.workloads}" if p.workloads is not None else "–",
            str(p.attempts),
            str(p.compile_jobs),
            str(p.submissions),
            str(p.agents),
        ]
        for p in data.problems
    ]
    headers = (
        "problem",
        "best agent",
        "best score",
        "speedup",
        "kernel ms",
        "baseline ms",
        "T_SOL ms",
        "passed",
        "attempts",
        "compiles",
        "submissions",
        "agents",
    )
    return _table(headers, rows, empty="No problem was attempted in this window.")


def _agent_table(data: ReportData) -> str:
    rows = [
        [
            esc(a.agent),
            str(a.jobs),
            esc(", ".join(f"{k} {n}" for k, n in a.jobs_by_kind.items()) or "–"),
            str(a.failed_jobs),
            str(a.submissions),
            str(a.problems),
            str(a.firsts),
            _num(a.best_score),
            _num(a.mean_best_score),
            _num(a.best_speedup, "{:.2f}x"),
            _num(a.gpu_hours, "{:.2f}"),
        ]
        for a in data.agents
    ]
    headers = (
        "agent",
        "jobs",
        "by kind",
        "failed",
        "submissions",
        "problems",
        "best on",
        "best score",
        "mean best score",
        "best speedup",
        "slot-hours",
    )
    return _table(headers, rows, empty="No agent was active in this window.")


def _slot_table(data: ReportData) -> str:
    rows = [
        [
            esc(s.gpu_id),
            esc(s.kind),
            esc(s.name or "–"),
            str(s.leases),
            _num(s.busy_s / 3600, "{:.2f}"),
            _num(s.utilisation * 100, "{:.1f}%"),
        ]
        for s in data.slots
    ]
    return _table(
        ("slot", "kind", "name", "leases", "hours leased", "utilisation"),
        rows,
        empty="No slot is registered.",
    )


def _scaling_section(points: list[ScalingPoint]) -> str:
    """Evaluations per hour against the slots a run used, with perfect scaling from the one-slot runs."""
    if not points:
        return ('<p class="empty">No finished swarm run held a lease. Run the same swarm on 1, 2 and 4 GPUs '
                "(<code>solforge swarm run --gpus 0</code>, <code>--gpus 0,1</code>, ...) into one ledger.</p>")
    rows = [[esc(p.run), str(p.slots), str(p.agents), _num(p.minutes, "{:.1f}"), str(p.evaluations),
             _num(p.evaluations_per_hour, "{:.0f}"), _num(p.evaluations_per_gpu_hour, "{:.0f}"),
             _num(p.lease_utilisation * 100 if p.lease_utilisation is not None else None, "{:.1f}%"),
             _num(p.queue_wait_p95_s, "{:.1f}"), str(p.overlapping_leases)] for p in points]
    table = _table(("run", "slots", "agents", "minutes", "evaluations", "per hour", "per slot-hour",
                    "lease utilisation", "queue wait p95 (s)", "overlapping leases"), rows, empty="")
    by_slots: dict[int, list[float]] = {}
    for p in points:
        if p.evaluations_per_hour is not None:
            by_slots.setdefault(p.slots, []).append(p.evaluations_per_hour)
    if len(by_slots) < 2:
        return table + '<p class="empty">One slot count only: run the swarm on another number of GPUs to see scaling.</p>'
    measured = [(float(n), sum(v) / len(v)) for n, v in sorted(by_slots.items())]
    series = [Series("measured (mean of the runs)", measured)]
    if 1 in by_slots:
        one = sum(by_slots[1]) / len(by_slots[1])
        series.append(Series("perfect scaling from 1 slot", [(float(n), one * n) for n, _ in measured], dashed=True))
    chart = svg.line_chart(series, label="scaling", x_label="slots (GPUs)", y_label="evaluations per hour",
                           x_range=(0.0, measured[-1][0]))
    return table + _figure(chart, "Evaluations per hour against the slots a swarm run held.")


_DEFINITIONS = (
    (
        "best submission",
        "A problem's highest-scoring accepted submission in the window (every workload passed, as on "
        "the leaderboard; ties: higher speedup, then earlier).",
    ),
    (
        "speedup",
        "Baseline time over kernel time, geometric mean over the best submission's passed workloads; "
        "the baseline is the faster of the eager reference and torch.compile on the same GPU.",
    ),
    ("geomean speedup", "Geometric mean of the best submissions' speedups over the problems that have one."),
    (
        "SOL score",
        "1 / (1 + (T_k - T_SOL) / (T_b - T_SOL)) per workload, averaged with failed workloads as 0: "
        "0.5 matches the baseline, 1.0 is speed of light.",
    ),
    ("GPU-hours", "Hours CUDA slots were leased by benchmark and submit jobs."),
)


def render_html(data: ReportData) -> str:
    """The report as one HTML document (UTF-8 text, no external resources)."""
    w = data.window
    scope = f"run {w.run_id}, " if w.run_id else ""
    sections: list[tuple[str, Callable[[ReportData], str]]] = [
        ("Problems", _problem_table),
        ("Agents", _agent_table),
        ("Slots", _slot_table),
    ]
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(data.title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{esc(data.title)}</h1>",
        f'<p class="meta">Ledger {esc(data.ledger)}; {esc(scope)}window {esc(_when(w.start))} to '
        f"{esc(_when(w.end))}; generated {esc(_when(data.generated_at))}.</p>",
    ]
    if w.start is None:
        parts.append(
            '<p class="empty-ledger"><strong>This ledger has no activity in the window</strong>: no job was '
            "queued and no solution was submitted. Start a run (<code>solforge serve</code> or "
            "<code>solforge swarm run</code>) or widen <code>--since</code>.</p>"
        )
    parts += ["<h2>Headline</h2>", _cards(data)]
    if data.notes:
        parts.append('<ul class="notes">' + "".join(f"<li>{esc(n)}</li>" for n in data.notes) + "</ul>")
    parts += ["<h2>Plots</h2>", *_plots(data)]
    for title, fn in sections:
        parts += [f"<h2>{esc(title)}</h2>", fn(data)]
    if data.scaling is not None:
        parts += ["<h2>Scaling across GPUs</h2>", _scaling_section(data.scaling)]
    if data.catalogue is not None:
        parts += [f"<h2>The catalogue on {esc(data.catalogue.gpu)}: the baselines against the speed of light</h2>",
                  _catalogue_section(data.catalogue)]
    parts.append('<h2>Definitions</h2><dl class="defs">')
    parts += [f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in _DEFINITIONS]
    parts.append("</dl></body></html>")
    return "\n".join(parts)
