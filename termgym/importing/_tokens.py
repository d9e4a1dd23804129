"""Values in a task's texts that could be rules: whole tokens (numbers, dates, quoted names),
boilerplate left out, each occurrence told apart as code or a mere mention.

`overlay suggest` reads these. A token is whole when nothing glues to it (`8080` in
`localhost:8080`, never the `80` of `8080`); boilerplate is what no author means as a rule
(an exit status, list numbering, a version pin, a sleep); a test's occurrence *checks* a
value when it is code, and only *mentions* it in a comment, a docstring, an assertion's
message or a print.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass
from typing import Literal

from termgym.overlay import whole_token

Role = Literal["code", "mention"]
"""What an occurrence does: `code` (it is used) or `mention` (a comment, a message)."""

_DATE = re.compile(r"(?<![\w-])\d{4}-\d{2}-\d{2}(?![\w-])")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_PATH = re.compile(r"(?<![\w/.~$-])/(?:[\w.-]+/)+[\w.-]*\w")
"""An absolute path of two parts or more (`/app/regex.txt`): a name the tests may check."""
_QUOTED = re.compile(r"([\"'`])([^\"'`\n]{2,60}?)\1")

_BEFORE_BOILERPLATE = re.compile(
    r"(?:\bexit\s*\(?|\bsys\.exit\(\s*|\breturncode\s*[!=<>]=?\s*|\bsleep\s*\(?\s*|"
    r"\btimeout\s*[=:(]?\s*|\w[=<>~!]=|\bpython\s?|\bversion\s*|\bpython3?\.|"
    r"\[\s*-?)$",
    re.I,
)
"""What comes right before a number no author means as a rule: an exit status, a sleep or
timeout, a version pin (`pytest==8`, `Python 3.13`); list numbering, file descriptors and
indexes are told by what follows."""
_LIST_NUMBER = re.compile(r"^[ \t>*#-]*$")
"""What may precede list numbering on its line (`1. `, `## 2) `)."""
_COMMON_STRINGS = frozenset(
    {"utf-8", "utf8", "ascii", "__main__", "__init__", "rb", "wb", "ab", "r+", "w+", "a+",
     "true", "false", "none", "null", "yes", "no", "ok", "id", "name", "key", "value", "data",
     "text", "json", "csv", "bash", "sh", "python", "python3", "pytest", "root", "tests",
     "test", "app", "src", "tmp", "main", "error", "info", "debug", "warning", "get", "post"}
)  # fmt: skip
"""Quoted words every task says: never proposed."""
_CANARY = re.compile(r"canary|BENCHMARK DATA SHOULD NEVER", re.I)


@dataclass(frozen=True)
class Occurrence:
    """One whole-token occurrence of a value: [start, end) in its file's text, and its role."""

    start: int
    end: int
    role: Role = "code"


def _boilerplate_number(text: str, start: int, end: int) -> bool:
    line_start = text.rfind("\n", 0, start) + 1
    before = text[line_start:start]
    after = text[end : end + 3]
    if re.match(r"[.)]\s", after) and _LIST_NUMBER.match(before):
        return True  # list numbering: "1. Create the file"
    if _BEFORE_BOILERPLATE.search(before[-40:]):
        return True
    if re.search(r"\d\.$", before):
        return True  # the last part of a version or an address (8.4.1, 10.0.0.1)
    if end - start == 1 and after[:1] == ">" or before.endswith(">&"):
        return True  # a file descriptor: 2>&1, >&2
    return bool(re.match(r"\.\d|\s*\]", after))  # a version part (3.11.2) or an index [0]


def tokens(text: str, *, quoted: bool = True) -> dict[str, list[Occurrence]]:
    """Every whole-token value in `text` (numbers, dates, absolute paths, quoted constants)
    and where it occurs, boilerplate occurrences left out."""
    found: dict[str, list[Occurrence]] = {}
    taken: list[tuple[int, int]] = []
    for match in _DATE.finditer(text):
        found.setdefault(match.group(0), []).append(Occurrence(*match.span()))
        taken.append(match.span())
    for match in _NUMBER.finditer(text):
        start, end = match.span()
        if any(a <= start < b for a, b in taken) or not whole_token(text, start, end):
            continue
        if re.search(r"\d-$", text[max(0, start - 2) : start]) or re.match(r"-\d", text[end:]):
            continue  # part of a compound (1134-12-1234, a phone number, a range's end)
        if _boilerplate_number(text, start, end):
            continue
        found.setdefault(match.group(0), []).append(Occurrence(start, end))
    spans: set[tuple[int, int]] = set()
    for match in _PATH.finditer(text):
        found.setdefault(match.group(0), []).append(Occurrence(*match.span()))
        spans.add(match.span())
    if quoted:
        for match in _QUOTED.finditer(text):
            value = match.group(2)
            start, end = match.span(2)
            if value.lower() in _COMMON_STRINGS or not re.match(r"[\w/.]", value):
                continue
            if value != value.strip() or _NUMBER.fullmatch(value) or _CANARY.search(value):
                continue
            if (start, end) in spans:
                continue  # a quoted path, found as a path
            found.setdefault(value, []).append(Occurrence(start, end))
    return found


def _offsets(text: str) -> list[int]:
    """The offset of each line's start (1-based lines, as ast and tokenize count them)."""
    starts = [0, 0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def python_mentions(text: str) -> list[tuple[int, int]]:
    """The spans of a Python file that only mention values: comments, docstrings, assert
    messages, and the arguments of print, pytest.fail/skip and logging calls. Empty when it
    does not parse."""
    try:
        tree = ast.parse(text)
        comments = [
            tok
            for tok in tokenize.generate_tokens(io.StringIO(text).readline)
            if tok.type == tokenize.COMMENT
        ]
    except (SyntaxError, tokenize.TokenError, ValueError):
        return []
    lines = _offsets(text)

    def span(node: ast.AST) -> tuple[int, int]:
        start = lines[node.lineno] + node.col_offset  # type: ignore[attr-defined]
        end = lines[node.end_lineno] + node.end_col_offset  # type: ignore[attr-defined]
        return start, end

    out = [(lines[tok.start[0]] + tok.start[1], lines[tok.end[0]] + tok.end[1]) for tok in comments]
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            if isinstance(node.value.value, str):
                out.append(span(node))  # a docstring, or a bare string
        elif isinstance(node, ast.Assert) and node.msg is not None:
            out.append(span(node.msg))
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("print", "fail", "skip", "xfail", "info", "debug", "warning", "error"):
                out.extend(span(arg) for arg in [*node.args, *(k.value for k in node.keywords)])
    return out


def shell_mentions(text: str) -> list[tuple[int, int]]:
    """The spans of a shell (or other) script that only mention values: comment lines and
    what `echo` and `printf` print."""
    out = []
    offset = 0
    for line in text.splitlines(keepends=True):
        stripped = line.lstrip()
        if stripped.startswith(("#", "//", "echo ", "printf ")):
            out.append((offset, offset + len(line)))
        offset += len(line)
    return out


def with_roles(
    text: str, found: dict[str, list[Occurrence]], python: bool
) -> dict[str, list[Occurrence]]:
    """`found` with each occurrence's role: a mention inside the file's mention spans."""
    spans = python_mentions(text) if python else shell_mentions(text)
    if not spans:
        return found

    def role(occ: Occurrence) -> Role:
        return "mention" if any(a <= occ.start and occ.end <= b for a, b in spans) else "code"

    return {
        value: [Occurrence(o.start, o.end, role(o)) for o in occs] for value, occs in found.items()
    }


_WORD = re.compile(r"\w+|[^\w\s]+")


def pattern_around(text: str, start: int, end: int, *, max_tokens: int = 8) -> str | None:
    """The shortest snippet around text[start:end] that begins and ends on whole words or
    punctuation, stays within its line, holds the value once as a whole token, names at
    least one word beside it (a quoted value: its quotes) and is unique in `text`; None
    when no such snippet exists."""
    value = text[start:end]
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    lefts = [line_start + m.start() for m in _WORD.finditer(text[line_start:start])]
    rights = [end + m.end() for m in _WORD.finditer(text[end:line_end])]
    lefts = [start, *reversed(lefts)][: max_tokens + 1]
    rights = [end, *rights][: max_tokens + 1]
    quoted = start > 0 and end < len(text) and text[start - 1] == text[end] and text[end] in "\"'`"

    def rank(ab: tuple[int, int]) -> tuple[bool, int, bool, int]:
        """Fewest tokens around the value, a word (or the quotes) among them, the word
        before it (what names the value) before the one after."""
        a, b = ab
        around = text[a:start] + " " + text[end:b]
        context = bool(re.search(r"\w", around)) or (quoted and a < start and b > end)
        return (not context, lefts.index(a) + rights.index(b), a == start, b - a)

    for a, b in sorted(((a, b) for a in lefts for b in rights if (a, b) != (start, end)), key=rank):
        snippet = text[a:b]
        if text.count(snippet) != 1:
            continue
        inner = [m.start() for m in re.finditer(re.escape(value), snippet)]
        if sum(1 for i in inner if whole_token(snippet, i, i + len(value))) == 1:
            return snippet
    return None
