"""Small hand-written SVG charts for the HTML report.

Why not matplotlib: the report must run wherever the ledger is (a server without the GPU extras),
so it should add no dependency, and its text is untrusted (problem names come from users and
agents): matplotlib parses ``$...$`` in labels as mathtext and fails on some names, while here
every string goes through one escape. The charts are few and plain (histograms, step lines, a
heatmap), so a few hundred lines draw them as compact, deterministic SVG that scales with the page
and carries tooltips (``<title>``) instead of a legend of 200 problems.

Every function returns one ``<svg>`` element as a string; coordinates are in a fixed viewBox.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape

__all__ = ["PALETTE", "Series", "Spread", "bin_counts", "heatmap", "histogram", "line_chart", "spread_rows", "stacked_histogram"]

WIDTH, HEIGHT = 760, 300
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 16, 44
PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
"""Ten distinguishable colours (matplotlib's tab10), cycled over series."""


def esc(value: object) -> str:
    """Text or attribute value, escaped for HTML and SVG alike."""
    return escape(str(value), quote=True)


@dataclass
class Series:
    """One line of a line chart."""

    name: str
    points: list[tuple[float, float]]
    color: str | None = None
    dashed: bool = False
    extra: dict[str, str] = field(default_factory=dict)


def _fmt(value: float) -> str:
    if value == 0:
        return "0"
    magnitude = abs(value)
    if magnitude >= 1000:
        return f"{value:,.0f}"
    if magnitude >= 10:
        return f"{value:.0f}"
    if magnitude >= 1:
        return f"{value:.1f}".rstrip("0").rstrip(".")
    return f"{value:.2g}"


def fraction_label(value: float) -> str:
    """A power-of-two fraction as ``1/64`` (1 and above as numbers): what a log2 axis of ratios reads best as."""
    return _fmt(value) if value >= 1 or value <= 0 else f"1/{round(1 / value):,}"


def bin_counts(values: Sequence[float], edges: Sequence[float]) -> list[int]:
    """How many ``values`` fall between each pair of consecutive ``edges`` (those outside go to the end bins)."""
    counts = [0] * (len(edges) - 1)
    for v in values:
        i = next((k for k in range(len(counts)) if v < edges[k + 1]), len(counts) - 1)
        counts[max(0, i)] += 1
    return counts


def _nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    """About ``count`` round tick values covering [lo, hi]."""
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / count
    step = 10 ** math.floor(math.log10(raw))
    for mult in (1, 2, 2.5, 5, 10):
        if raw <= mult * step:
            step *= mult
            break
    first = math.ceil(lo / step - 1e-9) * step
    ticks = []
    value = first
    while value <= hi + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    return ticks


class _Frame:
    """Maps data coordinates to the plot area of the viewBox (linear or log2 on x)."""

    def __init__(self, x: tuple[float, float], y: tuple[float, float], *, log_x: bool = False) -> None:
        self.log_x = log_x
        self.x0, self.x1 = (math.log2(x[0]), math.log2(x[1])) if log_x else x
        self.y0, self.y1 = y
        if self.x1 <= self.x0:
            self.x1 = self.x0 + 1.0
        if self.y1 <= self.y0:
            self.y1 = self.y0 + 1.0

    def px(self, x: float) -> float:
        v = math.log2(x) if self.log_x else x
        return LEFT + (v - self.x0) / (self.x1 - self.x0) * (WIDTH - LEFT - RIGHT)

    def py(self, y: float) -> float:
        return HEIGHT - BOTTOM - (y - self.y0) / (self.y1 - self.y0) * (HEIGHT - TOP - BOTTOM)


def _open(label: str) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" class="chart" '
        f'role="img" aria-label="{esc(label)}">',
        f"<title>{esc(label)}</title>",
    ]


def _axes(
    frame: _Frame, xticks: Sequence[float], yticks: Sequence[float], x_label: str, y_label: str,
    x_format: Callable[[float], str] | None = None,
) -> list[str]:
    out = [
        f'<line x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}" y2="{HEIGHT - BOTTOM}" '
        'class="axis"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{HEIGHT - BOTTOM}" class="axis"/>',
    ]
    for t in yticks:
        y = frame.py(t)
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" class="grid"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{esc(_fmt(t))}</text>')
    for t in xticks:
        x = frame.px(t)
        out.append(
            f'<line x1="{x:.1f}" y1="{HEIGHT - BOTTOM}" x2="{x:.1f}" y2="{HEIGHT - BOTTOM + 4}" '
            'class="axis"/>'
        )
        out.append(
            f'<text x="{x:.1f}" y="{HEIGHT - BOTTOM + 17}" text-anchor="middle">{esc((x_format or _fmt)(t))}</text>'
        )
    out.append(
        f'<text x="{(LEFT + WIDTH - RIGHT) / 2}" y="{HEIGHT - 6}" text-anchor="middle" class="label">'
        f"{esc(x_label)}</text>"
    )
    out.append(
        f'<text x="14" y="{(TOP + HEIGHT - BOTTOM) / 2}" text-anchor="middle" class="label" '
        f'transform="rotate(-90 14 {(TOP + HEIGHT - BOTTOM) / 2})">{esc(y_label)}</text>'
    )
    return out


def empty(label: str, message: str) -> str:
    """A chart-sized placeholder saying why there is nothing to draw."""
    return "".join(
        [
            *_open(label),
            f'<text x="{WIDTH / 2}" y="{HEIGHT / 2}" text-anchor="middle" class="empty">'
            f"{esc(message)}</text>",
            "</svg>",
        ]
    )


def histogram(
    values: Sequence[float],
    edges: Sequence[float],
    *,
    label: str,
    x_label: str,
    y_label: str = "problems",
    log_x: bool = False,
    markers: Sequence[float] = (),
) -> str:
    """Bars counting ``values`` between consecutive ``edges`` (values outside go to the end bins).

    ``markers`` draws dashed vertical lines (for example at 1x and 2x).
    """
    if not values:
        return empty(label, "no data in this window")
    counts = bin_counts(values, edges)
    frame = _Frame((edges[0], edges[-1]), (0, max(counts) * 1.1), log_x=log_x)
    xticks = [e for e in edges if not log_x or math.log2(e).is_integer()]
    if not log_x and len(xticks) > 11:
        xticks = xticks[:: math.ceil(len(xticks) / 10)]
    out = [*_open(label), *_axes(frame, xticks, _nice_ticks(0, max(counts) * 1.05), x_label, y_label)]
    for k, n in enumerate(counts):
        if not n:
            continue
        x0, x1 = frame.px(edges[k]), frame.px(edges[k + 1])
        y = frame.py(n)
        out.append(
            f'<rect x="{x0 + 1:.1f}" y="{y:.1f}" width="{max(0.5, x1 - x0 - 2):.1f}" '
            f'height="{HEIGHT - BOTTOM - y:.1f}" class="bar"><title>{esc(_fmt(edges[k]))}'
            f" to {esc(_fmt(edges[k + 1]))}: {n}</title></rect>"
        )
    for m in markers:
        if edges[0] <= m <= edges[-1]:
            x = frame.px(m)
            out.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{HEIGHT - BOTTOM}" class="marker"/>')
            out.append(f'<text x="{x + 3:.1f}" y="{TOP + 10}" class="marker-label">{esc(_fmt(m))}x</text>')
    out.append("</svg>")
    return "".join(out)


def line_chart(
    series: Sequence[Series],
    *,
    label: str,
    x_label: str,
    y_label: str,
    x_range: tuple[float, float] | None = None,
    y_range: tuple[float, float] | None = None,
    step: bool = False,
    legend: bool = True,
) -> str:
    """Lines (or steps that hold each value until the next point) through each series' points.

    A step series is extended to the right edge of ``x_range``. Each line carries its name as a
    tooltip; the legend is drawn for up to ten series.
    """
    drawn = [s for s in series if s.points]
    if not drawn:
        return empty(label, "no data in this window")
    xs = [x for s in drawn for x, _ in s.points]
    ys = [y for s in drawn for _, y in s.points]
    x_lo, x_hi = x_range or (min(xs), max(xs))
    y_lo, y_hi = y_range or (min(0.0, min(ys)), max(ys) * 1.1 if max(ys) > 0 else 1.0)
    frame = _Frame((x_lo, x_hi), (y_lo, y_hi))
    out = [
        *_open(label),
        *_axes(frame, _nice_ticks(x_lo, x_hi, 8), _nice_ticks(y_lo, y_hi), x_label, y_label),
    ]
    for k, s in enumerate(drawn):
        color = s.color or PALETTE[k % len(PALETTE)]
        coords: list[tuple[float, float]] = []
        for i, (x, y) in enumerate(s.points):
            if step and i:
                coords.append((frame.px(x), frame.py(s.points[i - 1][1])))
            coords.append((frame.px(x), frame.py(y)))
        if step:
            coords.append((frame.px(x_hi), frame.py(s.points[-1][1])))
        path = " ".join(f"{'M' if i == 0 else 'L'}{x:.1f},{y:.1f}" for i, (x, y) in enumerate(coords))
        dash = ' stroke-dasharray="5 3"' if s.dashed else ""
        out.append(
            f'<path d="{path}" fill="none" stroke="{esc(color)}" class="line"{dash}>'
            f"<title>{esc(s.name)}</title></path>"
        )
        if len(s.points) == 1 and not step:
            x, y = coords[0]
            out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{esc(color)}"/>')
    if legend and len(drawn) <= 10:
        for k, s in enumerate(drawn):
            color = s.color or PALETTE[k % len(PALETTE)]
            y = TOP + 6 + 14 * k
            out.append(
                f'<line x1="{WIDTH - RIGHT - 230}" y1="{y}" x2="{WIDTH - RIGHT - 212}" y2="{y}" '
                f'stroke="{esc(color)}" class="line"/>'
            )
            name = s.name if len(s.name) <= 36 else s.name[:35] + "…"
            out.append(f'<text x="{WIDTH - RIGHT - 208}" y="{y + 4}" class="legend">{esc(name)}</text>')
    out.append("</svg>")
    return "".join(out)


def heatmap(
    rows: Sequence[tuple[str, Sequence[float]]],
    *,
    label: str,
    x_label: str,
    x_span: float,
) -> str:
    """One row of cells per name, shaded by a value in [0, 1] (0: white, 1: full colour).

    Each cell's tooltip gives its row, its time and its value as a percentage; the x axis runs
    from 0 to ``x_span``.
    """
    if not rows or not rows[0][1]:
        return empty(label, "no slots registered in this window")
    row_h = max(6.0, min(22.0, (HEIGHT - TOP - BOTTOM) / len(rows)))
    height = int(TOP + BOTTOM + row_h * len(rows))
    left = 150
    cells = len(rows[0][1])
    cell_w = (WIDTH - left - RIGHT) / cells
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" class="chart" '
        f'role="img" aria-label="{esc(label)}">',
        f"<title>{esc(label)}</title>",
    ]
    for r, (name, values) in enumerate(rows):
        y = TOP + r * row_h
        short = name if len(name) <= 22 else "…" + name[-21:]
        if row_h >= 9:
            out.append(
                f'<text x="{left - 6}" y="{y + row_h / 2 + 4:.1f}" text-anchor="end">{esc(short)}</text>'
            )
        for c, value in enumerate(values):
            v = min(1.0, max(0.0, value))
            out.append(
                f'<rect x="{left + c * cell_w:.1f}" y="{y:.1f}" width="{cell_w + 0.3:.1f}" '
                f'height="{row_h - 1:.1f}" '
                f'fill="#1f77b4" fill-opacity="{v:.3f}" class="cell"><title>{esc(name)} at '
                f"{esc(_fmt(c * x_span / cells))}: {v * 100:.0f}%</title></rect>"
            )
    axis_y = TOP + row_h * len(rows)
    out.append(f'<line x1="{left}" y1="{axis_y:.1f}" x2="{WIDTH - RIGHT}" y2="{axis_y:.1f}" class="axis"/>')
    for t in _nice_ticks(0, x_span, 8):
        x = left + t / x_span * (WIDTH - left - RIGHT) if x_span > 0 else left
        out.append(f'<text x="{x:.1f}" y="{axis_y + 16:.1f}" text-anchor="middle">{esc(_fmt(t))}</text>')
    out.append(
        f'<text x="{(left + WIDTH - RIGHT) / 2}" y="{height - 6}" text-anchor="middle" class="label">'
        f"{esc(x_label)}</text>"
    )
    out.append("</svg>")
    return "".join(out)


def stacked_histogram(
    groups: Sequence[tuple[str, Sequence[float]]],
    edges: Sequence[float],
    *,
    label: str,
    x_label: str,
    y_label: str,
    log_x: bool = False,
) -> str:
    """Bars counting each group's values between consecutive ``edges``, the groups stacked in order.

    Values outside the edges go to the end bins; each segment's tooltip names its group, bin and count.
    """
    if not any(values for _, values in groups):
        return empty(label, "no data")
    counts = [bin_counts(values, edges) for _, values in groups]
    totals = [sum(c[k] for c in counts) for k in range(len(edges) - 1)]
    frame = _Frame((edges[0], edges[-1]), (0, max(totals) * 1.1), log_x=log_x)
    xticks = [e for e in edges if not log_x or math.log2(e).is_integer()]
    if len(xticks) > 11:
        xticks = xticks[::-1][:: math.ceil(len(xticks) / 10)][::-1]  # keep 1, the speed of light
    out = [*_open(label), *_axes(frame, xticks, _nice_ticks(0, max(totals) * 1.05), x_label, y_label,
                                 fraction_label if log_x else None)]
    for k in range(len(edges) - 1):
        x0, x1 = frame.px(edges[k]), frame.px(edges[k + 1])
        below = 0
        for g, (name, _) in enumerate(groups):
            n = counts[g][k]
            if not n:
                continue
            top, bottom = frame.py(below + n), frame.py(below)
            out.append(
                f'<rect x="{x0 + 1:.1f}" y="{top:.1f}" width="{max(0.5, x1 - x0 - 2):.1f}" '
                f'height="{bottom - top:.1f}" fill="{PALETTE[g % len(PALETTE)]}"><title>{esc(name)}: '
                f"{esc(fraction_label(edges[k]))} to {esc(fraction_label(edges[k + 1]))}: {n}</title></rect>"
            )
            below += n
    for g, (name, values) in enumerate(groups):
        y = TOP + 6 + 14 * g
        out.append(
            f'<rect x="{WIDTH - RIGHT - 170}" y="{y - 5}" width="10" height="10" fill="{PALETTE[g % len(PALETTE)]}"/>'
        )
        out.append(f'<text x="{WIDTH - RIGHT - 155}" y="{y + 4}" class="legend">{esc(name)} ({len(values)})</text>')
    out.append("</svg>")
    return "".join(out)


@dataclass
class Spread:
    """One row of a spread chart: a range, its quartiles and its median."""

    name: str
    low: float
    p25: float
    median: float
    p75: float
    high: float
    note: str = ""


def spread_rows(rows: Sequence[Spread], *, label: str, x_label: str, x_range: tuple[float, float]) -> str:
    """One row per name on a log2 x axis: a thin line over the range, a box over the quartiles, a
    tick at the median (a horizontal box plot); each row's tooltip gives its figures."""
    if not rows:
        return empty(label, "no data")
    row_h = 22.0
    left = 170
    height = int(TOP + BOTTOM + row_h * len(rows))
    lo, hi = math.log2(x_range[0]), math.log2(x_range[1])

    def px(v: float) -> float:
        return left + (math.log2(min(max(v, x_range[0]), x_range[1])) - lo) / (hi - lo) * (WIDTH - left - RIGHT)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" class="chart" '
        f'role="img" aria-label="{esc(label)}">',
        f"<title>{esc(label)}</title>",
    ]
    axis_y = TOP + row_h * len(rows)
    octaves = list(range(math.ceil(lo), math.floor(hi) + 1))
    every = max(1, math.ceil(len(octaves) / 10))
    for k in octaves:
        x = px(2.0**k)
        out.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{axis_y:.1f}" class="grid"/>')
        if (octaves[-1] - k) % every == 0:
            out.append(
                f'<text x="{x:.1f}" y="{axis_y + 16:.1f}" text-anchor="middle">{esc(fraction_label(2.0**k))}</text>'
            )
    for r, row in enumerate(rows):
        mid = TOP + r * row_h + row_h / 2
        short = row.name if len(row.name) <= 26 else row.name[:25] + "…"
        tip = (f"{row.name}: median {row.median:.3g}, quartiles {row.p25:.3g} to {row.p75:.3g}, "
               f"range {row.low:.3g} to {row.high:.3g}{'; ' + row.note if row.note else ''}")
        out.append(f'<g><title>{esc(tip)}</title>')
        out.append(f'<text x="{left - 6}" y="{mid + 4:.1f}" text-anchor="end">{esc(short)}</text>')
        out.append(f'<line x1="{px(row.low):.1f}" y1="{mid:.1f}" x2="{px(row.high):.1f}" y2="{mid:.1f}" class="axis"/>')
        x0, x1 = px(row.p25), px(row.p75)
        out.append(f'<rect x="{x0:.1f}" y="{mid - 6:.1f}" width="{max(1.0, x1 - x0):.1f}" height="12" class="bar"/>')
        xm = px(row.median)
        out.append(f'<line x1="{xm:.1f}" y1="{mid - 8:.1f}" x2="{xm:.1f}" y2="{mid + 8:.1f}" class="median"/>')
        out.append("</g>")
    out.append(f'<line x1="{left}" y1="{axis_y:.1f}" x2="{WIDTH - RIGHT}" y2="{axis_y:.1f}" class="axis"/>')
    out.append(
        f'<text x="{(left + WIDTH - RIGHT) / 2}" y="{height - 6}" text-anchor="middle" class="label">'
        f"{esc(x_label)}</text>"
    )
    out.append("</svg>")
    return "".join(out)
