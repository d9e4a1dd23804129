"""Wrappers that let standard RL libraries train on termgym: discrete actions, numeric obs."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from numbers import Integral
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.spaces import Text

from termgym._actions import SUBMIT

_TOKEN = re.compile(r"[A-Za-z_]+|\d+|[^\sA-Za-z_\d]")


class DiscreteCommands(gym.ActionWrapper):
    """Actions are indices into a fixed list of candidate commands.

    Action `i` runs `commands[i]`; if `submit_action` is True (the default) the last index,
    `len(commands)`, submits. The list is the policy's whole vocabulary, so choose it per task.

    Args:
        env: A termgym environment in command mode.
        commands: The candidate shell commands.
        submit_action: Add a final action that submits.

    Raises:
        ValueError: no commands, an empty one, or an environment in keys mode.
    """

    def __init__(self, env: gym.Env, commands: Sequence[str], submit_action: bool = True) -> None:
        super().__init__(env)
        mode = getattr(getattr(env.unwrapped, "options", None), "mode", "command")
        if mode != "command":
            raise ValueError(
                f"DiscreteCommands needs an environment in mode 'command', got {mode!r}"
            )
        if isinstance(commands, str) or not isinstance(commands, Sequence) or not commands:
            # a set's order changes from one process to the next (str hashing), so a saved
            # policy's indices would run other commands; a generator would be read up here
            raise ValueError(
                "DiscreteCommands needs a non-empty list of commands (or tuple), in the order "
                f"of the action indices, got {commands!r}"
            )
        bad = [c for c in commands if not isinstance(c, str) or not c.strip()]
        if bad:
            raise ValueError(f"candidate commands must be non-empty strings; got {bad!r}")
        self.commands = list(commands) + ([SUBMIT] if submit_action else [])
        self.action_space = spaces.Discrete(len(self.commands))

    def action(self, action: Any) -> str:
        """The command of an action index."""
        index = action
        if isinstance(action, np.ndarray | np.generic) and np.size(action) == 1:
            index = action.item()
        if isinstance(index, bool) or not isinstance(index, Integral):
            raise ValueError(
                f"an action of DiscreteCommands is the index of a command, an int in "
                f"[0, {len(self.commands) - 1}]; got {action!r}"
            )
        position = int(index)
        if not 0 <= position < len(self.commands):
            raise ValueError(f"action must lie in [0, {len(self.commands) - 1}], got {position}")
        return self.commands[position]


class HashedText(gym.ObservationWrapper):
    """Observations become a fixed-size float vector: hashed tokens of the terminal text.

    Each of `keys` (default: the latest output and the screen) is split into words, numbers
    and punctuation; every token and token bigram adds 1 to bucket hash(key, token) mod `dim`
    (signed, so collisions cancel on average); the vector is then scaled to unit length. The
    exit code (one-hot over ok / error / none) and the step fraction are appended.

    Args:
        env: A termgym environment.
        dim: Number of hash buckets.
        keys: Which text fields of the observation to hash ("output", "screen",
            "instruction").

    Raises:
        ValueError: `dim` below 8, or a key that is no text field of the observation.
    """

    def __init__(
        self, env: gym.Env, dim: int = 256, keys: Sequence[str] = ("output", "screen")
    ) -> None:
        super().__init__(env)
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 8:
            raise ValueError(f"dim must be an int of at least 8, got {dim!r}")
        space = env.observation_space
        texts = [k for k, sub in getattr(space, "spaces", {}).items() if isinstance(sub, Text)]
        if isinstance(keys, str) or not keys or any(key not in texts for key in keys):
            raise ValueError(f"keys must be a non-empty list among {texts}, got {keys!r}")
        step_space = getattr(space, "spaces", {}).get("step")
        if not isinstance(step_space, spaces.Discrete):
            raise ValueError(f"HashedText needs a termgym observation with a 'step', got {space}")
        self.dim = dim
        self.keys = tuple(keys)
        self._max_steps = max(1, int(step_space.n) - 1)
        size = dim * len(self.keys) + 4
        self.observation_space = spaces.Box(-1.0, 1.0, shape=(size,), dtype=np.float32)
        self._cache: dict[tuple[str, str], tuple[int, float]] = {}

    def observation(self, observation: dict[str, Any]) -> np.ndarray:
        """The numeric vector of one termgym observation."""
        parts = [self._hash(key, str(observation.get(key, ""))) for key in self.keys]
        code = int(observation.get("exit_code", -1))
        tail = np.zeros(4, dtype=np.float32)
        tail[0 if code == 0 else 1 if code > 0 else 2] = 1.0
        tail[3] = min(1.0, int(observation.get("step", 0)) / self._max_steps)
        return np.clip(np.concatenate([*parts, tail]), -1.0, 1.0).astype(np.float32)

    def _hash(self, key: str, text: str) -> np.ndarray:
        vector = np.zeros(self.dim, dtype=np.float32)
        tokens = _TOKEN.findall(text[-20_000:])
        for gram in [*tokens, *(f"{a} {b}" for a, b in zip(tokens, tokens[1:], strict=False))]:
            bucket, sign = self._bucket(key, gram)
            vector[bucket] += sign
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm else vector

    def _bucket(self, key: str, token: str) -> tuple[int, float]:
        hit = self._cache.get((key, token))
        if hit is None:
            digest = hashlib.blake2b(f"{key}\x00{token}".encode(), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            hit = (value % self.dim, 1.0 if (value >> 63) & 1 else -1.0)
            if len(self._cache) < 100_000:
                self._cache[(key, token)] = hit
        return hit
