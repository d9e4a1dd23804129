"""Inline SVG charts drawn by hand: grouped bars with interval whiskers, and class strips."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape

from termgym._vocabulary import CLASSES

PALETTE = ("#4c78a8", "#f58518", "#54a24b", "#b279a2", "#e45756", "#72b7b2", "#9d755d")
CLASS_COLORS = {
    "adapted": "#2e9e4f",
    "stale": "#d6402f",
    "both": "#4c78a8",
    "neither": "#9a9a9a",
    "grader-error": "#8c564b",
    None: "#e3e3e3",
}


@dataclass(frozen=True)
class Bar:
    """One bar: its value in [0, 1] and optional interval."""

    value: float | None
    low: float | None = None
    high: float | None = None
    label: str = ""


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
) -> str:
    """Grouped vertical bars (one group per x label, one bar per series) on a 0-100% axis.

    `series[name][i]` is the bar of series `name` in group `groups[i]`. Whiskers draw the
    interval; a missing value leaves a gap labelled "n/a".
    """
    left, right, top, bottom = 48, 16, 34, 56
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
        for si, name in enumerate(names):
            bar = series[name][gi] if gi < len(series[name]) else Bar(None)
            x = x0 + si * bar_w
            color = PALETTE[si % len(PALETTE)]
            if bar.value is None:
                parts.append(_text(x + bar_w / 2, top + plot_h - 4, "n/a", size=9))
                continue
            h = plot_h * max(0.0, min(1.0, bar.value))
            tip = f"{name} · {group}: {bar.value * 100:.1f}%"
            if bar.low is not None and bar.high is not None:
                tip += f" [{bar.low * 100:.1f}, {bar.high * 100:.1f}]"
            parts.append(
                f'<rect class="bar" x="{x + 1:.1f}" y="{top + plot_h - h:.1f}" '
                f'width="{bar_w - 2:.1f}" height="{h:.1f}" fill="{color}">'
                f"<title>{escape(tip)}</title></rect>"
            )
            parts.append(
                _text(x + bar_w / 2, top + plot_h - h - 4, f"{bar.value * 100:.0f}%", size=9)
            )
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
    rows: Mapping[str, Sequence[tuple[str, str | None]]],
    *,
    title: str,
    width: int = 640,
    chart_id: str = "classes",
) -> str:
    """One row of squares per label (e.g. agent), one square per episode colored by class.

    `rows[label]` lists (tooltip, class) per episode; a class of None is drawn pale (unclassed).
    """
    cell, gap, left, top = 14, 3, 110, 34
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
        for i, (tip, episode_class) in enumerate(items):
            x = left + (i % per_line) * (cell + gap)
            yy = y + (i // per_line) * (cell + gap)
            color = CLASS_COLORS.get(episode_class, CLASS_COLORS[None])
            parts.append(
                f'<rect class="cell cls-{episode_class or "none"}" x="{x}" y="{yy}" '
                f'width="{cell}" height="{cell}" rx="2" fill="{color}">'
                f"<title>{escape(tip)}: {episode_class or 'unclassed'}</title></rect>"
            )
        if not items:
            parts.append(_text(left, y + cell - 2, "no episodes", anchor="start", size=10))
        y += lines[label] * (cell + gap) + 12
    x = left
    for episode_class in CLASSES:
        fill = CLASS_COLORS[episode_class]
        parts.append(f'<rect x="{x}" y="{y + 4}" width="10" height="10" fill="{fill}"/>')
        parts.append(_text(x + 14, y + 13, episode_class, anchor="start", size=11))
        x += 90 if episode_class != "grader-error" else 110
    parts.append("</svg>")
    return "".join(parts)
