"""Fixtures of the report tests: real run folders written by the recording writer."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from termgym.recording import EpisodeEnd, EpisodeHeader, EpisodeWriter, StepRecord

ORIGINAL = {"max_weight": 100, "fuel_reserve": 0.1}
CONTRADICTED = {"max_weight": 150, "fuel_reserve": 0.1}


def _rules(variant: str) -> dict[str, Any]:
    return dict(ORIGINAL if variant != "contradicted" else CONTRADICTED)


def write_episode(
    run_dir: Path,
    *,
    task: str,
    variant: str,
    agent: str,
    passed: bool,
    episode_class: str | None = None,
    actions: Iterable[str] = ("ls",),
    outputs: Iterable[str] | None = None,
    transcript: list[Mapping[str, Any]] | None = None,
    error: str | None = None,
    reported: Iterable[StepRecord] = (),
) -> str:
    """Record one episode the way the environment does; returns its id."""
    # numbered within the run, as the runner does: two runs share episode ids
    index = (
        len(list((run_dir / "episodes").glob("*.jsonl"))) if (run_dir / "episodes").is_dir() else 0
    )
    episode_id = f"{task}-{variant}-{index:03d}"
    enforced = _rules(variant)
    visible = dict(enforced)
    if variant == "withheld":
        visible.pop("fuel_reserve")
    policy = "\n".join(f"{k}: {v}" for k, v in visible.items())
    header = EpisodeHeader(
        episode_id=episode_id,
        task=task,
        task_version=1,
        variant=variant,
        rules_visible=visible,
        rules_enforced=enforced,
        seed=1,
        agent=agent,
        backend="docker",
        versions={},
        started=0.0,
        run_id=run_dir.name,
        extra={
            "instruction": "Plan the loads; respect policy/fuel.yaml.",
            "visible_files": {"policy/fuel.yaml": policy},
        },
    )
    writer = EpisodeWriter(run_dir, header)
    actions = list(actions)
    outputs = list(outputs) if outputs is not None else ["" for _ in actions]
    for i, (action, output) in enumerate(zip(actions, outputs, strict=True)):
        writer.step(
            StepRecord(
                index=i,
                mode="command",
                action=action,
                output=output,
                exit_code=0,
                duration=0.01,
                t=float(i),
            )
        )
    for step in reported:  # the steps the agent's own log reports, before the end line
        writer.step(step)
    verdicts = {variant: {"rules": enforced, "passed": passed, "score": float(passed)}}
    if variant != "original":
        verdicts["original"] = {
            "rules": dict(ORIGINAL),
            "passed": episode_class in ("stale", "both"),
            "score": 0.0,
        }
    writer.end(
        EpisodeEnd(
            reward=float(passed) if not error else 0.0,
            terminated=True,
            truncated=False,
            verdicts=verdicts if not error else {},
            episode_class=episode_class if not error else None,
            error=error,
            extra={"transcript": transcript or []},
        )
    )
    writer.close()
    return episode_id


RunFactory = Callable[..., Path]


@pytest.fixture
def make_run(tmp_path: Path) -> RunFactory:
    """make_run(name, agent, n_tasks, pass_original, pass_contradicted, ...) -> run folder.

    Each task gets `per_task` original and contradicted episodes; in contradicted episodes a
    pass is "adapted" and a failure "stale" (the agent kept the original rule).
    """

    def make(
        name: str = "run",
        agent: str = "oracle",
        n_tasks: int = 3,
        per_task: int = 2,
        pass_original: float = 1.0,
        pass_contradicted: float = 1.0,
        withheld: bool = True,
    ) -> Path:
        run_dir = tmp_path / name
        run_dir.mkdir()
        (run_dir / "run.json").write_text(json.dumps({"run_id": name, "agent": agent}))
        for t in range(n_tasks):
            for k in range(per_task):
                task = f"task-{t}"
                write_episode(
                    run_dir,
                    task=task,
                    variant="original",
                    agent=agent,
                    passed=k < pass_original * per_task,
                    episode_class=None,
                )
                passed = k < pass_contradicted * per_task
                limit = 150 if passed else 100
                write_episode(
                    run_dir,
                    task=task,
                    variant="contradicted",
                    agent=agent,
                    passed=passed,
                    episode_class="adapted" if passed else "stale",
                    actions=[f"python3 plan.py --max-weight {limit}"],
                )
                if withheld:
                    write_episode(
                        run_dir,
                        task=task,
                        variant="withheld",
                        agent=agent,
                        passed=passed,
                        episode_class="adapted" if passed else "stale",
                    )
        return run_dir

    return make
