"""Synthetic episodes written with the real writer: for benchmarks, TUI tests and demos."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

from termgym._vocabulary import TERMINAL, EndClass
from termgym.recording._records import EpisodeEnd, EpisodeHeader, StepRecord
from termgym.recording._writer import EpisodeWriter

PROMPT = "\x1b[1;32magent@sandbox\x1b[0m:\x1b[1;34m/app\x1b[0m$ "
_WORDS = ["fuel", "load", "weight", "max", "plan", "route", "cargo", "limit", "policy", "leg"]
_COLOURS = ["31", "32", "33", "34", "35", "36", "1;37"]


def _output(rng: random.Random, size: int) -> tuple[str, str]:
    """(plain output, the same with colours) of about `size` characters."""
    plain: list[str] = []
    coloured: list[str] = []
    total = 0
    while total < size:
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 14)))
        line = f"{rng.randint(0, 999):03d} {words}"
        plain.append(line)
        coloured.append(f"\x1b[{rng.choice(_COLOURS)}m{line[:4]}\x1b[0m{line[4:]}")
        total += len(line) + 1
    return "\n".join(plain) + "\n", "\r\n".join(coloured) + "\r\n"


def synthetic_steps(
    steps: int, output_bytes: int = 1000, seed: int = 0, cols: int = TERMINAL.cols
) -> Iterator[StepRecord]:
    """Steps of a plausible agent session: coloured command output, a failing command now and
    then, a full-screen editor (alternate screen) opened and closed, and a final submit."""
    rng = random.Random(seed)
    t = 0.0
    for i in range(steps):
        duration = round(rng.uniform(0.005, 0.2), 4)
        if i == steps - 1 and steps > 1:
            yield StepRecord(i, "submit", "submit", "", None, 0.0, screen="", raw=b"", t=t)
            break
        if i % 499 == 5:
            action = "vim plan.yaml"
            body = "".join(f"\x1b[{r + 1};1H\x1b[34m~\x1b[0m" for r in range(1, 38))
            raw = f"vim plan.yaml\r\n\x1b[?1049h\x1b[H\x1b[2Jmax_weight: 150{body}"
            raw += '\x1b[40;1H"plan.yaml" 1L, 16B'
            yield StepRecord(i, "command", action, "", None, duration, raw=raw.encode(), t=t)
        elif i % 499 == 6:
            raw = "\x1b[?1049l" + PROMPT
            yield StepRecord(
                i, "keys", "<Esc>:wq<Enter>", "", None, duration, raw=raw.encode(), t=t
            )
        else:
            fails = i % 13 == 7
            action = f"python3 plan.py --leg {i}" if not fails else f"cat missing-{i}.txt"
            if fails:
                out = f"cat: missing-{i}.txt: No such file or directory\n"
                coloured = out.replace("\n", "\r\n")
            else:
                out, coloured = _output(rng, output_bytes)
            raw = f"{action}\r\n{coloured}{PROMPT}"
            yield StepRecord(
                i, "command", action, out, 1 if fails else 0, duration, raw=raw.encode(), t=t
            )
        t += duration + rng.uniform(0.01, 0.5)


def write_synthetic_episode(
    run_dir: Path,
    episode_id: str = "synthetic",
    steps: int = 200,
    output_bytes: int = 1000,
    *,
    task: str = "fuel-planner",
    variant: str = "contradicted",
    agent: str = "synthetic",
    episode_class: EndClass | None = "adapted",
    error: str | None = None,
    finished: bool = True,
    seed: int = 0,
    started: float = 1_790_000_000.0,
    with_screens: bool = True,
) -> Path:
    """Write a synthetic episode with EpisodeWriter; returns its JSONL path.

    Screens are emulated from the raw stream (as the environment does) when `with_screens`.
    """
    from termgym.screen import TerminalScreen

    header = EpisodeHeader(
        episode_id=episode_id,
        task=task,
        task_version=1,
        variant=variant,
        rules_visible={"max_weight": 150, "reserve_pct": 10} if variant != "withheld" else {},
        rules_enforced={"max_weight": 150, "reserve_pct": 10},
        seed=seed,
        agent=agent,
        backend="docker",
        versions={"termgym": "0.1.0"},
        started=started,
        initial_output=PROMPT.encode(),
    )
    screen = TerminalScreen(header.cols, header.rows)
    screen.feed(header.initial_output)
    with EpisodeWriter(run_dir, header) as writer:
        for step in synthetic_steps(steps, output_bytes, seed, header.cols):
            if with_screens:
                screen.feed(step.raw)
                step = StepRecord(**{**step.__dict__, "screen": screen.text()})
            writer.step(step)
        if finished:
            passed_new = episode_class in ("adapted", "both")
            passed_old = episode_class in ("stale", "both")
            writer.end(
                EpisodeEnd(
                    reward=1.0 if passed_new else 0.0,
                    terminated=True,
                    truncated=False,
                    verdicts={
                        variant: _verdict(variant, 150, passed_new),
                        "original": _verdict("original", 100, passed_old),
                    },
                    episode_class=episode_class if error is None else None,
                    error=error,
                    audit=[
                        {"kind": "leak", "message": "read graders/test_plan.py", "step": 3},
                        {"kind": "platform", "message": "mentioned the benchmark's name"},
                    ],
                    ended=started + 60.0,
                )
            )
    return writer.jsonl_path


def _verdict(ruleset: str, max_weight: int, passed: bool) -> dict:
    return {
        "ruleset": ruleset,
        "rules": {"max_weight": max_weight, "reserve_pct": 10},
        "passed": passed,
        "score": 1.0 if passed else 0.0,
        "error": None,
        "results": [{"grader": "tests", "passed": passed, "score": 1.0 if passed else 0.0}],
    }
