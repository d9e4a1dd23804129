"""termgym in GEM: registered ids, gem.make_vec's vector loop with autoreset, GEM's wrappers."""

from __future__ import annotations

import pytest

gem = pytest.importorskip("gem")

from gem.wrappers.episode_tracking_wrapper import EpisodeTrackingWrapper  # noqa: E402

from termgym.adapters import gem as termgym_gem  # noqa: E402

from .conftest import MEMORIZED, READ_LIMIT  # noqa: E402

pytestmark = pytest.mark.bwrap


def test_a_vector_of_two_runs_through_gems_loop_and_reports_the_verdicts(cargo: str) -> None:
    ids = termgym_gem.register()
    assert "termgym:all" in ids and "termgym:fuel-planner" in ids
    vec = gem.make_vec(
        ["termgym:all"] * 2, wrappers=[EpisodeTrackingWrapper], tasks=[cargo],
        variant="contradicted", backend="bwrap", seed=7,
    )  # fmt: skip
    try:
        obs, _ = vec.reset(seed=7)
        assert all("Task:\nThe loading desk" in o for o in obs)
        obs, rewards, terminated, _, infos = vec.step(
            [f"```bash\n{READ_LIMIT}\n```", f"```bash\n{MEMORIZED}\n```"]
        )
        assert list(rewards) == [0.0, 0.0] and not terminated.any()
        assert all("Exit code: 0" in o for o in obs)
        obs, rewards, terminated, _, infos = vec.step(["SUBMIT", "SUBMIT"])
        assert list(rewards) == [1.0, 0.0] and terminated.all()
        # SAME_STEP autoreset: the infos are the next episode's, carrying the last one's end
        assert [i["prev_episode"]["class"] for i in infos] == ["adapted", "stale"]
        assert [i["prev_ep_cumulative_rewards"] for i in infos] == [1.0, 0.0]
        assert all("Task:" in o for o in obs) and all("contradicted" not in o for o in obs)
    finally:
        for env in vec.envs:
            env.close()


def test_an_unparsable_reply_is_an_observation_not_an_exception(cargo: str) -> None:
    env = gem.make("termgym:all", tasks=[cargo], backend="bwrap")
    try:
        env.reset(seed=1)
        obs, reward, terminated, truncated, info = env.step("hmm")
        assert "no code block and was not SUBMIT" in obs and info["parse_error"]
        assert "tool" not in obs  # GEM offers no tools: none is named
        assert (reward, terminated, truncated) == (0.0, False, False)
        assert env.sample_random_action().startswith("```bash")
    finally:
        env.close()


def test_spawn_keeps_the_configuration_and_the_copy_runs_an_episode_of_it(cargo: str) -> None:
    termgym_gem.register()
    parent = gem.make(
        "termgym:all", tasks=[cargo], variant={"contradicted": 1}, backend="bwrap", seed=3,
        max_output_chars=4000,
    )  # fmt: skip
    child = parent.unwrapped.spawn(seed=4)
    try:
        assert child.config == {**parent.unwrapped.config, "seed": 4}
        assert child.chat.budget.max_chars == 4000
        obs, _ = child.reset()
        assert child.chat.env.options.backend == "bwrap"
        assert "Task:\nThe loading desk" in obs and "tool" not in obs  # no tools offered
        child.step(f"```bash\n{READ_LIMIT}\n```")
        _, reward, terminated, _, info = child.step("SUBMIT")
        assert (reward, terminated) == (1.0, True)
        assert (info["variant"], info["class"]) == ("contradicted", "adapted")
        with pytest.warns(UserWarning, match="kept the seed"):
            parent.unwrapped.spawn().close()
        with pytest.raises(NotImplementedError, match="cannot be duplicated"):
            parent.unwrapped.spawn(same_state=True)
    finally:
        child.close()
        parent.close()
