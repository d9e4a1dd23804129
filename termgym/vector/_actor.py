"""One sub-environment of a RayVectorEnv, living in a Ray actor: the env and its autoreset.

The state machine is Gymnasium's AsyncVectorEnv worker's (`_async_worker`), so a
RayVectorEnv resets finished episodes exactly as an AsyncVectorEnv does in each mode.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, SupportsFloat

import gymnasium as gym
from gymnasium.vector import AutoresetMode

EnvFactory = Callable[[], gym.Env]


class SubEnv:
    """Holds one env and its autoreset flag (made as a Ray actor by RayVectorEnv)."""

    def __init__(
        self,
        factory: EnvFactory,
        autoreset_mode: AutoresetMode,
        bundles: Sequence[Any] = (),
        run_id: str = "",
    ) -> None:
        if run_id:  # what an actor of this vector that died on this node left running
            from termgym.cluster import reap_run_here

            reap_run_here(run_id)
        if bundles:
            from termgym._registration import register_tasks
            from termgym.cluster import unpack_bundles

            register_tasks(*(folder.parent for folder in unpack_bundles(bundles)))
        self.env = factory()
        self.mode = autoreset_mode
        self.autoreset = False
        self.observation: Any = None

    def spaces(self) -> tuple[gym.Space, gym.Space, dict[str, Any]]:
        """The env's observation space, action space and metadata."""
        return self.env.observation_space, self.env.action_space, dict(self.env.metadata)

    def reset(self, seed: int | None, options: dict[str, Any] | None) -> tuple[Any, dict]:
        """env.reset, clearing a pending autoreset."""
        self.observation, info = self.env.reset(seed=seed, options=options)
        self.autoreset = False
        return self.observation, info

    def set_autoreset(self) -> None:
        """Reset at the next step (NEXT_STEP mode: this actor replaced one that died)."""
        self.autoreset = True

    def last(self) -> tuple[Any, dict]:
        """The last observation, for a reset that masks this env out."""
        return self.observation, {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        """One step under the vector's autoreset mode."""
        reward: SupportsFloat
        if self.mode == AutoresetMode.NEXT_STEP:
            if self.autoreset:
                obs, info = self.env.reset()
                reward, terminated, truncated = 0.0, False, False
            else:
                obs, reward, terminated, truncated, info = self.env.step(action)
            self.autoreset = bool(terminated or truncated)
        elif self.mode == AutoresetMode.SAME_STEP:
            obs, reward, terminated, truncated, info = self.env.step(action)
            if terminated or truncated:
                reset_obs, reset_info = self.env.reset()
                info = {"final_info": info, "final_obs": obs, **reset_info}
                obs = reset_obs
        else:
            obs, reward, terminated, truncated, info = self.env.step(action)
        self.observation = obs
        return obs, float(reward), bool(terminated), bool(truncated), info

    def call(self, name: str, args: tuple, kwargs: dict) -> Any:
        """Call a method of the env (through its wrappers), or read an attribute."""
        if name in ("reset", "step", "close"):
            raise ValueError(
                f"Trying to call function `{name}` with `call`, use `{name}` directly."
            )
        attr = self.env.get_wrapper_attr(name)
        return attr(*args, **kwargs) if callable(attr) else attr

    def set_attr(self, name: str, value: Any) -> None:
        """Set an attribute of the env (through its wrappers)."""
        self.env.set_wrapper_attr(name, value)

    def pid(self) -> int:
        """The actor's process id."""
        return os.getpid()

    def node_id(self) -> str:
        """The Ray node this actor lives on."""
        import ray

        return str(ray.get_runtime_context().get_node_id())

    def close(self) -> None:
        """Close the env (its sandboxes and, as the process's last env, its pool)."""
        self.env.close()
