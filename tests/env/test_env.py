"""TerminalEnv on real tasks in real Docker sandboxes: API, spaces, grading, recording."""

from __future__ import annotations

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import termgym
from termgym.errors import ActionError
from termgym.recording import read_episode
from tests.env.conftest import memorized_command, oracle_command, type_until
from tests.sandbox.conftest import wait_until_running

pytestmark = pytest.mark.docker


@pytest.fixture
def env(base_image: str, run_id: str):
    env = termgym.make("fuel-planner", variant="contradicted", run_id=run_id, pool_size=0)
    yield env
    env.close()


def test_check_env_passes_on_a_real_task(base_image: str, run_id: str) -> None:
    env = termgym.make("text-report", run_id=run_id, pool_size=0, max_steps=4)
    try:
        check_env(env, skip_render_check=True)
    finally:
        env.close()


def test_gymnasium_make_finds_every_bundled_task() -> None:
    ids = termgym.env.registered_ids()
    assert "termgym/fuel-planner-v0" in ids
    assert len(ids) >= 12
    spec = gym.spec("termgym/fuel-planner-v0")
    assert spec.entry_point == "termgym.env._env:TerminalEnv"


def test_real_terminal_text_is_in_the_observation_space(env) -> None:
    obs, _ = env.reset(seed=3)
    obs, reward, terminated, truncated, info = env.step("printf 'a b\\n\\tc ✓ é 中文 \\x01!\\n'")
    assert "a b\n\tc ✓ é 中文" in obs["output"]
    assert env.observation_space.contains(obs)
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert info["exit_code"] == 0 and float(info["duration"]) > 0


def test_shell_state_persists_and_exit_codes_are_reported(env) -> None:
    env.reset(seed=0)
    env.step('cd /tmp && export GREETING=hi && greet() { echo "$GREETING $1"; }')
    obs, *_, info = env.step("greet there; pwd; (exit 7)")
    assert obs["output"] == "hi there\n/tmp\n"
    assert obs["exit_code"] == 7 and info["exit_code"] == 7


def test_nothing_seen_during_the_episode_names_the_variant_or_hidden_value(env) -> None:
    obs, info = env.reset(seed=0)
    seen = [repr(obs), repr(info)]
    for action in ["cat policy/fuel_policy.json", "ls -R /app", "env | sort"]:
        obs, _, _, _, info = env.step(action)
        seen += [repr(obs), repr(info)]
    text = "\n".join(seen)
    assert "contradicted" not in text
    assert "rules_enforced" not in text and "verdicts" not in text
    drawn = env.episode.plan.rules_enforced["max_weight"]  # drawn per episode, never 100
    assert drawn != 100
    assert f'"max_weight": {drawn}' in text  # the contradicted value is what the agent reads


def test_oracle_on_contradicted_adapts_and_memorized_goes_stale(env) -> None:
    env.reset(seed=0)
    env.step(oracle_command("fuel-planner"))
    _, reward, terminated, truncated, info = env.step(termgym.SUBMIT)
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert info["class"] == "adapted"
    assert info["verdicts"]["contradicted"]["passed"] is True
    assert info["verdicts"]["original"]["passed"] is False

    env.reset(seed=0)
    env.step(memorized_command("fuel-planner"))
    _, reward, terminated, _, info = env.step(termgym.SUBMIT)
    assert terminated and reward < 1.0
    assert info["class"] == "stale"


def test_step_limit_truncates_and_still_grades(base_image: str, run_id: str) -> None:
    env = termgym.make("fuel-planner", max_steps=2, run_id=run_id, pool_size=0)
    try:
        env.reset(seed=0)
        env.step(oracle_command("fuel-planner"))
        _, reward, terminated, truncated, info = env.step("true")
        assert (terminated, truncated) == (False, True)
        assert reward == 1.0 and info["verdicts"]["original"]["passed"] is True
        with pytest.raises(gym.error.ResetNeeded):
            env.step("true")
    finally:
        env.close()


def test_reset_options_choose_the_variant_and_reject_unknown_ones(env) -> None:
    obs, _ = env.reset(seed=0, options={"variant": "original"})
    env.step("true")
    _, _, _, _, info = env.step(termgym.SUBMIT)
    assert info["variant"] == "original" and info["rules_enforced"]["max_weight"] == 100
    with pytest.raises(ValueError, match="unknown reset option"):
        env.reset(options={"varaint": "original"})


def test_bad_actions_say_what_was_expected(env) -> None:
    env.reset(seed=0)
    with pytest.raises(ActionError, match="an action is a str"):
        env.step(42)


def test_step_before_reset_asks_for_reset(env) -> None:
    with pytest.raises(gym.error.ResetNeeded):
        env.step("true")


def test_render_ansi_gives_the_screen(base_image: str, run_id: str) -> None:
    env = termgym.make("text-report", render_mode="ansi", run_id=run_id, pool_size=0)
    try:
        env.reset(seed=0)
        env.step("echo rendered-line")
        screen = env.render()
        assert "$ echo rendered-line" in screen and "rendered-line" in screen.splitlines()[1]
    finally:
        env.close()


def test_keys_mode_drives_an_interactive_program(base_image: str, run_id: str) -> None:
    env = termgym.make("text-report", mode="keys", run_id=run_id, pool_size=0)
    try:
        env.reset(seed=0)
        _, printed = type_until(
            env, "python3 -c \"n=input('name? '); print('hi', n)\"<Enter>", output="name? "
        )
        assert "name?" in printed
        obs, printed = type_until(env, "ada<Enter>", output="hi ada")
        assert "hi ada" in printed
        assert "hi ada" in obs["screen"]
        env.step("sleep 30.217<Enter>")
        wait_until_running(env.episode.sandbox, "sleep 30.217")  # Ctrl-C meets it running
        _, printed = type_until(env, "<C-c>echo back<Enter>", output="\nback")
        assert "back" in printed
    finally:
        env.close()


def test_episodes_are_recorded_step_by_step(tmp_path, base_image: str, run_id: str) -> None:
    env = termgym.make(
        "fuel-planner",
        variant="withheld",
        record_dir=tmp_path,
        agent="tester",
        run_id=run_id,
        pool_size=0,
    )
    try:
        env.reset(seed=5)
        env.step("echo one")
        env.step("echo two")
        *_, info = env.step(termgym.SUBMIT)
    finally:
        env.close()
    log = read_episode(info["episode_file"])
    assert log.header.task == "fuel-planner" and log.header.variant == "withheld"
    assert log.header.agent == "tester" and log.header.seed == 5
    assert [s.action for s in log.steps] == ["echo one", "echo two"]
    assert log.steps[1].output == "two\n"
    assert log.end is not None and log.end.episode_class in ("stale", "both", "neither", "adapted")
    assert "withheld" in log.end.verdicts and "original" in log.end.verdicts


class ListRecorder:
    """A recorder of the user's own (Recorder protocol): keeps what it receives in lists."""

    def __init__(self, header) -> None:
        self.header, self.steps, self.ends, self.closed = header, [], [], 0

    def step(self, record) -> None:
        self.steps.append(record)

    def end(self, record) -> None:
        self.ends.append(record)

    def close(self) -> None:
        self.closed += 1


def test_the_env_records_each_episode_with_the_recorder_it_is_given(
    base_image: str, run_id: str
) -> None:
    made: list[ListRecorder] = []

    def recorder(header) -> ListRecorder:
        made.append(ListRecorder(header))
        return made[-1]

    env = termgym.make(
        "fuel-planner", variant="withheld", recorder=recorder, agent="tester", run_id=run_id,
        pool_size=0,
    )  # fmt: skip
    try:
        for seed in (5, 6):
            env.reset(seed=seed)
            env.step("echo one")
            *_, info = env.step(termgym.SUBMIT)
    finally:
        env.close()
    assert [r.header.seed for r in made] == [5, 6]
    assert all(r.header.agent == "tester" and r.header.task == "fuel-planner" for r in made)
    assert [[s.action for s in r.steps] for r in made] == [["echo one"]] * 2
    assert all(r.steps[0].output == "one\n" for r in made)
    assert [len(r.ends) for r in made] == [1, 1] and all(r.closed >= 1 for r in made)
    assert "withheld" in made[0].ends[0].verdicts
    assert info["episode_file"] is None  # the recorder writes no file of termgym's


def test_record_dir_and_a_recorder_together_are_refused(tmp_path) -> None:
    with pytest.raises(ValueError, match="record_dir or recorder, not both"):
        termgym.make("fuel-planner", record_dir=tmp_path, recorder=ListRecorder, backend="local",
                     allow_local=True)  # fmt: skip


def test_withholding_weak_verdicts_still_pays_a_verdict_whose_defences_held(
    base_image: str, run_id: str
) -> None:
    """`weak_isolation="withhold"` takes only the reward of a verdict graded with a defence
    not holding (tests/security/test_snapshot_grading.py); a clean verifier's pays."""
    env = termgym.make(
        "fuel-planner", variant="contradicted", run_id=run_id, pool_size=0,
        weak_isolation="withhold",
    )  # fmt: skip
    try:
        env.reset(seed=0)
        env.step(oracle_command("fuel-planner"))
        _, reward, _, _, info = env.step(termgym.SUBMIT)
        assert info["grading"]["isolation"] == [] and "unpaid" not in info["grading"]
        assert reward == 1.0
    finally:
        env.close()


def test_an_unknown_weak_isolation_policy_says_what_was_expected() -> None:
    with pytest.raises(ValueError, match=r"weak_isolation must be one of \('pay', 'withhold'\)"):
        termgym.make("fuel-planner", weak_isolation="zero", backend="local", allow_local=True)
