"""The llm agent against servers that answer with tool calls: native ones, and <tool_call> text.

Real episodes (bwrap sandboxes, clean-verifier grading) through `termgym run`'s Runner, the
real openai client, and a real HTTP server on 127.0.0.1 speaking chat completions.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from termgym.agents import SUBMIT, EpisodeContext, make_agent
from termgym.errors import AgentError
from termgym.recording import read_run
from termgym.run import RunConfig, Runner

TASKS = str(Path(__file__).resolve().parents[2] / "examples" / "tasks")
READ_LIMIT = "sed -n 's/^max_weight: *//p' policy.txt > answer"
CONTEXT = EpisodeContext("cargo-limit", "Write the limit to /app/answer.", max_steps=4)


def _run(chat_server, tmp_path: Path, **options) -> list:
    out = tmp_path / "run"
    summary = Runner(
        RunConfig(
            agent="llm",
            tasks=("cargo-limit",),
            variants=("original", "contradicted"),
            out=out,
            concurrency=1,
            backend="bwrap",
            paths=(TASKS,),
            agent_options={
                "model": "scripted",
                "base_url": chat_server.base_url,
                "api_key": "k",
                "max_retries": 0,
                **options,
            },
        )
    ).run()
    assert [r.status for r in summary.results] == ["ok", "ok"]
    return sorted(read_run(out).episodes, key=lambda e: e.header.variant)


@pytest.mark.bwrap
@pytest.mark.parametrize("protocol", ["tools", "text"])
def test_a_server_that_answers_only_with_tool_calls_completes_episodes(
    chat_server, base_rootfs, tmp_path, protocol
) -> None:
    ids = []
    for _ in range(2):  # original, then contradicted: read the policy, then submit
        ids += [chat_server.call("bash", {"command": READ_LIMIT}), chat_server.call("submit")]
    episodes = _run(chat_server, tmp_path, protocol=protocol)
    assert [(e.header.variant, e.end.reward, e.end.episode_class) for e in episodes] == [
        ("contradicted", 1.0, "adapted"),
        ("original", 1.0, None),
    ]
    assert all([s.action for s in e.steps][0] == READ_LIMIT for e in episodes)
    first, second = chat_server.requests[0], chat_server.requests[1]
    # each call is answered by a tool message carrying its id: the API requires it
    answer = second["messages"][-1]
    assert answer["role"] == "tool" and answer["tool_call_id"] == ids[0]
    assert answer["content"].startswith("Exit code: 0")
    assert second["messages"][-2]["tool_calls"][0]["id"] == ids[0]
    if protocol == "tools":
        assert [t["function"]["name"] for t in first["tools"]] == [
            "bash",
            "submit",
            "report_conflict",
        ]
        assert "call the bash tool" in first["messages"][0]["content"]
    else:  # no tools offered, and the model is never told to call one
        assert all("tools" not in r for r in chat_server.requests)
        assert not any("bash tool" in str(r["messages"]) for r in chat_server.requests)
    # the transcript keeps the calls, so the audit reads what the model asked to run
    transcript = episodes[1].end.extra["transcript"]
    written = f"[tool call] bash({json.dumps({'command': READ_LIMIT})})"
    assert any(e["role"] == "assistant" and e["content"] == written for e in transcript)


@pytest.mark.bwrap
def test_tool_calls_written_as_text_complete_episodes_without_tools_offered(
    chat_server, base_rootfs, tmp_path
) -> None:
    bash = {"name": "bash", "arguments": {"command": READ_LIMIT}}
    for _ in range(2):
        chat_server.reply(f"I will read the policy.\n<tool_call>\n{json.dumps(bash)}\n</tool_call>")
        chat_server.reply('<tool_call>\n{"name": "submit", "arguments": {}}\n</tool_call>')
    episodes = _run(chat_server, tmp_path)
    assert [(e.header.variant, e.end.reward, e.end.episode_class) for e in episodes] == [
        ("contradicted", 1.0, "adapted"),
        ("original", 1.0, None),
    ]
    assert all("tools" not in r for r in chat_server.requests)
    # a text call has no id to answer: its result comes back as the next user message
    assert chat_server.requests[1]["messages"][-1]["role"] == "user"
    assert "Exit code: 0" in chat_server.requests[1]["messages"][-1]["content"]
    assert not any("bash tool" in str(r["messages"]) for r in chat_server.requests)


def test_a_bad_tool_call_is_answered_on_its_own_id_and_the_model_retries(chat_server) -> None:
    bad = chat_server.call("bash", {"cmd": "ls"})
    chat_server.call("bash", {"command": "ls"})
    agent = make_agent(
        "llm", model="m", base_url=chat_server.base_url, api_key="k", protocol="tools"
    )
    agent.reset(CONTEXT)
    assert agent.act({"output": "", "exit_code": -1}) == "ls"
    error = chat_server.requests[1]["messages"][-1]
    assert error == {
        "role": "tool",
        "tool_call_id": bad,
        "content": "The bash tool expects {'command': '<a non-empty command>'}.",
    }


def test_the_probe_after_a_submit_call_answers_the_call_first(chat_server) -> None:
    submit = chat_server.call("submit")
    chat_server.reply("I wrote the limit the policy file states.")
    agent = make_agent(
        "llm", model="m", base_url=chat_server.base_url, api_key="k", protocol="tools",
        probe=True,
    )  # fmt: skip
    agent.reset(CONTEXT)
    assert agent.act({"output": "", "exit_code": -1}) == SUBMIT
    messages = chat_server.requests[1]["messages"]
    assert [m["role"] for m in messages[-3:]] == ["assistant", "tool", "user"]
    assert messages[-2]["tool_call_id"] == submit
    assert agent.transcript()[-1]["content"] == "I wrote the limit the policy file states."


def test_replies_without_an_action_are_told_the_protocol_they_were_offered(chat_server) -> None:
    for _ in range(2):
        chat_server.reply("Let me think about it.")
    text = make_agent("llm", model="m", base_url=chat_server.base_url, api_key="k",
                      format_retries=1)  # fmt: skip
    text.reset(CONTEXT)
    with pytest.raises(AgentError, match="neither a code block nor SUBMIT"):
        text.act({"output": "", "exit_code": -1})
    reminder = chat_server.requests[1]["messages"][-1]["content"]
    assert "```bash block" in reminder and "tool" not in reminder
    with pytest.raises(AgentError, match="protocol: expected one of text, tools"):
        make_agent("llm", model="m", base_url=chat_server.base_url, protocol="json")
