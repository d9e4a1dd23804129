"""The Gymnasium environment over termgym tasks."""

from __future__ import annotations

from termgym._registration import env_id, register_tasks, registered_ids
from termgym.env._async import AsyncEnvMixin, run_blocking, set_io_threads
from termgym.env._env import TerminalEnv, make
from termgym.env._episode import episode_class_of, sandbox_config
from termgym.env._evidence import baseline as tamper_baseline
from termgym.env._evidence import collect as collect_tamper
from termgym.env._infos import new_episode_id
from termgym.env._keys import NAMED_KEYS, format_keys, parse_keys, typed_text
from termgym.env._multi import MultiTaskEnv
from termgym.env._options import EnvOptions
from termgym.env._pool import PoolLease, Reservation, SandboxPool, close_all_pools, shared_pool
from termgym.env._schedule import VariantSchedule
from termgym.env._spaces import SharedTexts, TerminalText
from termgym.env._task_set import TaskSchedule, TaskSource, resolve_task_set
from termgym.env._wrappers import DiscreteCommands, HashedText

__all__ = [
    "NAMED_KEYS",
    "AsyncEnvMixin",
    "DiscreteCommands",
    "EnvOptions",
    "HashedText",
    "MultiTaskEnv",
    "PoolLease",
    "Reservation",
    "SandboxPool",
    "SharedTexts",
    "TaskSchedule",
    "TerminalEnv",
    "TerminalText",
    "VariantSchedule",
    "collect_tamper",
    "env_id",
    "episode_class_of",
    "format_keys",
    "make",
    "new_episode_id",
    "parse_keys",
    "register_tasks",
    "registered_ids",
    "resolve_task_set",
    "sandbox_config",
    "set_io_threads",
    "tamper_baseline",
    "typed_text",
    "close_all_pools",
    "run_blocking",
    "TaskSource",
    "shared_pool",
]
