"""Keys mode is a person's terminal: prompt, echo, history, completion and vim, on both backends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import termgym
from tests.conftest import BACKENDS
from tests.env.conftest import type_until

pytestmark = pytest.mark.parametrize("backend", BACKENDS, indirect=True)
PROMPT = "root@sandbox:/app# "


@pytest.fixture
def keys_env(backend: str, run_id: str, tmp_path):
    env = termgym.make(
        "text-report", mode="keys", backend=backend, run_id=run_id, pool_size=0,
        record_dir=tmp_path,
    )  # fmt: skip
    yield env
    env.close()


def test_the_episode_opens_at_a_prompt_and_up_enter_reruns_a_command(keys_env) -> None:
    obs, _ = keys_env.reset(seed=0)
    assert obs["screen"].splitlines()[0] == "root@sandbox:/app#"
    _, printed = type_until(keys_env, "echo run-$((20+1))<Enter>", output=PROMPT)
    assert printed.replace("\r", "") == "echo run-$((20+1))\nrun-21\nroot@sandbox:/app# "
    obs, _ = type_until(keys_env, "<Up><Enter>", output=PROMPT)
    assert obs["screen"].splitlines()[2:4] == ["root@sandbox:/app# echo run-$((20+1))", "run-21"]
    obs, _ = type_until(keys_env, "head -1 SP<Tab><Enter>", output=PROMPT)
    assert obs["screen"].splitlines()[4] == "root@sandbox:/app# head -1 SPEC.md"
    *_, info = keys_env.step(termgym.SUBMIT)
    cast = Path(info["episode_file"]).with_suffix(".cast").read_text().splitlines()
    assert json.loads(cast[1]) == [0.0, "o", "root@sandbox:/app# "]  # replay opens at the prompt


def test_lone_surrogates_are_typed_not_raised(keys_env) -> None:
    """An undecodable byte (U+DCFF) is typed as itself, any other lone surrogate (a model's
    JSON escape) as U+FFFD: UTF-8 cannot hold them, and env.step raised."""
    keys_env.reset(seed=0)
    _, printed = type_until(keys_env, "printf 'x\udcff\ud800' | od -An -tx1<Enter>", output=PROMPT)
    assert "78 ff ef bf bd" in printed


def test_a_file_is_edited_in_vim_through_keys(keys_env) -> None:
    keys_env.reset(seed=0)
    obs, _ = type_until(keys_env, "vim notes.txt<Enter>", screen='"notes.txt" [New]')
    assert obs["screen"].splitlines()[1] == "~"
    obs, _ = type_until(keys_env, "iedited in vim<Esc>", screen="edited in vim")
    assert obs["screen"].splitlines()[0] == "edited in vim"
    type_until(keys_env, "yyp:s/vim/keys mode/<Enter>", screen="edited in keys mode")
    back = "root@sandbox:/app# vim notes.txt\nroot@sandbox:/app#"
    obs, _ = type_until(keys_env, ":wq<Enter>", screen=back)
    assert obs["screen"].splitlines()[:2] == [
        "root@sandbox:/app# vim notes.txt",
        "root@sandbox:/app#",
    ]  # vim left the alternate screen; the shell's screen is back
    _, printed = type_until(keys_env, "cat notes.txt<Enter>", output=PROMPT)
    assert printed == "cat notes.txt\nedited in vim\nedited in keys mode\nroot@sandbox:/app# "
