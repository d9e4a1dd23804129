"""Oracles of imported tasks: solution.yaml keystrokes replayed through a terminal, and
Harbor solutions that come with more files than solve.sh."""

from __future__ import annotations

import base64
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


_HELPERS_LIMIT = 2 << 20
"""At most this many bytes of helper files travel inside an oracle."""


def with_solution_folder(folder: Path, script: str) -> str:
    """Harbor's oracle: its harness uploads the whole solution/ folder to /solution and runs
    solve.sh. termgym's oracle is one script, so the folder's other files (a solve.py the
    script runs, say) are written to /solution first, text files as text (an overlay may
    name their occurrences), others base64; then solve.sh runs as written.

    Raises:
        TaskSpecError: the helper files are larger than 2 MiB.
    """
    helpers = sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and p.name != "solve.sh" and "__pycache__" not in p.parts
    )
    if not helpers:
        return script
    if sum(p.stat().st_size for p in helpers) > _HELPERS_LIMIT:
        raise TaskSpecError(
            f"{folder}: expected the solution's helper files to total at most 2 MiB (they "
            f"travel inside the oracle script), found {len(helpers)} files larger than that"
        )
    lines = [
        "#!/bin/bash",
        "# termgym: Harbor's oracle runs with solution/ uploaded to /solution; its other files:",
    ]
    for path in helpers:
        rel = path.relative_to(folder).as_posix()
        target = shlex.quote(f"/solution/{rel}")
        lines.append(f'mkdir -p "$(dirname {target})"')
        data = path.read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        delimiter = "TERMGYM_SOLUTION_FILE"
        while delimiter in (text if text is not None else ""):
            delimiter += "_"
        if text is not None and text.endswith("\n"):
            lines.append(f"cat > {target} <<'{delimiter}'\n{text}{delimiter}")
        else:
            encoded = base64.b64encode(data).decode("ascii")
            lines.append(f"base64 -d > {target} <<'{delimiter}'\n{encoded}\n{delimiter}")
        if path.stat().st_mode & 0o111:
            lines.append(f"chmod +x {target}")
    lines.append("# termgym: solution/solve.sh, as written")
    return "\n".join(lines) + "\n" + script
