"""DiscreteCommands and HashedText on a real task in bwrap sandboxes: spaces, actions, features."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import termgym
from termgym.env import DiscreteCommands, HashedText

pytestmark = pytest.mark.bwrap

TASK = str(Path(__file__).resolve().parents[2] / "examples" / "tasks" / "cargo-limit")
COMMANDS = ["cat policy.txt", "echo 100 > answer", "echo 150 > answer"]


@pytest.fixture
def make_env(base_rootfs: str, run_id: str):
    made = []

    def make(**kwargs):
        options = {"backend": "bwrap", "run_id": run_id, "pool_size": 0, "shadow": False}
        env = termgym.make(TASK, **(options | kwargs))
        made.append(env)
        return env

    yield make
    for env in made:
        env.close()


@pytest.mark.filterwarnings("ignore:.*different from the unwrapped version")
@pytest.mark.parametrize("wrap", ["commands", "hashed", "both"])
def test_check_env_passes_on_the_wrapped_envs(make_env, wrap: str) -> None:
    env = make_env(max_steps=4)
    if wrap in ("hashed", "both"):
        env = HashedText(env, dim=32)
    if wrap in ("commands", "both"):
        env = DiscreteCommands(env, COMMANDS)
    check_env(env, skip_render_check=True)


def test_action_indices_run_their_commands_and_the_last_one_submits(make_env) -> None:
    env = DiscreteCommands(make_env(), COMMANDS)
    assert env.action_space.n == len(COMMANDS) + 1
    env.reset(seed=0)
    obs, *_ = env.step(0)
    assert "max_weight: 100" in obs["output"]
    env.step(1)
    obs, reward, terminated, truncated, info = env.step(len(COMMANDS))
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert info["variant"] == "original"


def test_without_a_submit_action_every_index_is_a_command(make_env) -> None:
    env = DiscreteCommands(make_env(), COMMANDS, submit_action=False)
    assert env.action_space.n == len(COMMANDS)
    assert env.action(len(COMMANDS) - 1) == COMMANDS[-1]


def test_an_action_outside_the_list_raises_with_the_valid_range(make_env) -> None:
    env = DiscreteCommands(make_env(), COMMANDS)
    with pytest.raises(ValueError, match=r"in \[0, 3\], got 4"):
        env.action(4)


@pytest.mark.parametrize("action", ["0", "cat policy.txt", 1.0, None, True, np.array([0, 1])])
def test_an_action_that_is_no_index_raises_saying_what_was_expected(make_env, action) -> None:
    env = DiscreteCommands(make_env(), COMMANDS)
    with pytest.raises(ValueError, match=r"the index of a command, an int in \[0, 3\]; got"):
        env.action(action)


def test_numpy_indices_are_indices(make_env) -> None:
    env = DiscreteCommands(make_env(), COMMANDS)
    assert (
        env.action(np.int64(1))
        == env.action(np.array(1))
        == env.action(np.array([1]))
        == COMMANDS[1]
    )


def test_hashed_features_tell_rule_values_apart_and_are_deterministic(make_env) -> None:
    vectors = {}
    for variant in ("original", "contradicted", "original"):
        env = HashedText(make_env(variant=variant), dim=64)
        first, _ = env.reset(seed=1)
        after_read, *_ = env.step("cat policy.txt")
        assert env.observation_space.contains(first) and env.observation_space.contains(after_read)
        vectors.setdefault(variant, []).append(after_read)
    assert np.array_equal(vectors["original"][0], vectors["original"][1])
    assert not np.array_equal(vectors["original"][0], vectors["contradicted"][0])
    size = 64 * 2 + 4
    assert vectors["original"][0].shape == (size,) and vectors["original"][0].dtype == np.float32


def test_hashed_tail_reports_exit_status_and_step_fraction(make_env) -> None:
    env = HashedText(make_env(max_steps=4), dim=16)
    obs, _ = env.reset(seed=0)
    assert obs[-4:].tolist() == [0.0, 0.0, 1.0, 0.0]  # no exit code yet, step 0
    obs, *_ = env.step("false")
    assert obs[-4:].tolist() == [0.0, 1.0, 0.0, 0.25]
    obs, *_ = env.step("true")
    assert obs[-4:].tolist() == [1.0, 0.0, 0.0, 0.5]


@pytest.mark.parametrize(
    ("commands", "message"),
    [
        ([], "non-empty list of commands"),
        ("cat policy.txt", "non-empty list of commands"),
        (["ls", "  "], "non-empty strings"),
        # a set's order changes between processes; a generator was consumed by the check,
        # leaving the submit action alone
        ({"cat policy.txt", "echo 100 > answer"}, "non-empty list of commands"),
        ((c for c in COMMANDS), "non-empty list of commands"),
    ],
)
def test_bad_command_lists_raise_saying_what_was_expected(make_env, commands, message) -> None:
    with pytest.raises(ValueError, match=message):
        DiscreteCommands(make_env(), commands)


def test_discrete_commands_refuses_an_env_in_keys_mode(make_env) -> None:
    with pytest.raises(ValueError, match="mode 'command', got 'keys'"):
        DiscreteCommands(make_env(mode="keys"), COMMANDS)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"dim": 4}, "at least 8, got 4"),
        (
            {"keys": ("output", "stdout")},
            r"among \['instruction', 'output', 'screen'\], got \('output', 'stdout'\)",
        ),
        ({"keys": ()}, "non-empty list"),
    ],
)
def test_bad_hashing_options_raise_saying_what_was_expected(make_env, kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        HashedText(make_env(), **kwargs)
