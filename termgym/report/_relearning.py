"""The relearning curve: the moving pass rate across a rule switch, as an inline SVG."""

from __future__ import annotations

import math
from html import escape

from termgym.analysis.relearning import Recovery


def relearning_svg(found: Recovery, *, title: str = "", width: int = 720, height: int = 300) -> str:
    """The mean moving pass rate over seeds by training episode, the switch as a vertical
    line, the recovery target as a dashed line and each seed's recovery as a tick."""
    left, right, top, bottom = 48, 16, 34, 44
    plot_w, plot_h = width - left - right, height - top - bottom
    curve = found.curve
    n = max(1, len(curve) - 1)

    def x(i: float) -> float:
        return left + plot_w * i / n

    def y(v: float) -> float:
        return top + plot_h * (1 - v)

    target = found.fraction * (sum(found.pre_rate.values()) / max(1, len(found.pre_rate)))
    segments: list[list[str]] = [[]]
    for i, v in enumerate(curve):
        if math.isnan(v):
            if segments[-1]:
                segments.append([])
            continue
        segments[-1].append(f"{x(i):.1f},{y(v):.1f}")
    parts = [
        f'<svg class="chart relearning" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img">',
        f'<text x="{width / 2:.1f}" y="20" font-size="14" text-anchor="middle">'
        f"{escape(title or 'Pass rate across the rule switch')}</text>",
    ]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" '
            f'stroke="#e5e5e5"/><text x="{left - 6}" y="{y(tick) + 4:.1f}" font-size="11" '
            f'text-anchor="end">{tick * 100:.0f}%</text>'
        )
    parts.append(
        f'<line x1="{x(found.switch_at):.1f}" x2="{x(found.switch_at):.1f}" y1="{top}" '
        f'y2="{top + plot_h}" stroke="#d6402f" stroke-width="1.5"/>'
        f'<text x="{x(found.switch_at) + 4:.1f}" y="{top + plot_h - 14}" font-size="11">rule '
        f"switch (episode {found.switch_at})</text>"
    )
    parts.append(
        f'<line x1="{left}" x2="{left + plot_w}" y1="{y(target):.1f}" y2="{y(target):.1f}" '
        f'stroke="#54a24b" stroke-dasharray="5,4"/><text x="{left + plot_w - 4}" '
        f'y="{y(target) + 14:.1f}" font-size="11" text-anchor="end">recovered: '
        f"{found.fraction:.0%} of the pre-switch rate</text>"
    )
    parts += [
        f'<polyline fill="none" stroke="#4c78a8" stroke-width="2" points="{" ".join(seg)}"/>'
        for seg in segments
        if seg
    ]
    for seed, episodes in found.per_seed.items():
        if episodes is not None:
            at = x(found.switch_at + episodes - 1)
            parts.append(
                f'<line x1="{at:.1f}" x2="{at:.1f}" y1="{top + plot_h}" y2="{top + plot_h - 8}" '
                f'stroke="#2e9e4f" stroke-width="2"><title>seed {escape(seed)}: '
                f"{episodes} episodes</title></line>"
            )
    for i in range(0, len(curve), max(1, len(curve) // 8)):
        parts.append(
            f'<text x="{x(i):.1f}" y="{top + plot_h + 16}" font-size="11" '
            f'text-anchor="middle">{i}</text>'
        )
    parts.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{height - 6}" font-size="11" '
        f'text-anchor="middle">training episode (moving window of {found.window}, mean over '
        f"{len(found.per_seed)} seeds): {escape(found.format())} to recover</text></svg>"
    )
    return "".join(parts)
