"""A terminal shell (keys mode) on docker and bwrap: a person's bash, and the protocol beside it."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from termgym.sandbox import Sandbox

PROMPT = b"root@sandbox:/app# "


@pytest.fixture
def term(make_box: Callable[..., Sandbox]) -> Sandbox:
    """A started sandbox whose shell is a terminal shell, its first prompt read."""
    box = make_box(interactive=True, workdir="/app")
    assert _type(box, b"").endswith(PROMPT)
    return box


def _type(box: Sandbox, keys: bytes, until: bytes = PROMPT, patience: float = 60.0) -> bytes:
    """Type `keys`; what the terminal answers, read until `until` shows in it: a quiet moment
    (a busy machine answering late) ends one read, not the answer."""
    shown = box.send_keys(keys, settle=0.3).raw
    deadline = time.monotonic() + patience
    while until not in shown and time.monotonic() < deadline:
        shown += box.send_keys(b"", settle=0.3).raw
    return shown


def _sentinel(box: Sandbox) -> bytes:
    shell = box.shell  # type: ignore[attr-defined]
    return (shell._left + shell._right).encode()


def test_typed_text_is_echoed_and_a_prompt_follows_each_command(term: Sandbox) -> None:
    shown = _type(term, b"echo hi $((6*7))\r")
    assert shown == b"echo hi $((6*7))\r\nhi 42\r\nroot@sandbox:/app# "


def test_up_recalls_the_last_command_and_history_holds_only_what_was_typed(term: Sandbox) -> None:
    _type(term, b"echo first-$((1+1))\r")
    term.run("echo by-the-protocol")  # its prompt comes next, then the recalled line
    recalled = b"echo first-$((1+1))"
    assert _type(term, b"\x1b[A", until=recalled) == b"root@sandbox:/app# " + recalled
    assert _type(term, b"\r") == b"\r\nfirst-2\r\nroot@sandbox:/app# "
    history = _type(term, b"history\r").decode()
    entries = [line.split(None, 1)[1] for line in history.splitlines()[1:-1]]
    assert entries == ["echo first-$((1+1))", "history"]  # ignoreboth: no repeats


def test_tab_completes_paths_and_commands(term: Sandbox) -> None:
    term.run("mkdir -p /app/reports/2026 && touch /app/reports/2026/summary.txt")
    assert _type(term, b"ls rep\t", until=b"reports/") == b"root@sandbox:/app# ls reports/"
    assert _type(term, b"20\t", until=b"2026/") == b"2026/"
    assert _type(term, b"\r").startswith(b"\r\nsummary.txt\r\n")
    completed = _type(term, b"pyth\t", until=b"on3")
    assert completed.replace(b"\x07", b"").startswith(b"python3")  # bell: more than one


def test_history_expansion_and_line_editing_work_as_in_bash(term: Sandbox) -> None:
    _type(term, b"echo one two\r")
    assert b"\r\ntwo\r\n" in _type(term, b"echo !$\r")
    # Ctrl-A goes to the start of the line, Ctrl-K kills to its end: nothing runs
    _type(term, b"rm -rf /app\x01\x0b", until=b"\x1b[K")
    assert b"printed\r\n" in _type(term, b"echo printed\r")


def test_run_keeps_its_protocol_in_a_terminal_shell(term: Sandbox) -> None:
    result = term.run("echo 'a!b' \"$((2+3))\"; (exit 3)")
    assert (result.output, result.exit_code) == ("a!b 5\n", 3)
    assert term.run("echo $?").output == "3\n"
    long = term.run("printf '%s' '" + "x" * 9000 + "' | wc -c\nfor i in 1 2; do echo $i; done")
    assert long.output == "9000\n1\n2\n" and long.exit_code == 0
    _type(term, b"rm -rf /app/half-typed", until=b"half-typed")  # no Enter: unfinished
    assert term.run("ls -d /app && echo still").output == "/app\nstill\n"
    for shown in (result.raw, long.raw, result.output.encode()):
        assert _sentinel(term) not in shown and b"__tg" not in shown
    assert _type(term, b"").endswith(b"root@sandbox:/app# ")


def test_a_timed_out_run_and_an_exit_bring_back_a_terminal_shell(term: Sandbox) -> None:
    timed = term.run("sleep 30", timeout=1)
    assert timed.timed_out and not timed.restarted
    assert term.run("echo alive").output == "alive\n"
    assert _type(term, b"echo a$((1))\r").endswith(b"a1\r\nroot@sandbox:/app# ")
    left = term.send_keys(b"exit\r", settle=0.3)
    said, deadline = left.output, time.monotonic() + 60
    while not left.restarted and time.monotonic() < deadline:  # the shell may exit late
        left = term.send_keys(b"", settle=0.3)
        said += left.output
    assert left.restarted and "a fresh shell was started in /app" in said
    assert _type(term, b"echo b$((2))\r").endswith(b"b2\r\nroot@sandbox:/app# ")


def test_a_command_mode_shell_stays_bare(box: Sandbox) -> None:
    assert _type(box, b"echo quiet\r", until=b"quiet\r\n") == b"quiet\r\n"
