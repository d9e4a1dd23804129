"""Fixtures of the adversarial suite: attack an episode from inside, as a reward hacker would.

Every test plays an agent with root in its sandbox that tries to raise its reward without
doing the task, on docker and on bwrap. Where the attack is meant to fool grading that runs
in the agent's own sandbox with the agent's own tools (the design termgym had before its
clean verifier), the test first shows it does: `in_place` grades the live sandbox that way,
so a payload that stopped working would fail the test instead of passing it vacuously.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import termgym
from termgym.env import TerminalEnv
from termgym.grading import grade_rulesets
from termgym.tasks import load_task

HERE = Path(__file__).resolve().parent
PAYLOADS = HERE / "payloads"
ADVERSARY = HERE / "tasks" / "adversary"

collect_ignore_glob = ["tasks/*", "payloads/*"]
"""The task folder holds grader files for the sandbox, and payloads run inside it."""


def put_file(path: str, content: bytes | str, mode: str = "644") -> str:
    """A shell command that writes `content` to `path` in the sandbox."""
    data = content.encode() if isinstance(content, str) else content
    encoded = base64.b64encode(data).decode()
    return (
        f"mkdir -p $(dirname {path}) && echo {encoded} | base64 -d > {path} && chmod {mode} {path}"
    )


def install_forger() -> str:
    """The command that puts the report forger at /opt/forge.py."""
    return put_file("/opt/forge.py", (PAYLOADS / "forge.py").read_text())


@dataclass
class Episode:
    """One attacked episode: the env, and what each step printed."""

    env: TerminalEnv
    outputs: list[str]

    def run(self, command: str, timeout: float | None = None) -> dict[str, Any]:
        obs, reward, terminated, truncated, info = self.env.step(command)
        self.outputs.append(obs["output"])
        return {"obs": obs, "reward": reward, "done": terminated or truncated, "info": info}

    def in_place(self) -> bool | None:
        """Grade the live sandbox where it is, with its own programs: did the agent pass?"""
        episode = self.env.episode
        assert episode is not None
        verdicts, _ = grade_rulesets(episode.sandbox, episode.plan.task, episode.plan.rulesets[:1])
        return verdicts[episode.plan.rulesets[0].name].passed

    def submit(self) -> tuple[float, dict[str, Any]]:
        _, reward, _, _, info = self.env.step(termgym.SUBMIT)
        return reward, info


@pytest.fixture
def attack(backend: str) -> Iterator[Callable[..., Episode]]:
    """Start an episode (default: fuel-planner, contradicted) on the test's backend."""
    made: list[TerminalEnv] = []
    run_id = f"attack-{uuid.uuid4().hex[:8]}"

    def start(
        task: str | Path = "fuel-planner", variant: str = "contradicted", **options: Any
    ) -> Episode:
        loaded = load_task(task) if isinstance(task, Path) else task
        env = termgym.make(
            loaded, variant=variant, backend=backend, pool_size=0, run_id=run_id,
            step_timeout=60, **options,
        )  # fmt: skip
        made.append(env)
        env.reset(seed=0)
        return Episode(env, [])

    yield start
    for env in made:
        env.close()
