"""The Gymnasium idioms an RL practitioner reaches for first, each on a real env: specs,
TimeLimit, render modes, FlattenObservation, hashing spaces, closing."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.wrappers import FilterObservation, FlattenObservation, TimeLimit

import termgym
from termgym.env import TerminalText
from termgym.tasks import get_task

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_TASKS = ROOT / "examples" / "tasks"


def test_the_text_space_is_hashable_and_equal_by_its_bounds() -> None:
    spaces = {TerminalText(10), TerminalText(10), TerminalText(11)}
    assert len(spaces) == 2
    assert hash(TerminalText(5, min_length=1)) == hash(TerminalText(5, min_length=1))


def test_a_registered_spec_names_its_task_by_id_and_carries_its_step_limit() -> None:
    spec = gym.spec("termgym/text-report-v0")
    assert spec.kwargs == {"task": "text-report"}
    assert spec.max_episode_steps == get_task("text-report").spec.limits.max_steps
    text = spec.to_json()
    assert str(ROOT) not in text and json.loads(text)["kwargs"] == {"task": "text-report"}


def test_a_spec_json_made_elsewhere_makes_the_same_env_from_another_folder(tmp_path) -> None:
    text = gym.spec("termgym/fuel-planner-v0").to_json()
    script = (
        "import sys, gymnasium as gym, termgym\n"
        "from gymnasium.envs.registration import EnvSpec\n"
        "env = gym.make(EnvSpec.from_json(sys.stdin.read()), backend='local', allow_local=True)\n"
        "print(env.unwrapped.task_id, env.spec.max_episode_steps)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], input=text, capture_output=True, text=True,
        cwd=tmp_path, timeout=60, check=True,
    )  # fmt: skip
    limit = get_task("fuel-planner").spec.limits.max_steps
    assert done.stdout.split() == ["fuel-planner", str(limit)]


def test_tasks_registered_from_a_folder_resolve_by_id() -> None:
    ids = termgym.register_tasks(str(EXAMPLE_TASKS))
    assert "termgym/cargo-limit-v0" in ids
    assert gym.spec("termgym/cargo-limit-v0").kwargs == {"task": "cargo-limit"}
    assert gym.spec("termgym/cargo-limit-v0").max_episode_steps == 4
    assert get_task("cargo-limit").root == (EXAMPLE_TASKS / "cargo-limit").resolve()


def test_the_multi_task_env_refuses_a_render_mode_it_does_not_declare() -> None:
    refused = pytest.raises(ValueError, match=r"render_mode must be None or one of \['ansi'\]")
    with pytest.warns(UserWarning, match="not in the possible render_modes"), refused:
        gym.make("termgym/multi-v0", tasks=["cargo-limit"], render_mode="human")
    env = gym.make("termgym/multi-v0", tasks=["cargo-limit"], render_mode="ansi")
    assert env.unwrapped.render_mode == "ansi"
    env.close()


def test_flatten_observation_refuses_text_clearly_and_works_without_it() -> None:
    env = termgym.make("text-report", backend="local", allow_local=True)
    with pytest.raises(ValueError, match=r"cannot be flattened.*HashedText"):
        FlattenObservation(env)
    flat = FlattenObservation(FilterObservation(env, ["exit_code", "step"]))
    assert flat.observation_space.shape == (257 + env.options.max_steps + 1,)


def test_the_screen_space_bounds_a_screen_full_of_combining_characters() -> None:
    from termgym.screen import TerminalScreen

    env = termgym.make("text-report", backend="local", allow_local=True)
    screen = TerminalScreen(env.options.config.cols, env.options.config.rows)
    screen.feed(("a" + "\u0301" * 6 + "\u200d" * 3 + " ").encode() * 5000)
    assert env.observation_space["screen"].contains(screen.text())


@pytest.mark.bwrap
def test_time_limit_at_the_spec_limit_grades(base_rootfs) -> None:
    termgym.register_tasks(str(EXAMPLE_TASKS))
    env = gym.make("termgym/cargo-limit-v0", backend="bwrap", pool_size=0, shadow=False)
    try:
        env.reset(seed=0)
        for _ in range(3):
            env.step("echo 100 > answer")
        *_, truncated, info = env.step("true")  # step 4: the TimeLimit and the env's own end
        assert truncated and info["verdicts"]["original"]["passed"]
    finally:
        env.close()


@pytest.mark.bwrap
@pytest.mark.parametrize("steps", [1, 2])
def test_a_shorter_time_limit_is_graded_at_the_step_it_truncates(base_rootfs, steps) -> None:
    """gymnasium.make(id, max_episode_steps=N) below the task's limit: the env ends (and
    grades) the episode at the Nth step, as at its own limit; every episode after as well."""
    termgym.register_tasks(str(EXAMPLE_TASKS))
    env = gym.make("termgym/cargo-limit-v0", backend="bwrap", pool_size=0, shadow=False,
                   max_episode_steps=steps)  # fmt: skip
    try:
        for seed in range(2):
            env.reset(seed=seed)
            for step in range(1, steps + 1):
                _, reward, terminated, truncated, info = env.step("echo 100 > answer")
                assert truncated == (step == steps) and not terminated
            assert reward == 1.0 and info["verdicts"]["original"]["passed"]
            assert env.unwrapped.episode.finished
    finally:
        env.close()


@pytest.mark.bwrap
def test_a_time_limit_around_the_multi_task_env_is_graded_too(base_rootfs) -> None:
    env = TimeLimit(
        gym.make("termgym/multi-v0", tasks=[str(EXAMPLE_TASKS / "cargo-limit")],
                 backend="bwrap", pool_size=0, shadow=False, max_episode_steps=-1),
        max_episode_steps=2,
    )  # fmt: skip
    try:
        env.reset(seed=0)
        assert env.step("echo 100 > answer")[3] is False
        *_, truncated, info = env.step("true")
        assert truncated and info["verdicts"]["original"]["passed"]
    finally:
        env.close()


@pytest.mark.bwrap
def test_an_observation_with_unicode_stays_in_the_space_and_keeps_whole_lines(base_rootfs):
    env = termgym.make("text-report", backend="bwrap", pool_size=0)
    try:
        env.reset(seed=0)
        obs, *_ = env.step("printf 'caf\\u00e9 na\\u00efve abc\\u200bdef x\\u200dy tail\\n'")
        assert env.observation_space.contains(obs)
        assert "café naïve abc\u200bdef x\u200dy tail" in obs["screen"]
        obs, *_ = env.step("python3 -c \"print(('e' + '\\u0301' * 9) * 3000)\"")
        assert env.observation_space.contains(obs)
    finally:
        env.close()


@pytest.mark.docker
def test_closing_envs_leaves_no_container_running_in_the_process(base_image, run_id) -> None:
    from tests.env.test_cleanup import containers_of

    for _ in range(3):
        env = termgym.make("text-report", backend="docker", run_id=run_id, pool_size=1)
        env.reset(seed=0)
        env.step("true")
        env.close()
        assert containers_of(run_id) == []


@pytest.mark.bwrap
def test_reset_info_holds_exactly_the_documented_keys(base_rootfs) -> None:
    env = termgym.make("cargo-limit", backend="bwrap", pool_size=0)
    try:
        _, info = env.reset(seed=0)
    finally:
        env.close()
    doc = (ROOT / "docs" / "environment.md").read_text()
    paragraph = doc.split("`reset` returns an info", 1)[1].split("\n\n", 1)[0]
    assert sorted(info) == sorted(set(re.findall(r"`([a-z_]+)`", paragraph)) - {"reset"})


@pytest.mark.bwrap
@pytest.mark.parametrize("end", ["submit", "report", "stop", "max_steps"])
def test_every_steps_info_holds_the_documented_step_keys_the_last_ones_too(
    base_rootfs, end: str
) -> None:
    doc = (ROOT / "docs" / "environment.md").read_text()
    paragraph = doc.split("Each step's info holds", 1)[1].split(". ", 1)[0]
    step_keys = set(re.findall(r"`([a-z_]+)`", paragraph))
    assert step_keys == {
        "exit_code", "exited", "duration", "timed_out", "output_truncated", "shell_restarted",
        "step",
    }  # fmt: skip
    env = termgym.make(
        str(EXAMPLE_TASKS / "cargo-limit"), backend="bwrap", pool_size=0, max_steps=2
    )
    try:
        env.reset(seed=0)
        _, _, _, _, info = env.step("true")
        assert step_keys <= set(info) and info["step"] == 1
        if end == "submit":
            _, _, terminated, _, info = env.step(termgym.SUBMIT)
        elif end == "report":
            _, _, terminated, _, info = env.step(termgym.report_conflict("no"))
        elif end == "stop":
            _, _, terminated, _, info = env.unwrapped.stop()
        else:
            _, _, terminated, _, info = env.step("true")
        assert step_keys <= set(info) and "verdicts" in info, sorted(info)
        assert info["step"] == (2 if end == "max_steps" else 1)
        assert terminated == (end in ("submit", "report"))
    finally:
        env.close()
