"""Text from agents and foreign tasks made safe to print to a terminal: control characters
shown, never obeyed.

An agent's action can carry escape sequences (OSC 0 sets the window title, OSC 52 writes
the clipboard, CSI clears the screen or moves the cursor over earlier lines). Everything
termgym prints that an agent (or a foreign task) wrote goes through `printable`, as every
pane of the TUI does: ESC becomes ⎋, the other C0 controls and DEL their control pictures
(␇, ␡), C1 controls (8-bit CSI and OSC), the bidirectional overrides that reorder what is
shown and lone surrogates (an agent's undecodable bytes) `\\x9b`-style escapes; with
`one_line`, newlines and carriage returns become ⏎.
"""

from __future__ import annotations

import re

from rich.markup import escape

_BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_SURROGATES = "\ud800-\udfff"  # lone halves: no terminal shows them, UTF-8 cannot hold them
_UNSAFE = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}{_SURROGATES}]")
_UNSAFE_ONE_LINE = re.compile(f"[\x00-\x08\x0a-\x1f\x7f-\x9f{_BIDI}{_SURROGATES}]")


def _shown(match: re.Match[str]) -> str:
    char = match.group(0)
    code = ord(char)
    if char == "\x1b":
        return "⎋"
    if char in "\r\n":
        return "⏎"
    if code < 0x20:
        return chr(0x2400 + code)  # the control picture: \x07 -> ␇
    if code == 0x7F:
        return "␡"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(text: str, *, one_line: bool = False) -> str:
    """`text` with every control character shown instead of obeyed (newlines and tabs kept,
    carriage returns shown as ⏎; with `one_line`, newlines too)."""
    pattern = _UNSAFE_ONE_LINE if one_line else _UNSAFE
    return pattern.sub(_shown, text)


def shown(text: str, *, one_line: bool = False) -> str:
    """`printable(text)` for Rich: its markup escaped too, so `[red]` stays text."""
    return escape(printable(text, one_line=one_line))
