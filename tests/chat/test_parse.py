"""The one reply parser: tool calls, fenced blocks, SUBMIT, REPORT_CONFLICT, the budget."""

from __future__ import annotations

import json

import pytest

from termgym import REPORT_CONFLICT, SUBMIT, report_conflict
from termgym.agents import conflict_reason
from termgym.agents._llm import parse_reply as llm_parse_reply
from termgym.chat import ObservationBudget, parse_message, parse_reply, parse_text, tool_schemas


def call(name: str, arguments: object = None, call_id: str = "c1") -> dict:
    args = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}


def test_the_llm_agent_uses_the_shared_parser() -> None:
    assert llm_parse_reply is parse_reply


def test_a_bash_tool_call_is_the_action_and_extra_calls_are_not_run() -> None:
    message = {"role": "assistant", "content": "", "tool_calls": [
        call("bash", {"command": "ls -l"}), call("submit", call_id="c2")]}  # fmt: skip
    parsed = parse_message(message)
    assert (parsed.action, parsed.source, parsed.tool_call_id) == ("ls -l", "tool_call", "c1")
    assert parsed.ignored_calls == ("c2",)
    assert "only the first of your 2 tool calls" in parsed.note


def test_the_flat_tool_call_form_of_verifiers_is_read() -> None:
    message = {
        "role": "assistant",
        "tool_calls": [{"id": "x", "name": "submit", "arguments": "{}"}],
    }
    assert parse_message(message).action == SUBMIT


def test_keys_tool_types_keystrokes_and_bash_tool_presses_enter_in_keys_mode() -> None:
    assert (
        parse_message({"tool_calls": [call("keys", {"keys": "<C-c>"})]}, "keys").action == "<C-c>"
    )
    typed = parse_message({"tool_calls": [call("bash", {"command": "echo <x>"})]}, "keys")
    assert typed.action == "echo <lt>x><Enter>"
    assert [t["function"]["name"] for t in tool_schemas("keys")] == [
        "bash",
        "keys",
        "submit",
        "report_conflict",
    ]
    assert [t["function"]["name"] for t in tool_schemas("command")] == [
        "bash",
        "submit",
        "report_conflict",
    ]


@pytest.mark.parametrize(
    ("tool", "arguments", "mode", "expected"),
    [
        ("bash", "{not json", "command", "not valid JSON"),
        ("bash", {"cmd": "ls"}, "command", "expects {'command'"),
        ("keys", {"keys": "q"}, "command", "use the bash tool here"),
        (
            "python",
            {"code": "1"},
            "command",
            "There is no tool 'python'; the tools are bash, submit",
        ),
        ("bash", "[1, 2]", "command", "must be a JSON object"),
    ],
)
def test_a_bad_tool_call_is_an_error_to_show_not_an_exception(
    tool: str, arguments: object, mode: str, expected: str
) -> None:
    parsed = parse_message({"tool_calls": [call(tool, arguments)]}, mode)
    assert parsed.action is None and parsed.tool_call_id == "c1"
    assert expected in (parsed.error or "")


def test_text_replies_fenced_blocks_submit_and_thoughts() -> None:
    assert parse_message("Let me look.\n```bash\ncat policy.txt\n```").action == "cat policy.txt"
    assert parse_message({"role": "assistant", "content": "**SUBMIT**"}).action == SUBMIT
    thought = "<think>```bash\nrm -rf /app\n```</think>Done thinking.\n```bash\nls\n```"
    assert parse_message(thought).action == "ls"
    assert parse_message({"content": [{"type": "text", "text": "```sh\npwd\n```"}]}).action == "pwd"
    missing = parse_message("I would rather not.")
    assert missing.action is None and "no tool call, no code block" in (missing.error or "")
    assert "empty" in (parse_message("```bash\n\n```").error or "")


def test_a_character_budget_cuts_the_middle_visibly() -> None:
    text = "H" * 5000 + "T" * 5000
    cut, was_cut = ObservationBudget(max_chars=1000).fit(text)
    assert was_cut and len(cut) < 1100
    assert cut.startswith("H" * 400) and cut.endswith("T" * 600)
    assert "[... 9000 characters omitted ...]" in cut
    assert ObservationBudget(max_chars=1000).fit("short") == ("short", False)


def test_a_token_budget_uses_the_callers_counter() -> None:
    words = " ".join(f"w{i}" for i in range(3000))
    budget = ObservationBudget(
        max_chars=None, max_tokens=200, count_tokens=lambda s: len(s.split())
    )
    cut, was_cut = budget.fit(words)
    assert was_cut and len(cut.split()) <= 200
    assert "characters omitted" in cut and cut.startswith("w0 w1")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_tokens": 100}, "max_tokens needs count_tokens"),
        ({"max_chars": 10}, "expected at least 64"),
        ({"max_chars": "many"}, "expected an int or None"),
    ],
)
def test_a_bad_budget_says_what_was_expected(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ObservationBudget(**kwargs)


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>\n{"name": "bash", "arguments": {"command": "ls -l"}}\n</tool_call>',
        'Reading.\n<tool_call>{"name": "bash", "arguments": "{\\"command\\": \\"ls -l\\"}"}',
        '<tool_call>{"name": "bash", "parameters": {"command": "ls -l"}}</tool_call>',
        "<tool_call>\n<function=bash>\n<parameter=command>\nls -l\n</parameter>\n</function>\n"
        "</tool_call>",
        "Listing first.\n<function=bash>\n<parameter=command>\nls -l\n</parameter>\n</function>",
        "<function=bash><parameter=command>ls -l</parameter></function>",
    ],
    ids=[
        "hermes-json",
        "unclosed-string-arguments",
        "llama-parameters",
        "qwen3-coder-xml",
        "qwen3-coder-bare",
        "qwen3-coder-bare-one-line",
    ],
)
def test_tool_calls_written_as_text_are_read_like_native_ones(text: str) -> None:
    parsed = parse_message({"role": "assistant", "content": text})
    assert (parsed.action, parsed.source, parsed.tool_call_id) == ("ls -l", "text_tool_call", None)
    assert parsed.call == {"name": "bash", "arguments": {"command": "ls -l"}}


def test_a_bare_function_call_quoted_in_a_fenced_block_is_no_call() -> None:
    text = "```bash\ncat > notes.md <<'EOF'\n<function=submit></function>\nEOF\n```"
    parsed = parse_message(text)
    assert parsed.source == "code_block" and parsed.action.startswith("cat > notes.md")


def test_a_text_tool_call_wins_over_a_fenced_block_and_extra_calls_are_noted() -> None:
    text = (
        '```bash\nrm -rf /app\n```\n<tool_call>{"name": "submit", "arguments": {}}</tool_call>'
        '<tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>'
    )
    parsed = parse_message(text)
    assert parsed.action == SUBMIT and "only the first of your 2 tool calls" in parsed.note
    thought = '<think><tool_call>{"name": "submit"}</tool_call></think>```bash\nls\n```'
    assert parse_message(thought).action == "ls"  # a call inside the thoughts is not made


def test_a_malformed_text_tool_call_is_an_error_to_show() -> None:
    parsed = parse_message("<tool_call>{name: bash}</tool_call>")
    assert parsed.action is None and "does not hold valid JSON" in (parsed.error or "")
    unknown = parse_message('<tool_call>{"name": "python", "arguments": {}}</tool_call>')
    assert "There is no tool 'python'" in (unknown.error or "")


def test_a_model_offered_no_tools_is_never_told_to_call_one() -> None:
    for reply in ("I would rather not.", "```bash\n\n```"):
        error = parse_message(reply, tools=False).error or ""
        assert "```bash block" in error and "tool" not in error
    assert "Call the bash tool" in (parse_message("hmm").error or "")


def test_every_action_comes_from_one_table_of_tools_and_keywords() -> None:
    from termgym.chat import KEYWORDS, TOOLS

    assert [t.name for t in TOOLS] == ["bash", "keys", "submit", "report_conflict"]
    assert [k.action for k in KEYWORDS] == [SUBMIT, REPORT_CONFLICT]
    assert [s["function"]["name"] for s in tool_schemas("keys")] == [t.name for t in TOOLS]


def test_a_conflict_is_reported_by_its_tool_a_written_call_or_a_keyword_line() -> None:
    reason = "SPEC.md says top 20, tests/test_report.py expects 13"
    native = parse_message({"tool_calls": [call("report_conflict", {"reason": reason})]})
    body = json.dumps({"name": "report_conflict", "arguments": {"reason": reason}})
    written = parse_text(f"<tool_call>{body}</tool_call>")
    line = parse_text(f"The two disagree.\n\n**REPORT_CONFLICT: {reason}**")
    for parsed in (native, written, line):
        assert parsed.action == report_conflict(reason)
        assert conflict_reason(parsed.action) == reason
    assert parse_text("REPORT_CONFLICT").action == REPORT_CONFLICT
    assert "reason" in (parse_message({"tool_calls": [call("report_conflict", {})]}).error or "")
    # a block wins over a keyword line, as for SUBMIT: the command runs
    assert parse_text("REPORT_CONFLICT: maybe\n```bash\nls\n```").action == "ls"


@pytest.mark.parametrize("message", [None, 5, ["SUBMIT"]])
def test_a_reply_that_is_neither_text_nor_a_message_dict_says_what_was_expected(message) -> None:
    """It failed with AttributeError ('NoneType' object has no attribute 'get')."""
    with pytest.raises(TypeError, match=r"the model's text or an assistant message dict"):
        parse_message(message)
