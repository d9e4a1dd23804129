"""The gateway on the host: each API through real clients, streamed or not, to a scripted
endpoint; what it refuses; what it records; the transcript and the probe built from it."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import httpx
import openai
import pytest

from termgym.analysis.audit import EpisodeTrace, score_probe, transcript_parts
from termgym.chat import PREFILL_TEXT, PROBE_QUESTION
from termgym.errors import AgentError, GatewayError, RecordingError
from termgym.gateway import Gateway, Upstream
from termgym.recording import calls_file, read_calls

from .conftest import KEY, ModelServer, Turn

SYSTEM = "You are a careful engineer."
TASK = "Plan the fuel load; the policy file says the reserve."


def _client(route) -> openai.OpenAI:
    return openai.OpenAI(base_url=route.host_url, api_key=route.token, max_retries=0)


def _anthropic(route, body: dict, *, stream: bool = False, token: str | None = None):
    headers = {"x-api-key": token or route.token, "anthropic-version": "2023-06-01"}
    url = route.host_origin + "/v1/messages?beta=true"
    if not stream:
        return httpx.post(url, headers=headers, json=body, timeout=30)
    with httpx.stream("POST", url, headers=headers, json={**body, "stream": True}, timeout=30) as r:
        return r.status_code, r.read().decode()


def _first_chat(model_server: ModelServer, route, *, stream: bool) -> str:
    model_server.turns.append(
        Turn("I will read it.", "Check the policy.", [("bash", {"command": "cat policy.md"})])
    )
    client = _client(route)
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}]
    if not stream:
        reply = client.chat.completions.create(model="m", messages=messages)
        return reply.choices[0].message.content or ""
    chunks = client.chat.completions.create(model="m", messages=messages, stream=True)
    return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_chat_completions_pass_through_with_the_hosts_key_and_are_recorded(
    model_server: ModelServer, gateway: Gateway, stream: bool
) -> None:
    route = gateway.open_route("ep-chat")
    assert _first_chat(model_server, route, stream=stream) == "I will read it."
    [seen] = model_server.seen
    assert seen.headers["authorization"] == f"Bearer {KEY}"  # the key, never the token
    assert route.token not in json.dumps(seen.headers)
    [call] = route.calls()
    assert (call.api, call.status, call.stream, call.error) == ("openai-chat", 200, stream, None)
    message = call.response["choices"][0]["message"]
    assert message["reasoning_content"] == "Check the policy."
    assert message["tool_calls"][0]["function"] == {
        "name": "bash",
        "arguments": '{"command": "cat policy.md"}',
    }
    system, user, reply = route.transcript()
    assert (system["role"], system["content"], user["role"], user["content"]) == (
        "system",
        SYSTEM,
        "user",
        TASK,
    )
    assert reply["role"] == "assistant" and reply["reasoning"] == "Check the policy."
    assert reply["content"] == 'I will read it.\n[tool call] bash({"command": "cat policy.md"})'


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_the_responses_api_passes_through_and_its_items_become_one_reply(
    model_server: ModelServer, gateway: Gateway, stream: bool
) -> None:
    route = gateway.open_route("ep-responses")
    model_server.turns.append(
        Turn("Reading.", "The file first.", [("shell", {"cmd": ["cat", "policy.md"]})])
    )
    client = _client(route)
    if stream:
        with client.responses.stream(model="m", input=TASK, instructions=SYSTEM) as events:
            for _ in events:
                pass
            text = events.get_final_response().output_text
    else:
        text = client.responses.create(model="m", input=TASK, instructions=SYSTEM).output_text
    assert text == "Reading."
    assert model_server.seen[0].headers["authorization"] == f"Bearer {KEY}"
    [call] = route.calls()
    assert (call.api, call.stream) == ("openai-responses", stream)
    *_, reply = route.transcript()
    assert reply["content"] == 'Reading.\n[tool call] shell({"cmd": ["cat", "policy.md"]})'
    assert reply["reasoning"] == "The file first." and reply["finish_reason"] == "completed"


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_anthropic_messages_pass_through_with_the_key_as_x_api_key(
    model_server: ModelServer, gateway: Gateway, stream: bool
) -> None:
    route = gateway.open_route("ep-anthropic")
    model_server.turns.append(
        Turn("On it.", "Policy first.", [("Bash", {"command": "cat policy.md"})])
    )
    body = {
        "model": "m",
        "max_tokens": 100,
        "system": SYSTEM,
        "messages": [{"role": "user", "content": TASK}],
    }
    if stream:
        status, text = _anthropic(route, body, stream=True)
        assert status == 200 and "event: message_stop" in text
    else:
        answer = _anthropic(route, body)
        assert answer.status_code == 200 and answer.json()["content"][1]["text"] == "On it."
    [seen] = model_server.seen
    assert seen.path == "/v1/messages?beta=true"  # the query kept
    assert seen.headers["x-api-key"] == KEY and "authorization" not in seen.headers
    assert seen.headers["anthropic-version"] == "2023-06-01"
    [call] = route.calls()
    assert call.response["content"][2] == {
        "type": "tool_use",
        "id": "toolu_1_0",
        "name": "Bash",
        "input": {"command": "cat policy.md"},
    }
    system, user, reply = route.transcript()
    assert (system["content"], user["content"]) == (SYSTEM, TASK)
    assert reply["content"] == 'On it.\n[tool call] Bash({"command": "cat policy.md"})'
    assert reply["reasoning"] == "Policy first." and reply["finish_reason"] == "tool_use"


def test_a_stream_reaches_the_agent_as_it_comes_not_when_it_ends(
    model_server: ModelServer, gateway: Gateway
) -> None:
    route = gateway.open_route("ep-live")
    model_server.turns.append(Turn("slowly"))
    model_server.hold = threading.Event()  # the endpoint sends one event, then waits
    client = _client(route)
    chunks = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "x"}], stream=True
    )
    first = next(iter(chunks))  # arrives while the endpoint still holds the rest
    assert first.choices[0].delta.role == "assistant"
    model_server.hold.set()
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "slowly"


def test_requests_without_an_open_routes_token_are_refused_before_the_endpoint(
    model_server: ModelServer, gateway: Gateway
) -> None:
    mine, other = gateway.open_route("ep-a"), gateway.open_route("ep-b")
    url = mine.host_url + "/chat/completions"
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    assert httpx.post(url, json=body).status_code == 401
    assert httpx.post(url, json=body, headers={"Authorization": f"Bearer {KEY}"}).status_code == 401
    assert (
        httpx.post(url, json=body, headers={"Authorization": "Bearer tg-guessed"}).status_code
        == 401
    )
    refused = httpx.post(
        mine.host_origin + "/admin", json=body, headers={"Authorization": f"Bearer {mine.token}"}
    )
    assert refused.status_code == 404 and "forwards only" in refused.json()["error"]["message"]
    for path in ("/v1/models/../../admin", "/v1/files", "/v1/chat/completions/../x"):
        got = httpx.get(mine.host_origin + path, headers={"Authorization": f"Bearer {mine.token}"})
        assert got.status_code == 404, path
    mine.close()
    assert (
        httpx.post(url, json=body, headers={"Authorization": f"Bearer {mine.token}"}).status_code
        == 401
    )
    assert model_server.seen == []  # none of it reached the endpoint
    model_server.turns.append(Turn("for b"))
    assert (
        httpx.post(url, json=body, headers={"Authorization": f"Bearer {other.token}"}).status_code
        == 200
    )
    assert [c.index for c in other.calls()] == [0] and mine.calls() == ()


def test_model_lists_and_token_counts_are_forwarded_and_recorded_but_not_transcribed(
    model_server: ModelServer, gateway: Gateway
) -> None:
    route = gateway.open_route("ep-other")
    assert _client(route).models.list().data[0].id == "scripted"
    counted = httpx.post(
        route.host_origin + "/v1/messages/count_tokens",
        json={"model": "m", "messages": []},
        headers={"x-api-key": route.token, "anthropic-version": "2023-06-01"},
    )
    assert counted.json() == {"input_tokens": 42}
    assert [(c.api, c.method) for c in route.calls()] == [("other", "GET"), ("other", "POST")]
    assert model_server.seen[1].headers["x-api-key"] == KEY  # an Anthropic client's
    assert route.transcript() == []


def test_an_unreachable_endpoint_is_a_502_the_call_records(model_server: ModelServer) -> None:
    with Gateway(Upstream("http://127.0.0.1:9/v1", api_key=KEY, timeout=5), host=True) as gateway:
        route = gateway.open_route("ep-down")
        with pytest.raises(openai.InternalServerError):
            _client(route).chat.completions.create(
                model="m", messages=[{"role": "user", "content": "x"}]
            )
        [call] = route.calls()
        assert call.status == 0 and "did not answer" in (call.error or "")
        assert "did not answer" in route.transcript()[-1]["error"]


def test_the_calls_file_holds_every_call_and_never_the_key_or_token(
    model_server: ModelServer, gateway: Gateway, tmp_path: Path
) -> None:
    path = calls_file(tmp_path, "ep-file")
    route = gateway.open_route("ep-file", record_to=path)
    _first_chat(model_server, route, stream=True)
    model_server.turns.append(Turn("done"))
    _client(route).chat.completions.create(
        model="m", messages=[{"role": "user", "content": "again"}]
    )
    route.close()
    text = path.read_text()
    assert KEY not in text and route.token not in text
    log = read_calls(path)
    assert log.route["episode_id"] == "ep-file" and log.route["upstream"] == model_server.base_url
    assert log.calls == route.calls() and log.skipped == ()
    with pytest.raises(RecordingError, match="expected a new model calls file"):
        gateway.open_route("ep-file", record_to=path)
    path.write_text(text + '{"type": "call", "index": 2, "api": "bogus"}\n{"type": "ca')
    assert [s.split(":")[0] for s in read_calls(path).skipped] == [
        "line 4",
        "line 5 (the last line, cut short?)",
    ]


def test_a_resent_conversation_shows_once_with_each_step_from_the_actions_run(
    model_server: ModelServer, gateway: Gateway
) -> None:
    actions = [0]
    route = gateway.open_route("ep-steps", actions=lambda: actions[0])
    _first_chat(model_server, route, stream=False)
    actions[0] = 1
    model_server.turns.append(Turn("The reserve is 15%."))
    history = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": TASK},
        {
            "role": "assistant",
            "content": "I will read it.",
            "tool_calls": [
                {
                    "id": "call_1_0",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"command": "cat policy.md"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1_0", "content": "reserve: 15%"},
    ]
    _client(route).chat.completions.create(model="m", messages=history)
    entries = [(e["role"], e["step"], e["call"]) for e in route.transcript()]
    assert entries == [
        ("system", 0, 0),
        ("user", 0, 0),
        ("assistant", 1, 0),
        ("tool", 1, 1),
        ("assistant", 2, 1),
    ]
    visible, written = transcript_parts(route.transcript())
    assert [text for _, text in visible] == [SYSTEM, TASK]
    assert [(w.step, w.source) for w in written] == [
        (0, "message"),
        (0, "reasoning"),
        (1, "message"),
    ]


def test_the_ask_probe_resends_the_last_conversation_with_each_call_answered(
    model_server: ModelServer, gateway: Gateway
) -> None:
    route = gateway.open_route("ep-probe")
    _first_chat(model_server, route, stream=True)
    model_server.turns.append(Turn("I kept the reserve at 15 percent.", "From policy.md."))
    assert route.probe() == "I kept the reserve at 15 percent."
    asked = model_server.seen[-1].body
    assert "stream" not in asked and asked["model"] == "m"
    assert [m["role"] for m in asked["messages"]] == ["system", "user", "assistant", "tool", "user"]
    assert asked["messages"][3] == {
        "role": "tool",
        "tool_call_id": "call_1_0",
        "content": "The episode is over: your work was handed in for checking.",
    }
    assert asked["messages"][-1] == {"role": "user", "content": PROBE_QUESTION}
    question, answer = route.transcript()[-2:]
    assert (question["role"], question["content"]) == ("probe_question", PROBE_QUESTION)
    assert (answer["role"], answer["probe_mode"], answer["reasoning"]) == (
        "probe",
        "ask",
        "From policy.md.",
    )
    assert route.calls()[-1].origin == "probe"
    trace = EpisodeTrace(
        "ep-probe",
        ((0, TASK),),
        tuple(transcript_parts(route.transcript())[1]),
        {"fuel_reserve": (15,)},
        {"fuel_reserve": 15},
    )
    score = score_probe(trace)
    assert score is not None and score.mode == "ask"


def test_the_prefill_probe_continues_the_models_own_words_on_each_api(
    model_server: ModelServer, gateway: Gateway
) -> None:
    model_server.prefill = "continue_final_message"
    chat = gateway.open_route("ep-chat-prefill")
    _first_chat(model_server, chat, stream=False)
    model_server.turns.append(Turn(PREFILL_TEXT + " Keep a 15% reserve."))  # the endpoint echoes it
    assert chat.probe("prefill", "continue_final_message") == " Keep a 15% reserve."
    sent = model_server.seen[-1].body
    assert sent["continue_final_message"] is True and sent["messages"][-1] == {
        "role": "assistant",
        "content": PREFILL_TEXT,
    }
    assert [e["role"] for e in chat.transcript()[-2:]] == ["probe_prefill", "probe"]

    claude = gateway.open_route("ep-anthropic-prefill")
    model_server.turns.append(Turn("", None, [("Bash", {"command": "ls"})]))
    _anthropic(
        claude,
        {
            "model": "m",
            "max_tokens": 9,
            "tools": [{"name": "Bash"}],
            "messages": [{"role": "user", "content": TASK}],
        },
    )
    model_server.turns.append(Turn(" Nothing else."))
    assert claude.probe("prefill") == " Nothing else."
    sent = model_server.seen[-1].body
    assert sent["tool_choice"] == {"type": "none"} and sent["messages"][-1] == {
        "role": "assistant",
        "content": PREFILL_TEXT,
    }
    assert sent["messages"][-2]["content"][0]["type"] == "tool_result"

    codex = gateway.open_route("ep-responses-prefill")
    model_server.turns.append(Turn("ok"))
    _client(codex).responses.create(model="m", input=TASK)
    with pytest.raises(AgentError, match="responses API continues no partial"):
        codex.probe("prefill")


def test_a_refused_probe_is_an_agent_error_kept_in_the_transcript(
    model_server: ModelServer, gateway: Gateway
) -> None:
    route = gateway.open_route("ep-refused")
    assert route.probe() is None  # no model call: nothing to ask
    _first_chat(model_server, route, stream=False)
    model_server.turns.append(Turn(status=500))
    with pytest.raises(AgentError, match="answered 500"):
        route.probe()
    assert "answered 500" in route.transcript()[-1]["error"]
    route.close()
    with pytest.raises(AgentError, match="probe before close"):
        route.probe()


def test_a_gateway_says_what_it_expected(model_server: ModelServer) -> None:
    with pytest.raises(ValueError, match="expected an http:// or https:// URL"):
        Upstream("ftp://x")
    with pytest.raises(ValueError, match="no credential"):
        Upstream("http://x/v1", headers={"Authorization": "Bearer x"})
    assert KEY not in repr(Upstream("http://x/v1", api_key=KEY))
    gateway = Gateway(Upstream(model_server.base_url, api_key=KEY))
    with pytest.raises(GatewayError, match="not started"):
        gateway.open_route("x")
    with gateway:
        with pytest.raises(GatewayError, match="host=True"):
            _ = gateway.host_origin
        socket = Path(gateway.mount.socket)
        assert socket.is_socket() and oct(socket.parent.stat().st_mode & 0o777) == "0o711"
    assert not socket.parent.exists()  # nothing left


def test_a_chunked_request_body_is_read_whole_and_a_malformed_one_refused(
    model_server: ModelServer, gateway: Gateway
) -> None:
    import socket as sockets

    route = gateway.open_route("ep-chunked")
    model_server.turns.append(Turn("chunks read"))
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]}).encode()
    answer = httpx.post(
        route.host_url + "/chat/completions",
        content=iter([body[:10], body[10:]]),
        headers={"Authorization": f"Bearer {route.token}"},
    )
    assert answer.status_code == 200 and model_server.seen[0].body["messages"][0]["content"] == "x"
    host, port = route.host_origin.removeprefix("http://").split(":")
    with sockets.create_connection((host, int(port))) as raw:
        raw.sendall(
            f"POST /v1/chat/completions HTTP/1.1\r\nAuthorization: Bearer {route.token}\r\n"
            "Transfer-Encoding: chunked\r\n\r\nzz\r\n".encode()
        )
        assert raw.recv(100).startswith(b"HTTP/1.1 400")
    assert len(model_server.seen) == 1
