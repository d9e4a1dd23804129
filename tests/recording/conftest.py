"""Helpers that build synthetic episodes with the real writer."""

from __future__ import annotations

import time
from pathlib import Path

from termgym.recording import EpisodeEnd, EpisodeHeader, EpisodeWriter, StepRecord


def make_header(episode_id: str = "ep-1", **overrides: object) -> EpisodeHeader:
    values: dict = {
        "episode_id": episode_id,
        "task": "fuel-planner",
        "task_version": 1,
        "variant": "contradicted",
        "rules_visible": {"max_weight": 150},
        "rules_enforced": {"max_weight": 150},
        "seed": 7,
        "agent": "oracle",
        "backend": "docker",
        "versions": {"termgym": "0.1.0"},
        "started": time.time(),
        "initial_output": b"$ ",
    }
    values.update(overrides)
    return EpisodeHeader(**values)


def make_step(i: int, output: str | None = None) -> StepRecord:
    out = output if output is not None else f"line {i}\n"
    raw = f"echo {i}\r\n".encode() + out.replace("\n", "\r\n").encode() + b"$ "
    return StepRecord(
        index=i,
        mode="command",
        action=f"echo {i}",
        output=out,
        exit_code=0,
        duration=0.01,
        screen=f"$ echo {i}\n{out}$",
        raw=raw,
        t=i * 0.02,
    )


def write_episode(
    run_dir: Path, steps: int, episode_id: str = "ep-1", end: bool = True, **header: object
) -> Path:
    with EpisodeWriter(run_dir, make_header(episode_id, **header)) as writer:
        for i in range(steps):
            writer.step(make_step(i))
        if end:
            writer.end(
                EpisodeEnd(
                    reward=1.0,
                    terminated=True,
                    truncated=False,
                    verdicts={
                        "original": {"passed": False, "score": 0.0, "details": {}},
                        "contradicted": {"passed": True, "score": 1.0, "details": {}},
                    },
                    episode_class="adapted",
                )
            )
    return writer.jsonl_path
