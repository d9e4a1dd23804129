"""Inline SVG charts drawn by hand: grouped bars with interval whiskers, and class strips.

Every mark links somewhere (`href`: a bar to its episodes in the report's list, a square to
its episode's view) and has a tooltip that says what it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

from termgym._vocabulary import CLASSES

PALETTE = ("#4c78a8", "#f58518", "#54a24b", "#b279a2", "#e45756", "#72b7b2", "#9d755d")
CLASS_COLORS: dict[str | None, str] = {
    "adapted": "#2e9e4f",
    "stale": "#d6402f",
    "both": "#4c78a8",
    "neither": "#9a9a9a",
    "grader-error": "#8c564b",
    None: "#e3e3e3",
}
OUTCOME_COLORS: dict[str | None, str] = {
    "cheated": "#d6402f",
    "reported": "#2e9e4f",
    "failed": "#9a9a9a",
    "error": "#e3e3e3",
}
"""An impossible episode's outcome: passed (cheating), reported the conflict, failed silently."""


@dataclass(frozen=True)
class Bar:
    """One bar: its value in [0, 1] and optional interval."""

    value: float | None
    low: float | None = None
    high: float | None = None
    label: str = ""
    href: str = ""
    count: str = ""
    """What the tooltip says the bar counts ("3 of 12 episodes")."""


@dataclass(frozen=True)
class Cell:
    """One square of a strip: its color key, its tooltip, where it links."""

    key: str | None
    tip: str
    href: str = ""


def _linked(href: str, mark: str) -> str:
    return f'<a href="{escape(href)}">{mark}</a>' if href else mark


def _text(
    x: float, y: float, text: str, *, anchor: str = "middle", size: int = 12, extra: str = ""
) -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}"'
        f"{extra}>{escape(text)}</text>"
    )


def bar_chart(
    groups: Sequence[str],
    series: Mapping[str, Sequence[Bar]],
    *,
    title: str,
    width: int = 640,
    height: int = 300,
    chart_id: str = "chart",
    honest_zero: Sequence[str] = (),
) -> str:
    """Grouped vertical bars (one group per x label, one bar per series) on a 0-100% axis.

    `series[name][i]` is the bar of series `name` in group `groups[i]`. Whiskers draw the
    interval; a missing value leaves a gap labelled "n/a". Groups in `honest_zero` are those
    where 0% is the honest result (impossible episodes): their label says so, and a bar
    above 0 there is outlined in red.
    """
    left, right, top, bottom = 48, 16, 46, 70
    plot_w, plot_h = width - left - right, height - top - bottom
    names = list(series)
    parts = [
        f'<svg id="{escape(chart_id)}" class="chart" xmlns="http://www.w3.org/2000/svg" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(title)}">',
        _text(width / 2, 20, title, size=14, extra=' font-weight="bold"'),
    ]
    for tick in range(0, 101, 25):
        y = top + plot_h * (1 - tick / 100)
        parts.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{width - right}" y2="{y:.1f}" stroke="#ddd"/>'
        )
        parts.append(_text(left - 6, y + 4, f"{tick}%", anchor="end", size=10))
    group_w = plot_w / max(1, len(groups))
    bar_w = min(48.0, group_w * 0.8 / max(1, len(names)))
    for gi, group in enumerate(groups):
        x0 = left + gi * group_w + (group_w - bar_w * len(names)) / 2
        parts.append(_text(left + (gi + 0.5) * group_w, top + plot_h + 16, group, size=11))
        if group in honest_zero:
            parts.append(
                _text(
                    left + (gi + 0.5) * group_w, top + plot_h + 30, "0% is honest", size=10,
                    extra=' fill="#2e7d32" font-weight="bold"',
                )
            )  # fmt: skip
        for si, name in enumerate(names):
            bar = series[name][gi] if gi < len(series[name]) else Bar(None)
            x = x0 + si * bar_w
            color = PALETTE[si % len(PALETTE)]
            if bar.value is None:
                parts.append(_text(x + bar_w / 2, top + plot_h - 4, "n/a", size=9))
                continue
            h = plot_h * max(0.0, min(1.0, bar.value))
            tip = f"{name} · {group}: {bar.value * 100:.1f}% passed"
            if bar.count:
                tip += f" ({bar.count})"
            if bar.low is not None and bar.high is not None:
                tip += f", interval [{bar.low * 100:.1f}, {bar.high * 100:.1f}]"
            if group in honest_zero:
                tip += " · 0% is the honest result here"
            if bar.href:
                tip += " · click for its episodes"
            cheat = group in honest_zero and bar.value > 0
            outline = ' stroke="#b3261e" stroke-width="3"' if cheat else ""
            # a bar of 0 gets a sliver, so there is something to point at and click
            shown_h = max(h, 2.0)
            parts.append(
                _linked(
                    bar.href,
                    f'<rect class="bar" x="{x + 1:.1f}" y="{top + plot_h - shown_h:.1f}" '
                    f'width="{bar_w - 2:.1f}" height="{shown_h:.1f}" fill="{color}"{outline}>'
                    f"<title>{escape(tip)}</title></rect>",
                )
            )
            label = f"{bar.value * 100:.0f}%"
            parts.append(_text(x + bar_w / 2, top + plot_h - shown_h - 4, label, size=9))
            if bar.low is not None and bar.high is not None:
                cx = x + bar_w / 2
                y_lo = top + plot_h * (1 - bar.low)
                y_hi = top + plot_h * (1 - bar.high)
                parts.append(
                    f'<path class="whisker" d="M{cx:.1f},{y_lo:.1f}V{y_hi:.1f}'
                    f'M{cx - 4:.1f},{y_lo:.1f}h8M{cx - 4:.1f},{y_hi:.1f}h8" '
                    'stroke="#333" stroke-width="1.2" fill="none"/>'
                )
    for si, name in enumerate(names):
        x = left + si * 150
        y = height - 14
        parts.append(
            f'<rect x="{x}" y="{y - 9}" width="10" height="10" '
            f'fill="{PALETTE[si % len(PALETTE)]}"/>'
        )
        parts.append(_text(x + 14, y, name, anchor="start", size=11))
    parts.append("</svg>")
    return "".join(parts)


def class_strip(
    rows: Mapping[str, Sequence[Cell]],
    *,
    title: str,
    width: int = 640,
    chart_id: str = "classes",
    colors: Mapping[str | None, str] = CLASS_COLORS,
    legend: Sequence[str] = CLASSES,
) -> str:
    """One row of squares per label (e.g. agent · variant), one square per episode colored by
    its key (its class, by default; None is drawn pale), each linking to its episode."""
    cell, gap, left, top = 14, 3, 170, 34
    per_line = max(1, (width - left - 10) // (cell + gap))
    lines = {label: max(1, -(-len(items) // per_line)) for label, items in rows.items()}
    height = top + sum(lines.values()) * (cell + gap) + 12 * len(rows) + 36
    parts = [
        f'<svg id="{escape(chart_id)}" class="chart" xmlns="http://www.w3.org/2000/svg" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(title)}">',
        _text(width / 2, 20, title, size=14, extra=' font-weight="bold"'),
    ]
    y = top
    for label, items in rows.items():
        parts.append(_text(left - 8, y + cell - 2, label, anchor="end", size=11))
        for i, item in enumerate(items):
            x = left + (i % per_line) * (cell + gap)
            yy = y + (i // per_line) * (cell + gap)
            color = colors.get(item.key, "#e3e3e3")
            parts.append(
                _linked(
                    item.href,
                    f'<rect class="cell cls-{escape(item.key or "none")}" x="{x}" y="{yy}" '
                    f'width="{cell}" height="{cell}" rx="2" fill="{color}">'
                    f"<title>{escape(item.tip)}</title></rect>",
                )
            )
        if not items:
            parts.append(_text(left, y + cell - 2, "no episodes", anchor="start", size=10))
        y += lines[label] * (cell + gap) + 12
    x = left
    for key in legend:
        fill = colors.get(key, "#e3e3e3")
        parts.append(f'<rect x="{x}" y="{y + 4}" width="10" height="10" fill="{fill}"/>')
        parts.append(_text(x + 14, y + 13, key, anchor="start", size=11))
        x += 24 + 7 * len(key)
    parts.append("</svg>")
    return "".join(parts)
