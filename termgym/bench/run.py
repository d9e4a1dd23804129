"""`termgym run` throughput: episodes per minute at concurrency 1, 2, 4 and 8."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from termgym._vocabulary import Variant
from termgym.bench import Section


def _episodes_per_minute(
    concurrency: int, variants: tuple[Variant, ...], out: Path
) -> tuple[int, float]:
    from termgym.run import RunConfig, Runner

    config = RunConfig(agent="oracle", variants=variants, concurrency=concurrency, out=out)
    began = time.perf_counter()
    summary = Runner(config).run()
    wall = time.perf_counter() - began
    failed = [r for r in summary.results if r.status != "ok" or r.reward != 1.0]
    if failed:
        raise RuntimeError(f"{len(failed)} oracle episodes did not pass: {failed[0]}")
    return len(summary.results), wall


def bench_run(quick: bool = False) -> Section:
    """The run section of `python -m termgym.bench`: the oracle over every bundled task."""
    from termgym.sandbox import default_backend

    variants: tuple[Variant, ...] = (
        ("original", "contradicted")
        if quick
        else ("original", "contradicted", "withheld", "swapped", "sampled")
    )
    notes = [
        f"backend: {default_backend()}; agent: oracle; every bundled task x "
        f"{', '.join(variants)}; each figure is a fresh run (warm pools, shadow grading on)"
    ]
    with tempfile.TemporaryDirectory(prefix="termgym-bench-run-") as tmp:
        for concurrency in (1, 2, 4, 8):
            count, wall = _episodes_per_minute(concurrency, variants, Path(tmp) / f"c{concurrency}")
            notes.append(
                f"concurrency {concurrency}: {count} episodes in {wall:.1f} s = "
                f"{60 * count / wall:.0f} episodes per minute"
            )
    return Section(
        name="run", title="termgym run: episodes per minute", rows=(), notes=tuple(notes)
    )
