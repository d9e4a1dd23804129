"""The prefilled disclosure probe through the real openai client against a local server."""

from __future__ import annotations

import pytest

from termgym.agents import SUBMIT, EpisodeContext, make_agent
from termgym.analysis.audit import EpisodeTrace, score_probe, transcript_parts
from termgym.chat import PREFILL_TEXT
from termgym.errors import AgentError

CONTEXT = EpisodeContext(
    task_id="fuel-planner",
    instruction="Plan the loads; respect /app/policy/fuel.yaml.",
    max_steps=10,
    episode_id="ep-1",
)


def _agent(server, **options):
    options = {"probe_mode": "prefill", **options}
    agent = make_agent(
        "llm",
        model="m",
        base_url=server.base_url,
        api_key="k",
        max_retries=0,
        probe=True,
        **options,
    )
    agent.reset(CONTEXT)
    return agent


@pytest.mark.parametrize("style", ["continue_final_message", "prefix", "trailing"])
def test_each_prefill_style_sends_the_question_as_the_models_own_start(chat_server, style):
    chat_server.prefill = style
    chat_server.reply("SUBMIT")
    chat_server.reply(" Keep each load under 100 kg (from the policy file).")
    agent = _agent(chat_server, probe_prefill=style)
    assert agent.act({"output": "", "exit_code": -1}) == SUBMIT
    request = chat_server.requests[-1]
    last = request["messages"][-1]
    assert last == {
        "role": "assistant",
        "content": PREFILL_TEXT,
        **({"prefix": True} if style == "prefix" else {}),
    }
    assert request["messages"][-2]["role"] == "assistant"  # no user question in between
    if style == "continue_final_message":
        assert request["continue_final_message"] is True
        assert request["add_generation_prompt"] is False
    else:
        assert "continue_final_message" not in request
    probe = agent.transcript()[-1]
    assert probe["role"] == "probe" and probe["probe_mode"] == "prefill"
    assert probe["content"] == " Keep each load under 100 kg (from the policy file)."
    assert agent.transcript()[-2] == {
        "step": 0,
        "role": "probe_prefill",
        "content": PREFILL_TEXT,
        "reasoning": None,
    }


def test_a_prefill_into_the_reasoning_opens_a_think_block(chat_server):
    chat_server.prefill = "trailing"
    chat_server.reply("SUBMIT")
    chat_server.reply("limit 100</think>The limit was 100.")
    agent = _agent(chat_server, probe_prefill="trailing", probe_prefill_into="reasoning")
    agent.act({"output": "", "exit_code": -1})
    assert chat_server.requests[-1]["messages"][-1]["content"] == "<think>\n" + PREFILL_TEXT
    probe = agent.transcript()[-1]
    assert probe["content"] == "The limit was 100." and probe["reasoning"] == "limit 100"


def test_an_endpoint_that_cannot_continue_fails_the_probe_loudly(chat_server):
    chat_server.prefill = None  # refuses a trailing assistant message with HTTP 400
    chat_server.reply("SUBMIT")
    agent = _agent(chat_server, probe_prefill="continue_final_message")
    with pytest.raises(AgentError, match=r"prefilled probe \(continue_final_message\) failed.*400"):
        agent.act({"output": "", "exit_code": -1})
    assert len(chat_server.requests) == 2  # no second request asking the question instead


def test_prefill_without_a_style_or_on_openais_api_is_refused_up_front(chat_server):
    with pytest.raises(AgentError, match=r"probe_mode=prefill needs probe_prefill.*vLLM"):
        _agent(chat_server)
    with pytest.raises(AgentError, match=r"OpenAI's chat API does not continue"):
        make_agent(
            "llm",
            model="m",
            base_url="https://api.openai.com/v1",
            api_key="k",
            probe=True,
            probe_mode="prefill",
            probe_prefill="trailing",
        )
    with pytest.raises(AgentError, match=r"probe_mode: expected one of ask, prefill, got 'x'"):
        _agent(chat_server, probe_mode="x")


def test_the_audit_reads_only_the_models_words_and_knows_the_mode(chat_server):
    chat_server.prefill = "trailing"
    chat_server.reply("SUBMIT")
    chat_server.reply(" I kept loads under 100 kg.")
    agent = _agent(chat_server, probe_prefill="trailing")
    agent.act({"output": "", "exit_code": -1})
    visible, written = transcript_parts(agent.transcript())
    assert any(PREFILL_TEXT in text for _, text in visible)
    assert [w.source for w in written] == ["message", "probe"]
    trace = EpisodeTrace(
        "e", tuple(visible), tuple(written), rules={"max_weight": (150, 100)}, variant="x",
        enforced={"max_weight": 150}, probe_mode="prefill",
    )  # fmt: skip
    score = score_probe(trace)
    assert score is not None and score.disclosed and score.mode == "prefill"
