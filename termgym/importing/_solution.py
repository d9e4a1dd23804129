"""Oracles of imported tasks: solution.yaml keystrokes replayed through a terminal."""

from __future__ import annotations

import shlex
from pathlib import Path

import yaml

from termgym.errors import TaskSpecError


def keystroke_oracle(path: Path) -> str:
    """A bash oracle that types Terminal-Bench's solution.yaml keystrokes into a tmux
    terminal, as Terminal-Bench's harness replays them (send-keys, then wait).

    Each entry: `command` (keys), `min_timeout_sec` (wait after), `block` (wait until the
    command finishes), `append_enter` (default true).

    Raises:
        TaskSpecError: not a list of entries with a `command`.
    """
    try:
        entries = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise TaskSpecError(f"{path}: expected a list of keystroke entries, found: {exc}") from None
    if not isinstance(entries, list) or not entries:
        raise TaskSpecError(f"{path}: expected a list of keystroke entries, found {entries!r}")
    lines = [
        "#!/bin/bash",
        "# Terminal-Bench solution.yaml, replayed keystroke by keystroke in a terminal.",
        "set -e",
        'session="oracle-$$"',
        'tmux new-session -d -s "$session" -x 120 -y 40 -c "$PWD"',
        "trap 'tmux kill-session -t \"$session\" 2>/dev/null || true' EXIT",
        'wait_idle() { tmux send-keys -t "$session" "tmux wait-for -S done-$$" Enter; '
        'timeout "$1" tmux wait-for "done-$$" || true; }',
    ]
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
            raise TaskSpecError(
                f"{path}: entry {index}: expected a mapping with a `command`, found {entry!r}"
            )
        keys = [shlex.quote(entry["command"])]
        if entry.get("append_enter", True):
            keys.append("Enter")
        lines.append(f'tmux send-keys -t "$session" -l {keys[0]}')
        if len(keys) > 1:
            lines.append('tmux send-keys -t "$session" Enter')
        wait = float(entry.get("min_timeout_sec", 0) or 0)
        if entry.get("block"):
            lines.append(f"wait_idle {max(wait, 600.0):g}")
        elif wait:
            lines.append(f"sleep {wait:g}")
        else:
            lines.append("sleep 0.5")
    lines.append("sleep 1")
    return "\n".join(lines) + "\n"
