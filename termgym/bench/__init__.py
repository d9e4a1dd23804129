"""Speed benchmarks as named sections: `python -m termgym.bench [section ...]`.

Each section is a function returning a `Section` (rows of measurements plus free text such
as ratios). Sections register here by name as "module:function" strings, imported only when
run, so another engineer adds one by writing a module and one `register()` line below.
"""

from __future__ import annotations

import importlib
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

__all__ = ["Row", "Section", "register", "run_section", "sections", "timings_row"]


@dataclass(frozen=True)
class Row:
    """One measured thing: percentiles in milliseconds over `n` repetitions."""

    label: str
    n: int
    p50_ms: float
    p99_ms: float
    mean_ms: float


@dataclass(frozen=True)
class Section:
    """A benchmark section's result: a table and notes (ratios, targets, what was skipped)."""

    name: str
    title: str
    rows: tuple[Row, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)

    def markdown(self) -> str:
        lines = [
            "| what | n | p50 (ms) | p99 (ms) | mean (ms) |",
            "| --- | ---: | ---: | ---: | ---: |",
        ]
        for row in self.rows:
            lines.append(
                f"| {row.label} | {row.n} | {_fmt(row.p50_ms)} | {_fmt(row.p99_ms)} "
                f"| {_fmt(row.mean_ms)} |"
            )
        parts = ["\n".join(lines)] if self.rows else []
        if self.notes:
            parts.append("\n".join(f"- {note}" for note in self.notes))
        return "\n\n".join(parts)


def _fmt(ms: float) -> str:
    return f"{ms:.3f}" if ms < 10 else f"{ms:.1f}"


def timings_row(label: str, seconds: Sequence[float]) -> Row:
    """Summarize wall times (seconds) as a Row in milliseconds (p99 by nearest rank)."""
    ordered = sorted(seconds)
    rank = max(0, min(len(ordered) - 1, round(0.99 * len(ordered)) - 1))
    return Row(
        label=label,
        n=len(ordered),
        p50_ms=statistics.median(ordered) * 1000,
        p99_ms=ordered[rank] * 1000,
        mean_ms=statistics.fmean(ordered) * 1000,
    )


_registry: dict[str, str] = {}


def register(name: str, target: str) -> None:
    """Register a section: `target` is "module:function", the function returns a Section."""
    _registry[name] = target


def sections() -> list[str]:
    """Names of the registered sections, in registration order."""
    return list(_registry)


def run_section(name: str, *, quick: bool = False) -> Section:
    """Import and run one section (`quick`: fewer repetitions)."""
    module_name, _, attr = _registry[name].partition(":")
    function: Callable[..., Section] = getattr(importlib.import_module(module_name), attr)
    return function(quick=quick)


register("sandbox", "termgym.bench.sandbox:bench_sandbox")
register("grading", "termgym.bench.grading:bench_grading")
register("env", "termgym.bench.env:bench_env")
register("run", "termgym.bench.run:bench_run")
register("training", "termgym.bench.training:bench_training")
register("recording", "termgym.bench.recording:bench_recording")
register("async", "termgym.bench.asyncio_env:bench_async")
register("terminal", "termgym.bench.terminal:bench_terminal")
register("inputs", "termgym.bench.inputs:bench_inputs")
register("scale", "termgym.bench.scale:bench_scale")
register("short", "termgym.bench.short:bench_short")
register("imported", "termgym.bench.imported:bench_imported")
register("rl", "termgym.bench.rl:bench_rl")
register("agents", "termgym.bench.agents:bench_agents")
