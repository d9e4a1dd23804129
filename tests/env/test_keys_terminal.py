"""Keys mode is a person's terminal: prompt, echo, history, completion and vim, on both backends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import termgym
from tests.conftest import BACKENDS

pytestmark = pytest.mark.parametrize("backend", BACKENDS, indirect=True)


@pytest.fixture
def keys_env(backend: str, run_id: str, tmp_path):
    env = termgym.make(
        "text-report", mode="keys", backend=backend, run_id=run_id, pool_size=0,
        record_dir=tmp_path,
    )  # fmt: skip
    yield env
    env.close()


def _step_until(env, action: str, shown: str, tries: int = 20) -> dict:
    """Type `action`, then wait (empty actions) until `shown` is on the screen: a program that
    starts slower than keys mode's quiet period (vim on a busy machine) draws a moment later."""
    obs, *_ = env.step(action)
    for _ in range(tries):
        if shown in obs["screen"]:
            return obs
        obs, *_ = env.step("")
    raise AssertionError(f"{shown!r} never showed:\n{obs['screen']}")


def test_the_episode_opens_at_a_prompt_and_up_enter_reruns_a_command(keys_env) -> None:
    obs, _ = keys_env.reset(seed=0)
    assert obs["screen"].splitlines()[0] == "root@sandbox:/app#"
    obs, *_ = keys_env.step("echo run-$((20+1))<Enter>")
    assert obs["output"].replace("\r", "") == "echo run-$((20+1))\nrun-21\nroot@sandbox:/app# "
    obs, *_ = keys_env.step("<Up><Enter>")
    assert obs["screen"].splitlines()[2:4] == ["root@sandbox:/app# echo run-$((20+1))", "run-21"]
    obs, *_ = keys_env.step("head -1 SP<Tab><Enter>")
    assert obs["screen"].splitlines()[4] == "root@sandbox:/app# head -1 SPEC.md"
    *_, info = keys_env.step(termgym.SUBMIT)
    cast = Path(info["episode_file"]).with_suffix(".cast").read_text().splitlines()
    assert json.loads(cast[1]) == [0.0, "o", "root@sandbox:/app# "]  # replay opens at the prompt


def test_a_file_is_edited_in_vim_through_keys(keys_env) -> None:
    keys_env.reset(seed=0)
    obs = _step_until(keys_env, "vim notes.txt<Enter>", '"notes.txt" [New]')
    assert obs["screen"].splitlines()[1] == "~"
    obs, *_ = keys_env.step("iedited in vim<Esc>")
    assert obs["screen"].splitlines()[0] == "edited in vim"
    obs, *_ = keys_env.step("yyp:s/vim/keys mode/<Enter>")
    obs = _step_until(keys_env, ":wq<Enter>", "root@sandbox:/app#")
    assert obs["screen"].splitlines()[:2] == [
        "root@sandbox:/app# vim notes.txt",
        "root@sandbox:/app#",
    ]  # vim left the alternate screen; the shell's screen is back
    obs, *_ = keys_env.step("cat notes.txt<Enter>")
    assert obs["output"] == "cat notes.txt\nedited in vim\nedited in keys mode\nroot@sandbox:/app# "
