"""A Text space for real terminal text: any Unicode string, spaces and newlines included."""

from __future__ import annotations

import string
from typing import Any

import numpy as np
from gymnasium.spaces import Text

# Characters `sample()` draws from. Membership is not limited to them: real terminal output
# holds any Unicode character, and `contains` accepts every str within the length bounds.
SAMPLE_CHARSET = string.printable + "éü€→✓─│┌┐└┘░█λ中文"


class TerminalText(Text):
    """Any Unicode text of `min_length` to `max_length` characters.

    Gymnasium's `Text` only holds strings drawn from a fixed charset, which would reject the
    spaces, newlines, punctuation and Unicode that terminals print. This space keeps
    Text's interface (so vector envs batch it as a Tuple of Text) and widens membership.
    """

    def __init__(self, max_length: int, *, min_length: int = 0, seed: Any = None) -> None:
        super().__init__(max_length, min_length=min_length, charset=SAMPLE_CHARSET, seed=seed)

    def contains(self, x: Any) -> bool:
        """True for any str whose length lies within the bounds."""
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """A random printable string (shorter than max_length: samples are for tests)."""
        length = int(self.np_random.integers(self.min_length, min(self.max_length, 64) + 1))
        chars = self.np_random.choice(np.array(list(SAMPLE_CHARSET)), size=length)
        return "".join(chars.tolist())

    def __repr__(self) -> str:
        return f"TerminalText({self.min_length}, {self.max_length})"

    def __eq__(self, other: Any) -> bool:
        return (
            isinstance(other, TerminalText)
            and self.min_length == other.min_length
            and self.max_length == other.max_length
        )
