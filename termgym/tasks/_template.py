"""Templates of instructions and workspace files: `{{ rule }}` placeholders and rule blocks."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping

from termgym.tasks._spec import RuleValue

PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
"""`{{ name }}`: replaced by the episode's value of rule `name`."""

_MARKER = re.compile(r"\{\{\s*([#/])\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_LINE_BLOCK = (
    r"(?ms)^[ \t]*\{{\{{#\s*{name}\s*\}}\}}[ \t]*\n(.*?)"
    r"^[ \t]*\{{\{{/\s*{name}\s*\}}\}}[ \t]*(?:\n|\Z)"
)
_INLINE_BLOCK = r"(?s)\{{\{{#\s*{name}\s*\}}\}}(.*?)\{{\{{/\s*{name}\s*\}}\}}"


class TemplateError(ValueError):
    """A template is malformed: unbalanced block markers."""


def format_value(value: RuleValue) -> str:
    """A rule value as templates write it: bools as true/false, numbers as Python prints them."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def placeholders(text: str) -> set[str]:
    """Names used by `{{ name }}` placeholders and `{{# name }}` blocks in `text`."""
    names = set(PLACEHOLDER.findall(text))
    names.update(name for _, name in _MARKER.findall(text))
    return names


def check_blocks(text: str) -> None:
    """Raise TemplateError unless every `{{# name }}` has a matching `{{/ name }}` after it."""
    stack: list[str] = []
    for match in _MARKER.finditer(text):
        sign, name = match.groups()
        line = text.count("\n", 0, match.start()) + 1
        if sign == "#":
            stack.append(name)
        elif not stack or stack[-1] != name:
            expected = f"{{{{/ {stack[-1]} }}}}" if stack else "no closing marker"
            raise TemplateError(f"line {line}: expected {expected}, found {{{{/ {name} }}}}")
        else:
            stack.pop()
    if stack:
        raise TemplateError(
            f"expected {{{{/ {stack[-1]} }}}} to close {{{{# {stack[-1]} }}}}, "
            "found the end of the text"
        )


def _drop_blocks(text: str, names: Collection[str]) -> str:
    for name in names:
        quoted = re.escape(name)
        text = re.sub(_LINE_BLOCK.format(name=quoted), "", text)
        # an inline block that was a whole line (between other text) takes its line along
        inline = _INLINE_BLOCK.format(name=quoted)[4:]  # without the leading (?s)
        text = re.sub(r"(?sm)^[ \t]*" + inline + r"[ \t]*\n", "", text)
        text = re.sub(_INLINE_BLOCK.format(name=quoted), "", text)
    return text


def _strip_markers(text: str) -> str:
    text = re.sub(
        r"(?m)^[ \t]*\{\{\s*[#/]\s*[A-Za-z_][A-Za-z0-9_]*\s*\}\}[ \t]*(?:\n|\Z)", "", text
    )
    return _MARKER.sub("", text)


def render(text: str, values: Mapping[str, RuleValue], withheld: Collection[str] = ()) -> str:
    """Fill a template with rule values, removing every trace of the withheld rules.

    Blocks `{{# name }}...{{/ name }}` of a withheld rule are dropped whole (a marker alone on
    its line takes the line with it); other blocks keep their content, markers removed. Then
    every line holding a placeholder of a withheld rule is dropped, and the remaining
    placeholders are replaced by their values.

    Raises:
        KeyError: a placeholder names a rule absent from `values` and not withheld.
    """
    withheld = set(withheld)
    text = _drop_blocks(text, sorted(withheld))
    text = _strip_markers(text)
    if withheld:
        lines = text.splitlines(keepends=True)
        text = "".join(line for line in lines if not (set(PLACEHOLDER.findall(line)) & withheld))

    def fill(match: re.Match[str]) -> str:
        return format_value(values[match.group(1)])

    return PLACEHOLDER.sub(fill, text)


def fill_rules(text: str, values: Mapping[str, RuleValue]) -> str:
    """`text` with every `{{ name }}` that names a key of `values` replaced by its value;
    anything else (other placeholders, blocks) left as it is. How an oracle script reads
    the values its episode states (docs/task-format.md, "Solutions")."""

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        return format_value(values[name]) if name in values else match.group(0)

    return PLACEHOLDER.sub(fill, text)
