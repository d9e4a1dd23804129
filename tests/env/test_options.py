"""Options of termgym.make and MultiTaskEnv that cannot work are refused when the env is
made, saying what was expected, instead of failing inside Gymnasium, at the first reset, or
being replaced silently by the task's own limit (max_steps=0, step_timeout=0)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import termgym
from termgym.env import MultiTaskEnv
from termgym.errors import UnknownBackend


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"max_steps": 0}, r"max_steps: expected an int >= 1 .* found 0"),
        ({"max_steps": -3}, r"max_steps: expected an int >= 1 .* found -3"),
        ({"max_steps": "5"}, r"max_steps: expected an int >= 1 .* found '5'"),
        ({"max_steps": 2.5}, r"max_steps: expected an int >= 1 .* found 2.5"),
        ({"step_timeout": -1}, r"step_timeout: expected a number of seconds > 0 .* found -1"),
        ({"step_timeout": "x"}, r"step_timeout: expected a number of seconds > 0 .* found 'x'"),
        ({"pool_size": -1}, r"pool_size: expected an int >= 0 .* found -1"),
        ({"pool_size": "2"}, r"pool_size: expected an int >= 0 .* found '2'"),
    ],
)
def test_a_limit_that_cannot_work_is_refused_when_the_env_is_made(
    options: dict[str, Any], expected: str
) -> None:
    with pytest.raises(ValueError, match=expected):
        termgym.make("fuel-planner", backend="bwrap", **options)
    with pytest.raises(ValueError, match=expected):
        MultiTaskEnv("*", backend="bwrap", **options)


def test_an_unknown_backend_is_refused_when_the_env_is_made() -> None:
    with pytest.raises(UnknownBackend, match=r"got 'dockr'. Did you mean 'docker'\?"):
        termgym.make("fuel-planner", backend="dockr")
    with pytest.raises(UnknownBackend, match=r"got 'dockr'. Did you mean 'docker'\?"):
        MultiTaskEnv("*", backend="dockr")


def test_multitaskenv_refuses_an_option_terminalenv_does_not_take() -> None:
    expected = r"unknown option\(s\) \['max_step'\]; expected .*max_steps.*Did you mean 'max_steps'"
    with pytest.raises(TypeError, match=expected):
        MultiTaskEnv("*", backend="bwrap", max_step=4)


def test_the_limits_that_work_are_taken() -> None:
    env = termgym.make("fuel-planner", backend="bwrap", max_steps=3, step_timeout=2, pool_size=0)
    try:
        assert env.options.max_steps == 3 and env.options.step_timeout == 2.0
        assert env.observation_space["step"].n == 4
    finally:
        env.close()


@pytest.mark.parametrize("seed", ["abc", 1.5])
def test_a_reset_seed_option_that_is_no_int_says_what_was_expected(seed: Any) -> None:
    env = termgym.make("fuel-planner", backend="bwrap", pool_size=0)
    try:
        with pytest.raises(ValueError, match=r"reset option 'seed': expected an int .*found"):
            env.reset(options={"seed": seed})
    finally:
        env.close()


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"record_dir": 5}, r"record_dir: expected a folder path \(str or Path\), found 5"),
        ({"recorder": 5}, r"recorder: expected a function of an episode's EpisodeHeader"),
    ],
)
def test_a_recording_option_of_the_wrong_kind_is_refused_when_the_env_is_made(
    options: dict[str, Any], expected: str
) -> None:
    """Before, record_dir=5 failed inside pathlib, and recorder=5 only at the first reset
    ('int' object is not callable)."""
    with pytest.raises(ValueError, match=expected):
        termgym.make("fuel-planner", backend="bwrap", **options)


def test_a_pool_lease_of_an_unknown_backend_or_size_is_refused() -> None:
    """docs/environment.md holds the shared pool open with PoolLease(backend, pool_size): a
    misspelt backend held a pool no env takes, and the envs started cold without a word."""
    from termgym.env import PoolLease

    with pytest.raises(UnknownBackend, match=r"got 'bwarp'. Did you mean 'bwrap'\?"):
        PoolLease("bwarp", 1)
    with pytest.raises(ValueError, match=r"PoolLease: expected a pool size, an int >= 0"):
        PoolLease("bwrap", -1)
    with PoolLease("bwrap", 1):
        pass


def test_a_runtime_for_a_backend_that_runs_no_container_is_refused_when_made() -> None:
    """It failed each sandbox start, at reset, as a SandboxStartError: an infrastructure
    error, which termgym run retried for every episode."""
    from termgym.errors import SandboxError

    expected = r"The bwrap backend takes no runtime; got runtime='runsc'"
    with pytest.raises(SandboxError, match=expected):
        termgym.make("fuel-planner", backend="bwrap", runtime="runsc")


def test_the_options_model_holds_every_keyword_terminalenv_takes() -> None:
    """`EnvOptions` is what every entry point parses: a TerminalEnv keyword it lacked would
    be refused by MultiTaskEnv and rollout as unknown."""
    import inspect

    from termgym.env import EnvOptions, TerminalEnv

    taken = [n for n in inspect.signature(TerminalEnv).parameters if n not in ("task", "variant")]
    assert list(EnvOptions.model_fields) == taken


def test_a_backend_is_checked_once_and_handed_down_as_its_typed_value() -> None:
    """MultiTaskEnv parses its options once; each task's env takes the Backend made there."""
    from termgym.sandbox import Backend

    env = MultiTaskEnv("*", backend="bwrap", pool_size=0)
    try:
        chosen = env.env_for(env.task_ids[0]).options.sandbox_backend
        assert chosen == Backend(name="bwrap", isolated=True, gateway=True)
        assert env.env_for(env.task_ids[-1]).options.sandbox_backend is chosen
    finally:
        env.close()
    assert Backend.coerce(chosen) is chosen


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"backend": 5}, r"backend: expected a backend name \(str\) or None, found 5"),
        ({"runtime": 5}, r"runtime: expected a Docker runtime name \(str, e.g. 'runsc'\)"),
        ({"agent": 5}, r"agent: input should be a valid string, found 5"),
        ({"mode": "key"}, r"mode must be one of \('command', 'keys'\), got 'key'"),
    ],
)
def test_an_option_of_the_wrong_kind_says_which_and_what_was_expected(
    options: dict[str, Any], expected: str
) -> None:
    with pytest.raises(ValueError, match=expected):
        termgym.make("fuel-planner", **{"backend": "bwrap", **options})
    with pytest.raises(ValueError, match=expected):
        MultiTaskEnv("*", **{"backend": "bwrap", **options})


def test_rollout_refuses_an_unknown_backend_before_any_episode(tmp_path: Path) -> None:
    """Each episode's env checked it, and rollout retried the UnknownBackend (a
    SandboxError) as an infrastructure error, episode after episode."""
    folder = tmp_path / "rollout"
    with pytest.raises(UnknownBackend, match=r"got 'dockr'. Did you mean 'docker'\?"):
        termgym.rollout(lambda messages, tools: "<submit>", "fuel-planner", backend="dockr",
                        record_dir=folder)  # fmt: skip
    assert not folder.exists()
    with pytest.raises(TypeError, match=r"rollout: unknown option\(s\) \['max_step'\]"):
        termgym.rollout(lambda messages, tools: "<submit>", "fuel-planner", max_step=3)
