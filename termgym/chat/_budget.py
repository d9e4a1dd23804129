"""How much of an observation a model is shown: a character or token budget, cut visibly."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

TokenCounter = Callable[[str], int]
"""Counts the tokens of a text (e.g. `lambda s: len(tokenizer.encode(s))`)."""


def truncate_middle(text: str, limit: int) -> str:
    """Keep the head and the tail of `text` within `limit` characters, with a marker between."""
    if len(text) <= limit:
        return text
    head = limit * 2 // 5
    tail = limit - head
    omitted = len(text) - head - tail
    return f"{text[:head]}\n[... {omitted} characters omitted ...]\n{text[len(text) - tail :]}"


@dataclass(frozen=True)
class ObservationBudget:
    """The most of one observation (a command's output, a screen) a model is shown.

    The head (40%) and the tail (60%) are kept around a visible note saying how much was
    left out. With `max_tokens`, `count_tokens` (a caller-supplied counter, such as the
    policy's tokenizer) measures the text, and the largest cut that fits is kept.

    Attributes:
        max_chars: Characters of an observation shown (None: no character limit).
        max_tokens: Tokens of an observation shown (None: no token limit); needs count_tokens.
        count_tokens: Counts the tokens of a text.
    """

    max_chars: int | None = 8000
    max_tokens: int | None = None
    count_tokens: TokenCounter | None = None

    def __post_init__(self) -> None:
        for name in ("max_chars", "max_tokens"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise ValueError(
                    f"ObservationBudget.{name}: expected an int or None, got {value!r}"
                )
            if value is not None and value < 64:
                raise ValueError(
                    f"ObservationBudget.{name}: expected at least 64 (room for the note), "
                    f"got {value}"
                )
        if self.max_tokens is not None and self.count_tokens is None:
            raise ValueError(
                "ObservationBudget: max_tokens needs count_tokens, a function str -> int "
                "(e.g. lambda s: len(tokenizer.encode(s)))"
            )

    def fit(self, text: str) -> tuple[str, bool]:
        """`text` cut to the budget, and whether it was cut."""
        cut = text if self.max_chars is None else truncate_middle(text, self.max_chars)
        if self.max_tokens is not None and self.count_tokens is not None:
            cut = self._fit_tokens(cut, self.max_tokens, self.count_tokens)
        return cut, cut != text

    def _fit_tokens(self, text: str, limit: int, count: TokenCounter) -> str:
        if count(text) <= limit:
            return text
        # The largest character cut whose tokens fit: counts grow with the characters kept.
        low, high = 0, len(text)
        best = truncate_middle(text, 0)
        while low <= high:
            middle = (low + high) // 2
            candidate = truncate_middle(text, middle)
            if count(candidate) <= limit:
                best, low = candidate, middle + 1
            else:
                high = middle - 1
        return best
