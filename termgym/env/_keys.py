"""The keystroke notation of keys mode: text with <C-c>, <Up>, <Enter>-style names.

Plain characters are typed as they are. A name in angle brackets is one special key:

    <Enter> <CR>      carriage return        <Tab>            tab
    <Esc>             escape                 <BS>             backspace (DEL, 0x7f)
    <Space>           a space                <lt>             a literal "<"
    <Up> <Down> <Right> <Left> <Home> <End> <PageUp> <PageDown> <Insert> <Del>
    <F1> ... <F12>
    <C-x>             Ctrl plus a letter or one of @[\\]^_ (e.g. <C-c>, <C-d>, <C-[>)
    <M-x>             Alt (meta) plus a character: ESC then the character

Names are case-insensitive. A "<" that does not start a known name is typed literally.
"""

from __future__ import annotations

import re

from termgym.errors import ActionError

NAMED_KEYS: dict[str, str] = {
    "enter": "\r",
    "cr": "\r",
    "return": "\r",
    "tab": "\t",
    "esc": "\x1b",
    "escape": "\x1b",
    "bs": "\x7f",
    "backspace": "\x7f",
    "space": " ",
    "lt": "<",
    "up": "\x1b[A",
    "down": "\x1b[B",
    "right": "\x1b[C",
    "left": "\x1b[D",
    "home": "\x1b[H",
    "end": "\x1b[F",
    "pageup": "\x1b[5~",
    "pagedown": "\x1b[6~",
    "insert": "\x1b[2~",
    "del": "\x1b[3~",
    "delete": "\x1b[3~",
    "f1": "\x1bOP",
    "f2": "\x1bOQ",
    "f3": "\x1bOR",
    "f4": "\x1bOS",
    "f5": "\x1b[15~",
    "f6": "\x1b[17~",
    "f7": "\x1b[18~",
    "f8": "\x1b[19~",
    "f9": "\x1b[20~",
    "f10": "\x1b[21~",
    "f11": "\x1b[23~",
    "f12": "\x1b[24~",
}

_TOKEN = re.compile(r"<([A-Za-z0-9-]+|[CcMm]-.)>")


def _control(char: str) -> str:
    code = ord(char.upper())
    if not 0x3F <= code <= 0x5F:
        raise ActionError(f"<C-{char}> is not a control key: expected a letter or one of @[\\]^_?")
    return chr(code ^ 0x40)


def _special(name: str) -> str | None:
    lower = name.lower()
    if lower.startswith("c-") and len(name) == 3:
        return _control(name[2])
    if lower.startswith("m-") and len(name) == 3:
        return "\x1b" + name[2]
    return NAMED_KEYS.get(lower)


def parse_keys(action: str) -> bytes:
    """Turn a keys-mode action into the bytes a terminal would send.

    >>> parse_keys("ls<Enter>")
    b'ls\\r'
    >>> parse_keys("<C-c>")
    b'\\x03'
    """
    out: list[str] = []
    pos = 0
    for match in _TOKEN.finditer(action):
        special = _special(match.group(1))
        if special is None:
            continue
        out.append(action[pos : match.start()])
        out.append(special)
        pos = match.end()
    out.append(action[pos:])
    return sendable("".join(out)).encode("utf-8", "surrogateescape")


_UNSENDABLE = re.compile("[\ud800-\udc7f\udd00-\udfff]")


def sendable(text: str) -> str:
    """`text` as a terminal can be sent it: a lone surrogate of U+DC80 to U+DCFF stays (the
    undecodable byte it stands for, as surrogateescape decodes one), any other lone surrogate
    (a JSON escape such as \\ud800 in a model's tool call) becomes U+FFFD. Neither encodes
    as UTF-8, and the error ended the step, and the episode as an infrastructure error."""
    return _UNSENDABLE.sub("\ufffd", text)


_BY_SEQUENCE = sorted(
    (
        (seq, name)
        for name, seq in NAMED_KEYS.items()
        if name not in ("cr", "return", "escape", "backspace", "delete", "space")
    ),
    key=lambda pair: -len(pair[0]),
)
_CANONICAL = {
    "enter": "Enter",
    "tab": "Tab",
    "esc": "Esc",
    "bs": "BS",
    "lt": "lt",
    "up": "Up",
    "down": "Down",
    "right": "Right",
    "left": "Left",
    "home": "Home",
    "end": "End",
    "pageup": "PageUp",
    "pagedown": "PageDown",
    "insert": "Insert",
    "del": "Del",
}


def format_keys(data: bytes) -> str:
    """Write raw keystrokes in the notation `parse_keys` reads (its inverse for what it makes).

    >>> format_keys(b"ls\\r\\x03")
    'ls<Enter><C-c>'
    """
    text = data.decode("utf-8", "replace")
    out: list[str] = []
    pos = 0
    while pos < len(text):
        for seq, name in _BY_SEQUENCE:
            if seq != " " and text.startswith(seq, pos):
                out.append(f"<{_CANONICAL.get(name, name.upper())}>")
                pos += len(seq)
                break
        else:
            char = text[pos]
            code = ord(char)
            if code < 0x20 or code == 0x7F:
                out.append(f"<C-{chr(code ^ 0x40).lower()}>" if code != 0x7F else "<BS>")
            else:
                out.append(char)
            pos += 1
    return "".join(out)


def typed_text(action: str) -> str:
    """What a person typing `action` wrote, as a line editor keeps it: backspaces applied,
    Enter as a line break (⏎), other special keys as their names (⟨Up⟩, ⟨C-c⟩).

    >>> typed_text("lx<BS>s -la<Enter>")
    'ls -la⏎'
    """
    line: list[str] = []
    for token in re.split(r"(<[^<>]+>)", format_keys(parse_keys(action))):
        if not token:
            continue
        if token == "<BS>":
            if line and not line[-1].startswith("⟨") and line[-1] != "⏎":
                line.pop()
        elif token == "<Enter>":
            line.append("⏎")
        elif token == "<lt>":
            line.append("<")
        elif token.startswith("<") and token.endswith(">") and len(token) > 2:
            line.append(f"⟨{token[1:-1]}⟩")
        else:
            line.extend(token)
    return "".join(line)
