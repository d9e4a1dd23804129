"""ChatEnv on a real bwrap sandbox: messages in, messages out, verdicts kept from the model."""

from __future__ import annotations

import asyncio
import json

import pytest

import termgym
from termgym.chat import ChatEnv, ObservationBudget, grading_metadata

from .conftest import READ_LIMIT, bash_call

pytestmark = pytest.mark.bwrap


def all_text(messages: list[dict]) -> str:
    return "\n".join(str(m.get("content") or "") for m in messages)


def test_a_tool_call_episode_is_graded_and_its_verdicts_stay_out_of_the_messages(
    cargo: str, run_id: str
) -> None:
    chat = ChatEnv(
        termgym.make(
            cargo,
            variant="contradicted",
            backend="bwrap",
            run_id=run_id,
            rule_draw={"contradict": "fixed"},  # the authored 150, which the test expects
        )
    )
    try:
        opening, _ = chat.reset(seed=1)
        assert [m["role"] for m in opening] == ["system", "user"]
        assert opening[1]["content"].startswith("Task:\nThe loading desk")
        new, reward, terminated, _, info = chat.step(bash_call("cat policy.txt"))
        assert new[0]["role"] == "tool" and new[0]["tool_call_id"] == "c1"
        assert "max_weight: 150" in new[0]["content"] and "Exit code: 0" in new[0]["content"]
        assert (reward, terminated, info["action"]) == (0.0, False, "cat policy.txt")
        chat.step(f"Writing it.\n```bash\n{READ_LIMIT}\n```")
        new, reward, terminated, truncated, info = chat.step(
            {"role": "assistant", "tool_calls": [{"id": "s", "function": {"name": "submit"}}]}
        )
        assert (reward, terminated, truncated) == (1.0, True, False)
        assert info["class"] == "adapted" and new[0]["tool_call_id"] == "s"
        meta = chat.metadata()
        assert meta["variant"] == "contradicted" and meta["adapted"] and not meta["stale"]
        assert meta["passed"] is True and meta["passed_original"] is False
        # one behaviour: the final info alone gives the reward the step paid
        assert grading_metadata(info) == meta and meta["reward"] == reward == 1.0
        assert grading_metadata({"step": 1})["reward"] is None  # not an episode's end
        text = all_text(chat.messages)
        assert "contradicted" not in text and "adapted" not in text and "verdict" not in text
    finally:
        chat.close()


def test_a_withheld_rule_appears_in_no_message(cargo: str, run_id: str) -> None:
    chat = ChatEnv(termgym.make(cargo, variant="withheld", backend="bwrap", run_id=run_id))
    try:
        chat.reset(seed=2)
        chat.step(bash_call("cat policy.txt; ls"))
        chat.step("```bash\necho 150 > answer\n```")
        _, reward, *_ = chat.step("SUBMIT")
        assert reward == 0.0
        assert str(chat.metadata()["rules_enforced"]["max_weight"]) == "100"
        text = all_text(chat.messages)
        assert "100" not in text and "withheld" not in text
    finally:
        chat.close()


def test_a_reply_without_an_action_gets_an_error_and_the_turn_budget_ends_it(
    cargo: str, run_id: str
) -> None:
    chat = ChatEnv(termgym.make(cargo, backend="bwrap", run_id=run_id), max_turns=2)
    try:
        chat.reset(seed=3)
        new, reward, terminated, truncated, info = chat.step("I am not sure what to do.")
        assert new == [{"role": "user", "content": new[0]["content"]}]
        assert (
            "no tool call, no code block" in new[0]["content"]
            and "1 turn left" in new[0]["content"]
        )
        assert info["parse_error"] and (terminated, truncated) == (False, False)
        new, reward, terminated, truncated, info = chat.step("Still thinking.")
        assert (terminated, truncated) == (False, True)
        assert info["class"] is None and info["stopped"] == "turn limit" and reward == 0.0
        with pytest.raises(RuntimeError, match="episode is over"):
            chat.step("SUBMIT")
    finally:
        chat.close()


def test_a_long_output_is_cut_to_the_token_budget_with_a_visible_note(
    cargo: str, run_id: str
) -> None:
    budget = ObservationBudget(
        max_chars=None, max_tokens=100, count_tokens=lambda s: len(s.split())
    )
    chat = ChatEnv(termgym.make(cargo, backend="bwrap", run_id=run_id), budget=budget)
    try:
        chat.reset(seed=4)
        new, *_ = chat.step(bash_call("seq 1 5000"))
        content = new[0]["content"]
        assert "characters omitted" in content and "\n1\n" in content and "5000" in content
        assert len(content.split()) <= 100 + 20  # the output's budget plus the frame around it
    finally:
        chat.close()


def test_the_async_chat_api_matches_the_sync_one(cargo: str, run_id: str) -> None:
    async def episode() -> tuple[float, str | None, list[dict]]:
        chat = ChatEnv(
            termgym.make(
                cargo,
                variant="contradicted",
                backend="bwrap",
                run_id=run_id,
                rule_draw={"contradict": "fixed"},  # the authored 150, which the test expects
            )
        )
        try:
            await chat.areset(seed=1)
            await chat.astep(bash_call(READ_LIMIT))
            _, reward, _, _, info = await chat.astep("SUBMIT")
            return reward, info["class"], chat.transcript()
        finally:
            await chat.aclose()

    reward, episode_class, transcript = asyncio.run(episode())
    assert (reward, episode_class) == (1.0, "adapted")
    assert transcript[2]["role"] == "assistant" and "[tool call] bash(" in transcript[2]["content"]


@pytest.mark.parametrize("asynchronous", [False, True], ids=["step", "astep"])
def test_keystrokes_the_terminal_has_no_key_for_are_the_models_turn_not_an_exception(
    cargo: str, run_id: str, asynchronous: bool
) -> None:
    """A keys-mode reply of a key that does not exist (`<C-1>`) is refused by the env
    before any step is taken: the model is told so and goes on, as after a reply with no
    action; it must not raise out of the rollout (which would end it at the model's will)."""
    chat = ChatEnv(
        termgym.make(cargo, variant="original", backend="bwrap", run_id=run_id, mode="keys"),
        max_turns=3,
    )

    def keys(text: str, call_id: str) -> dict:
        function = {"name": "keys", "arguments": json.dumps({"keys": text})}
        return {"role": "assistant", "tool_calls": [{"id": call_id, "function": function}]}

    def step(reply: dict) -> tuple:
        return asyncio.run(chat.astep(reply)) if asynchronous else chat.step(reply)

    try:
        chat.reset(seed=1)
        new, reward, terminated, truncated, info = step(keys("echo hi<C-1>", "k1"))
        assert (reward, terminated, truncated) == (0.0, False, False)
        assert new[0]["tool_call_id"] == "k1" and "Nothing was sent" in new[0]["content"]
        assert "<C-1> is not a control key" in new[0]["content"]
        assert info["step"] == 0 and info["action"] is None and info["parse_error"]
        new, _, terminated, _, info = step(keys("echo typed<Enter>", "k2"))
        assert not terminated and info["step"] == 1 and "typed" in new[0]["content"]
        _, reward, terminated, truncated, info = step(keys("<C-1>", "k3"))  # the last turn
        assert (reward, terminated, truncated, info["stopped"]) == (0.0, False, True, "turn limit")
        assert info["verdicts"]["original"]["passed"] is False  # graded as it stood
    finally:
        chat.close()


def test_a_grader_error_is_logged_failed_whatever_its_own_verdict() -> None:
    # its own rule set graded and passed; the original one crashed the grader
    info = {
        "variant": "contradicted", "class": "grader-error", "error": "GraderError: [original]",
        "verdicts": {
            "contradicted": {"passed": True, "score": 1.0},
            "original": {"passed": None, "score": None, "error": "crashed"},
        },
    }  # fmt: skip
    meta = grading_metadata(info)
    assert (meta["passed"], meta["reward"], meta["grader_error"]) == (False, 0.0, True)


@pytest.mark.parametrize("turns", [0, -1, 2.5, "3"])
def test_a_turn_budget_that_cannot_work_is_refused(cargo: str, turns) -> None:
    """max_turns=0 silently became the task's step budget, and -1 was taken."""
    env = termgym.make(cargo, backend="bwrap", pool_size=0)
    try:
        with pytest.raises(ValueError, match=r"max_turns: expected an int >= 1 \(or None"):
            ChatEnv(env, max_turns=turns)
        chat = ChatEnv(env)
        with pytest.raises(ValueError, match=r"max_turns: expected an int >= 1"):
            chat.max_turns = turns
        chat.max_turns = None
        assert chat.max_turns == env.options.max_steps
    finally:
        env.close()
