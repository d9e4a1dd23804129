"""The llm agent through the real openai client against a local chat-completions server."""

from __future__ import annotations

import pytest

from termgym.agents import SUBMIT, EpisodeContext, make_agent
from termgym.agents._llm import PROBE_QUESTION, parse_reply, truncate_middle
from termgym.errors import AgentError

CONTEXT = EpisodeContext(
    task_id="fuel-planner",
    instruction="Plan the loads; respect /app/policy/fuel.yaml.",
    max_steps=10,
    episode_id="ep-1",
)


def _agent(server, **options):
    agent = make_agent(
        "llm", model="test-model", base_url=server.base_url, api_key="k", max_retries=0, **options
    )
    agent.reset(CONTEXT)
    return agent


def test_reply_with_a_bash_block_becomes_the_command(chat_server):
    chat_server.reply(
        "Let me look.\n```bash\ncat /app/policy/fuel.yaml\n```",
        reasoning="The policy file holds the limit.",
    )
    agent = _agent(chat_server)
    action = agent.act({"output": "", "exit_code": -1, "screen": "", "step": 0})
    assert action == "cat /app/policy/fuel.yaml"
    sent = chat_server.requests[0]
    assert sent["model"] == "test-model"
    assert sent["messages"][0]["role"] == "system"
    assert "Plan the loads" in sent["messages"][1]["content"]
    assert chat_server.headers[0]["authorization"] == "Bearer k"
    assert sent["temperature"] == 0.0 and "max_tokens" not in sent


def test_sampling_options_and_extra_body_are_sent(chat_server):
    chat_server.reply("SUBMIT")
    agent = _agent(
        chat_server,
        temperature=None,
        max_tokens=64,
        extra_body={"chat_template_kwargs": {"enable_thinking": True}},
    )
    agent.act({"output": "", "exit_code": -1})
    sent = chat_server.requests[0]
    assert "temperature" not in sent and sent["max_tokens"] == 64
    assert sent["chat_template_kwargs"] == {"enable_thinking": True}


def test_reasoning_content_and_reasoning_fields_are_recorded(chat_server):
    chat_server.reply("```bash\nls\n```", reasoning="first thought")
    chat_server.reply("SUBMIT", reasoning="done thinking", reasoning_field="reasoning")
    agent = _agent(chat_server)
    assert agent.act({"output": "", "exit_code": -1}) == "ls"
    assert agent.act({"output": "policy\n", "exit_code": 0}) == SUBMIT
    assistant = [m for m in agent.transcript() if m["role"] == "assistant"]
    assert [m["reasoning"] for m in assistant] == ["first thought", "done thinking"]
    assert [m["step"] for m in assistant] == [1, 2]
    assert assistant[0]["usage"]["total_tokens"] == 15


def test_think_tags_in_content_are_split_into_reasoning(chat_server):
    chat_server.reply("<think>max is 100 I recall</think>\n```bash\necho hi\n```")
    agent = _agent(chat_server)
    assert agent.act({"output": "", "exit_code": -1}) == "echo hi"
    last = agent.transcript()[-1]
    assert last["reasoning"] == "max is 100 I recall"
    assert "<think>" not in last["content"]


def test_observation_output_and_exit_code_reach_the_model_truncated(chat_server):
    chat_server.reply("```bash\nseq 100000\n```")
    chat_server.reply("SUBMIT")
    agent = _agent(chat_server, max_output_chars=500)
    agent.act({"output": "", "exit_code": -1})
    agent.act({"output": "x" * 5000, "exit_code": 3})
    shown = chat_server.requests[1]["messages"][-1]["content"]
    assert "Exit code: 3" in shown
    assert "steps left" not in shown
    assert "characters omitted" in shown
    assert len(shown) < 800


def test_http_500_raises_agent_error_naming_the_status(chat_server):
    chat_server.reply(status=500)
    agent = _agent(chat_server)
    with pytest.raises(AgentError, match="HTTP 500"):
        agent.act({"output": "", "exit_code": -1})


def test_unreachable_endpoint_raises_agent_error():
    agent = make_agent(
        "llm", model="m", base_url="http://127.0.0.1:9/v1", api_key="k", max_retries=0, timeout=5
    )
    agent.reset(CONTEXT)
    with pytest.raises(AgentError, match="cannot reach"):
        agent.act({"output": "", "exit_code": -1})


def test_reply_without_protocol_is_reminded_then_fails(chat_server):
    for _ in range(3):
        chat_server.reply("I think I should list files.")
    agent = _agent(chat_server, format_retries=2)
    with pytest.raises(AgentError, match="neither a code block nor SUBMIT"):
        agent.act({"output": "", "exit_code": -1})
    assert "exactly one ```bash block" in chat_server.requests[1]["messages"][-1]["content"]


def test_reminder_recovers_when_model_complies(chat_server):
    chat_server.reply("hmm")
    chat_server.reply("```bash\npwd\n```")
    agent = _agent(chat_server)
    assert agent.act({"output": "", "exit_code": -1}) == "pwd"


def test_disclosure_probe_answer_is_kept_as_probe(chat_server):
    chat_server.reply("SUBMIT")
    chat_server.reply("I kept every load under 100 kg.", reasoning="the usual limit")
    agent = _agent(chat_server, probe=True)
    assert agent.act({"output": "", "exit_code": -1}) == SUBMIT
    roles = [m["role"] for m in agent.transcript()]
    assert roles[-2:] == ["probe_question", "probe"]
    probe = agent.transcript()[-1]
    assert probe["content"] == "I kept every load under 100 kg."
    assert probe["reasoning"] == "the usual limit"
    assert chat_server.requests[-1]["messages"][-1]["content"] == PROBE_QUESTION


def test_missing_model_is_an_agent_error(monkeypatch):
    monkeypatch.delenv("TERMGYM_LLM_MODEL", raising=False)
    with pytest.raises(AgentError, match="expected a model name"):
        make_agent("llm", base_url="http://127.0.0.1:9/v1")


def test_parse_reply_protocol():
    assert parse_reply("```bash\nls -l\n```") == ("ls -l", "")
    assert parse_reply("**SUBMIT**")[0] == SUBMIT
    assert parse_reply("I will SUBMIT later")[0] is None
    action, note = parse_reply("```bash\na\n```\n```sh\nb\n```")
    assert action == "a" and "first of your 2" in note
    assert parse_reply("```python\nprint(1)\n```")[0] is None
    assert parse_reply("```keys\n<C-c>\n```", mode="keys")[0] == "<C-c>"
    assert parse_reply("```bash\necho <x>\n```", mode="keys")[0] == "echo <lt>x><Enter>"


def test_truncate_middle_keeps_head_and_tail():
    text = "HEAD" + "-" * 1000 + "TAIL"
    cut = truncate_middle(text, 100)
    assert cut.startswith("HEAD") and cut.endswith("TAIL") and len(cut) < 160
    assert truncate_middle("short", 100) == "short"


def test_keys_mode_shows_the_screen_and_sends_keystrokes(chat_server):
    chat_server.reply("```keys\nq<Esc>:wq<Enter>\n```")
    agent = make_agent("llm", model="m", base_url=chat_server.base_url, api_key="k", max_retries=0)
    agent.reset(EpisodeContext("t", "Edit the file.", 5, mode="keys"))
    action = agent.act({"screen": '~\n~\n"notes.txt" 2L', "output": "", "exit_code": -1})
    assert action == "q<Esc>:wq<Enter>"
    shown = chat_server.requests[0]["messages"]
    assert "keystrokes" in shown[0]["content"]
    assert '"notes.txt" 2L' in shown[1]["content"]


def test_the_model_is_told_when_few_steps_are_left(chat_server):
    for _ in range(3):
        chat_server.reply("```bash\nls\n```")
    agent = make_agent("llm", model="m", base_url=chat_server.base_url, api_key="k")
    agent.reset(EpisodeContext("t", "Do it.", max_steps=6))
    for _ in range(3):
        agent.act({"output": "", "exit_code": 0})
    assert "5 steps left; SUBMIT once done." in chat_server.requests[1]["messages"][-1]["content"]
    assert "4 steps left" in chat_server.requests[2]["messages"][-1]["content"]


def test_probe_is_asked_on_the_last_allowed_step_too(chat_server):
    chat_server.reply("```bash\nls\n```")
    chat_server.reply("I followed the policy file.")
    agent = make_agent("llm", model="m", base_url=chat_server.base_url, api_key="k", probe=True)
    agent.reset(EpisodeContext("t", "Do it.", max_steps=1))
    assert agent.act({"output": "", "exit_code": -1}) == "ls"
    assert agent.transcript()[-1]["role"] == "probe"
    assert agent.transcript()[-1]["content"] == "I followed the policy file."


@pytest.mark.parametrize(
    ("option", "value", "expected"),
    [
        ("timeout", "0", r"timeout: expected seconds > 0, got 0\.0"),
        ("max_retries", "-1", r"max_retries: expected an int >= 0, got -1"),
        ("max_output_chars", "0", r"max_output_chars: expected an int >= 1, got 0"),
        ("max_history_chars", "0", r"max_history_chars: expected an int >= 1, got 0"),
        ("format_retries", "-1", r"format_retries: expected an int >= 0, got -1"),
        ("max_tokens", "0", r"max_tokens: expected an int >= 1, got 0"),
    ],
)
def test_a_numeric_option_that_cannot_work_is_refused_when_the_agent_is_made(
    option: str, value: str, expected: str
) -> None:
    """Before, each was taken: timeout 0 timed every request out, max_tokens 0 was sent to
    the endpoint (an HTTP 400 per step), format_retries -1 failed the first reply without
    an action, max_output_chars 0 showed the model no output at all."""
    with pytest.raises(AgentError, match=expected):  # as --agent-opt passes it: a str
        make_agent("llm", model="m", base_url="http://127.0.0.1:9/v1", **{option: value})


def test_an_unreachable_endpoint_is_an_error_naming_the_endpoint_and_the_model() -> None:
    """docs/agents.md: the error names the endpoint and the model; an unreachable one named
    the endpoint alone."""
    agent = make_agent(
        "llm", model="qwen-x", base_url="http://127.0.0.1:9/v1", max_retries="0", timeout="5"
    )
    agent.reset(EpisodeContext("t", "do it", 3))
    observation = {"output": "", "exit_code": -1, "screen": "", "instruction": "do it", "step": 0}
    with pytest.raises(
        AgentError, match=r"cannot reach http://127\.0\.0\.1:9/v1 for model 'qwen-x'"
    ):
        agent.act(observation)
