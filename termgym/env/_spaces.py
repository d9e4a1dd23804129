"""A Text space for real terminal text: any Unicode string, spaces and newlines included."""

from __future__ import annotations

import string
from types import ModuleType
from typing import Any, NoReturn

import numpy as np
from gymnasium.spaces import Text, utils
from gymnasium.vector.utils import shared_memory

# Characters `sample()` draws from. Membership is not limited to them: real terminal output
# holds any Unicode character, and `contains` accepts every str within the length bounds.
SAMPLE_CHARSET = string.printable + "éü€→✓─│┌┐└┘░█λ中文"


class TerminalText(Text):
    """Any Unicode text of `min_length` to `max_length` characters (code points).

    Gymnasium's `Text` only holds strings drawn from a fixed charset, which would reject the
    spaces, newlines, punctuation and Unicode that terminals print. This space keeps
    Text's interface (so vector envs batch it as a Tuple of Text) and widens membership.

    What it cannot do, it refuses with a clear error rather than a wrong answer: it cannot be
    flattened into a vector (Gymnasium's Text flattening is one dimension per character of a
    fixed charset), and it cannot live in `AsyncVectorEnv`'s shared memory (Gymnasium reads a
    Text's shared memory once, so every later observation would repeat the first).
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

    def __hash__(self) -> int:
        return hash((TerminalText, self.min_length, self.max_length))


def _no_flattening(space: TerminalText, *_: Any) -> NoReturn:
    raise ValueError(
        f"{space} cannot be flattened: it holds any Unicode text of up to {space.max_length:,} "
        "code points, and Gymnasium's Text flattening gives one dimension per character, "
        "indexed in a fixed charset (a non-ASCII character would not be found). For a "
        "fixed-size numeric observation wrap the env in termgym.env.HashedText (docs/rl.md), "
        "or drop the text fields with gymnasium.wrappers.FilterObservation."
    )


def _no_shared_memory(space: TerminalText, n: int = 1, ctx: ModuleType | None = None) -> NoReturn:
    raise TypeError(
        f"As {space} holds text that changes every step and AsyncVectorEnv reads a Text's "
        "shared memory only once, it is not possible to share it through shared memory. "
        "For `AsyncVectorEnv`, disable `shared_memory` (AsyncVectorEnv(..., "
        "shared_memory=False), or gymnasium.make_vec(..., vector_kwargs={'shared_memory': "
        "False}))."
    )


for _function in (utils.flatdim, utils.flatten, utils.unflatten, utils.flatten_space):
    _function.register(TerminalText)(_no_flattening)
shared_memory.create_shared_memory.register(TerminalText)(_no_shared_memory)
