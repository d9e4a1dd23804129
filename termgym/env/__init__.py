"""The Gymnasium environment over termgym tasks."""

from __future__ import annotations

from termgym.env._env import TerminalEnv
from termgym.env._keys import NAMED_KEYS, parse_keys
from termgym.env._pool import PoolStats, SandboxPool
from termgym.env._registration import env_id, make, register_tasks, registered_ids
from termgym.env._schedule import VariantSchedule
from termgym.env._spaces import TerminalText

__all__ = [
    "NAMED_KEYS",
    "PoolStats",
    "SandboxPool",
    "TerminalEnv",
    "TerminalText",
    "VariantSchedule",
    "env_id",
    "make",
    "parse_keys",
    "register_tasks",
    "registered_ids",
]
