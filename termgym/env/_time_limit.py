"""Gymnasium TimeLimit wrappers around an env, found at reset, so that the env grades the step
they truncate at as it grades its own last step.

`gymnasium.make(id, max_episode_steps=N)` (or `TimeLimit(env, N)`) truncates an episode
after the env returned its Nth step: the env would not know that step was the last, and the
episode would end ungraded. A TimeLimit resets its count and then calls the reset of the env
it wraps, so while an env resets, every TimeLimit whose episode is starting is on the call
stack, above a reset of the env it wraps (the env itself, or an env such as MultiTaskEnv
that resets it). The env keeps those wrappers and asks them, at each step, whether they
will cut after it (their own count, so a wrapper between them that steps more or less often
changes nothing).
"""

from __future__ import annotations

import sys
from typing import Any

from gymnasium.wrappers import TimeLimit


def enclosing_time_limits(env: Any) -> tuple[TimeLimit, ...]:
    """The TimeLimit wrappers resetting now around `env` (call from `env.reset`)."""
    found: list[TimeLimit] = []
    resetting: list[Any] = []  # the objects whose methods are running, innermost first
    frame = sys._getframe(1)
    while frame is not None:
        owner = frame.f_locals.get("self")
        if isinstance(owner, TimeLimit) and frame.f_code.co_name == "reset":
            inner = getattr(owner, "unwrapped", None)
            if any(inner is other for other in resetting):
                found.append(owner)
        elif owner is not None:
            resetting.append(owner)
        frame = frame.f_back  # type: ignore[assignment]
    return tuple(found) if any(other is env for other in resetting) else ()


def cuts_after_this_step(limits: tuple[TimeLimit, ...]) -> bool:
    """True if one of `limits` truncates the episode once the step under way returns."""
    for limit in limits:
        elapsed = getattr(limit, "_elapsed_steps", None)
        most = getattr(limit, "_max_episode_steps", None)
        if isinstance(elapsed, int) and isinstance(most, int) and elapsed + 1 >= most:
            return True
    return False
