"""A Text space for real terminal text: any Unicode string, spaces and newlines included."""

from __future__ import annotations

import multiprocessing as mp
import string
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, NoReturn, overload

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

    In `AsyncVectorEnv`'s shared memory (its default) each env's text is written every step
    as UTF-8 and read back exactly (`SharedTexts`). What it cannot do, it refuses with a
    clear error rather than a wrong answer: it cannot be flattened into a vector (Gymnasium's
    Text flattening is one dimension per character of a fixed charset).
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


class SharedTexts(Sequence[str]):
    """The texts of a batch, read from `AsyncVectorEnv`'s shared memory when looked at.

    AsyncVectorEnv reads its shared memory once, when it starts, and hands out (a deep copy
    of) what that read returned after every step: for text this object is what it returns.
    Each access decodes the current text of one env; a deep copy (what AsyncVectorEnv hands
    out by default, `copy=True`) or a pickle is a plain tuple of str, read at that moment.
    """

    def __init__(self, memory: _TextMemory) -> None:
        self._memory = memory

    def __len__(self) -> int:
        return len(self._memory.lengths)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...

    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        if not -len(self) <= index < len(self):
            raise IndexError(f"env index {index} out of range for {len(self)} envs")
        return self._memory.read(index % len(self))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SharedTexts | tuple | list):
            return tuple(self) == tuple(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # its content changes every step

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[str, ...]:
        return tuple(self)

    def __reduce__(self) -> tuple[type, tuple[tuple[str, ...]]]:
        return tuple, (tuple(self),)

    def __repr__(self) -> str:
        return f"SharedTexts({tuple(self)!r})"


@dataclass(frozen=True)
class _TextMemory:
    """One text field of n envs in shared memory: each env's length in bytes, and a slot of
    4 bytes per code point (UTF-8 with surrogates passed through: any str, exactly)."""

    lengths: Any  # multiprocessing Array of int64, one per env
    data: Any  # multiprocessing Array of bytes, n slots of `slot` bytes
    slot: int

    def write(self, index: int, text: str) -> None:
        encoded = text.encode("utf-8", "surrogatepass")
        start = index * self.slot
        with self.data.get_lock():
            memoryview(self.data.get_obj()).cast("B")[start : start + len(encoded)] = encoded
            self.lengths[index] = len(encoded)

    def read(self, index: int) -> str:
        start = index * self.slot
        with self.data.get_lock():
            size = self.lengths[index]
            raw = bytes(memoryview(self.data.get_obj()).cast("B")[start : start + size])
        return raw.decode("utf-8", "surrogatepass")


def _create_shared_memory(space: TerminalText, n: int = 1, ctx: ModuleType = mp) -> _TextMemory:
    slot = 4 * space.max_length  # a code point is at most 4 bytes of UTF-8
    return _TextMemory(ctx.Array("q", n), ctx.Array("B", n * slot), slot)


def _write_to_shared_memory(
    space: TerminalText, index: int, value: str, memory: _TextMemory
) -> None:
    if not space.contains(value):
        raise ValueError(
            f"Expected a str of at most {space.max_length:,} code points for {space}; got "
            f"{type(value).__name__} of length {len(value) if isinstance(value, str) else '?'}."
        )
    memory.write(index, value)


def _read_from_shared_memory(space: TerminalText, memory: _TextMemory, n: int = 1) -> SharedTexts:
    return SharedTexts(memory)


for _function in (utils.flatdim, utils.flatten, utils.unflatten, utils.flatten_space):
    _function.register(TerminalText)(_no_flattening)
shared_memory.create_shared_memory.register(TerminalText)(_create_shared_memory)
shared_memory.write_to_shared_memory.register(TerminalText)(_write_to_shared_memory)
shared_memory.read_from_shared_memory.register(TerminalText)(_read_from_shared_memory)
