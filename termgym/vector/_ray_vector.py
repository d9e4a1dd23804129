"""RayVectorEnv: a Gymnasium VectorEnv whose sub-environments are Ray actors.

Each sub-environment is a `SubEnv` actor holding one unit of the `termgym_sandbox` resource,
placed by Ray on any node that advertises one (docs/scaling.md), so a vector of 256 envs
spreads over as many machines as it needs. The autoreset modes, spaces, `call`,
`get_attr`, `set_attr` and `close` behave as AsyncVectorEnv's; every step sends all
actions at once and waits for all results. An actor that dies (its node lost, its process
killed) is replaced by a fresh one; the episode it was running is reported as truncated,
with the reason in `info["actor_lost"]`.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Sequence
from copy import deepcopy
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array, iterate

from termgym.cluster import SANDBOX_RESOURCE, bundle_task, connect, require_ray
from termgym.errors import ClusterError
from termgym.vector._actor import EnvFactory, SubEnv

Wrapper = Callable[[gym.Env], gym.Env]


def _apply(make: Callable[..., gym.Env], target: str, kwargs: dict, wrappers: tuple) -> gym.Env:
    env = make(target, **kwargs)
    for wrapper in wrappers:
        env = wrapper(env)
    return env


class RayVectorEnv(VectorEnv):
    """`num_envs` copies of a task's environment, each a Ray actor somewhere in the cluster.

    Args:
        task_or_id: A task id ("cargo-limit"), a task folder, a Gymnasium id
            ("termgym/cargo-limit-v0", made with `gymnasium.make` and its wrappers), or a
            function returning an env (it must be importable or picklable on the nodes).
        num_envs: Sub-environments.
        autoreset_mode: As Gymnasium's vector envs (NEXT_STEP by default).
        wrappers: Applied in order to each sub-environment on its node.
        address: Ray address ("auto", "local", "ray://head:10001"); None joins the Ray this
            process already initialised, else "auto" when a cluster is running, else starts
            a local one advertising `num_envs` sandboxes.
        actor_options: Extra `ray.remote` options for the actors (e.g. `num_cpus=1`).
        copy: Return deep copies of the batched observations (as AsyncVectorEnv).
        **env_kwargs: Keyword options of each env (variant, backend, max_steps, ...).

    Task ids and folders are packed on the driver and unpacked on each node, so nodes need
    termgym installed, not the task files. The envs' containers carry one run id (`run_id`,
    by default a fresh one): a replacement actor, and `close()` after a replacement, remove
    the containers an actor that died left behind.
    """

    def __init__(
        self,
        task_or_id: str | Path | EnvFactory,
        num_envs: int,
        *,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        wrappers: Sequence[Wrapper] = (),
        address: str | None = None,
        actor_options: dict[str, Any] | None = None,
        copy: bool = True,
        **env_kwargs: Any,
    ) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        self.ray = _connect(address, num_envs)
        self.num_envs = num_envs
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        self.copy = copy
        if not callable(task_or_id) or isinstance(task_or_id, str | Path):
            env_kwargs.setdefault("run_id", f"rayvec-{uuid.uuid4().hex[:12]}")
        self.run_id: str = env_kwargs.get("run_id", "")
        self._factory, self._bundles = _factory(task_or_id, env_kwargs, tuple(wrappers))
        options = {"num_cpus": 0, "resources": {SANDBOX_RESOURCE: 1}, "max_restarts": 0}
        self._actor_options = {**options, **(actor_options or {})}
        self._remote = self.ray.remote(SubEnv)
        self._bundles_ref: Any = None
        self.actors = [self._spawn() for _ in range(num_envs)]
        self.replaced = 0
        obs_space, act_space, metadata = self.ray.get(self.actors[0].spaces.remote())
        self.single_observation_space = obs_space
        self.single_action_space = act_space
        self.observation_space = batch_space(obs_space, num_envs)
        self.action_space = batch_space(act_space, num_envs)
        self.metadata = {**metadata, "autoreset_mode": self.autoreset_mode}
        self.render_mode = None
        self.closed = False
        self._last: list[Any] = [None] * num_envs
        self._needs_reset = [False] * num_envs
        self._observations: Any = create_empty_array(obs_space, n=num_envs, fn=np.zeros)

    def _spawn(self) -> Any:
        if self._bundles and self._bundles_ref is None:
            self._bundles_ref = self.ray.put(self._bundles)  # one copy in the object store
        bundles = self._bundles_ref if self._bundles else ()
        return self._remote.options(**self._actor_options).remote(
            self._factory, self.autoreset_mode, bundles, self.run_id
        )

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset every sub-environment (or those `options["reset_mask"]` selects)."""
        self._check_open()
        seeds = _seeds(seed, self.num_envs)
        options = dict(options) if options else None
        mask = _mask(options.pop("reset_mask", None) if options else None, self.num_envs)
        calls = [
            ("reset", (s, options)) if chosen else ("last", ())
            for s, chosen in zip(seeds, mask, strict=True)
        ]
        results = self._gather(calls, on_loss=lambda i: self._fresh_reset(i, seeds[i], options))
        infos: dict[str, Any] = {}
        observations = []
        for i, (obs, info) in enumerate(results):
            observations.append(obs)
            self._last[i] = obs
            if mask[i]:
                self._needs_reset[i] = False
            infos = self._add_info(infos, info, i)
        return self._batch(observations), infos

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict]:
        """Step every sub-environment at once."""
        self._check_open()
        per_env = list(iterate(self.action_space, actions))
        calls = [("step", (act,)) for act in per_env]
        results = self._gather(calls, on_loss=self._lost_step)
        observations, rewards, terminated, truncated = [], [], [], []
        infos: dict[str, Any] = {}
        for i, (obs, reward, term, trunc, info) in enumerate(results):
            observations.append(obs)
            self._last[i] = obs
            rewards.append(reward)
            terminated.append(term)
            truncated.append(trunc)
            infos = self._add_info(infos, info, i)
        return (
            self._batch(observations),
            np.array(rewards, dtype=np.float64),
            np.array(terminated, dtype=np.bool_),
            np.array(truncated, dtype=np.bool_),
            infos,
        )

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """Call a method (or read an attribute) of every sub-environment."""
        self._check_open()
        return tuple(self.ray.get([a.call.remote(name, args, kwargs) for a in self.actors]))

    def get_attr(self, name: str) -> tuple[Any, ...]:
        """An attribute of every sub-environment."""
        return self.call(name)

    def set_attr(self, name: str, values: list[Any] | tuple[Any, ...] | Any) -> None:
        """Set an attribute on every sub-environment (one value each, or one for all)."""
        self._check_open()
        if not isinstance(values, list | tuple):
            values = [values] * self.num_envs
        if len(values) != self.num_envs:
            raise ValueError(
                f"Values must be a list or tuple with length equal to the number of "
                f"environments. Got `{len(values)}` values for {self.num_envs} environments."
            )
        self.ray.get([a.set_attr.remote(name, v) for a, v in zip(self.actors, values, strict=True)])

    def close_extras(self, **kwargs: Any) -> None:
        """Close every sub-environment (its sandboxes), then end the actors."""
        refs = [actor.close.remote() for actor in self.actors]
        self.ray.wait(refs, num_returns=len(refs), timeout=60)
        for actor in self.actors:
            try:
                self.ray.kill(actor)
            except Exception:  # noqa: BLE001 - an actor already gone
                continue
        if self.replaced and self.run_id:  # containers of actors that died, on any node
            from termgym.cluster import reap_run_on_every_node

            reap_run_on_every_node(self.run_id)

    # -- internals ---------------------------------------------------------------------------

    def _gather(self, calls: list[tuple[str, tuple]], on_loss: Callable[[int], Any]) -> list:
        """Send every actor its call (method name, arguments) at once; an actor that died is
        replaced and `on_loss(i)` answers in its place."""
        from ray.exceptions import RayActorError

        refs = [
            getattr(actor, name).remote(*args)
            for (name, args), actor in zip(calls, self.actors, strict=True)
        ]
        results = []
        for i, ref in enumerate(refs):
            try:
                results.append(self.ray.get(ref))
            except RayActorError as exc:
                self.actors[i] = self._spawn()
                self.replaced += 1
                self._loss_reason = f"{type(exc).__name__}: the actor of sub-environment {i} died"
                results.append(on_loss(i))
        return results

    def _fresh_reset(self, i: int, seed: int | None, options: dict | None) -> tuple[Any, dict]:
        obs, info = self.ray.get(self.actors[i].reset.remote(seed, options))
        return obs, {**info, "actor_lost": self._loss_reason}

    def _lost_step(self, i: int) -> tuple[Any, float, bool, bool, dict]:
        """The episode on a lost actor ends truncated; the replacement starts as the mode says."""
        info: dict[str, Any] = {"actor_lost": self._loss_reason}
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            obs, reset_info = self.ray.get(self.actors[i].reset.remote(None, None))
            return (
                obs,
                0.0,
                False,
                True,
                {"final_info": info, "final_obs": self._last[i], **reset_info},
            )
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            self.ray.get(self.actors[i].set_autoreset.remote())
        return self._last[i], 0.0, False, True, info

    def _batch(self, observations: list[Any]) -> Any:
        self._observations = concatenate(
            self.single_observation_space, observations, self._observations
        )
        return deepcopy(self._observations) if self.copy else self._observations

    def _check_open(self) -> None:
        if self.closed:
            raise gym.error.ClosedEnvironmentError(
                "Trying to operate on `RayVectorEnv` after close."
            )

    def __repr__(self) -> str:
        return f"RayVectorEnv(num_envs={self.num_envs}, autoreset_mode={self.autoreset_mode})"


def _connect(address: str | None, num_envs: int) -> Any:
    ray = require_ray()
    if ray.is_initialized():
        return ray
    if address is None:
        try:
            return connect("auto")
        except ClusterError:
            address = "local"
    return connect(address, sandboxes=num_envs)


def _factory(
    task_or_id: str | Path | EnvFactory, kwargs: dict[str, Any], wrappers: tuple[Wrapper, ...]
) -> tuple[EnvFactory, tuple]:
    """How each actor makes its env, and the task bundles it needs unpacked first."""
    if callable(task_or_id) and not isinstance(task_or_id, str | Path):
        if kwargs or wrappers:
            raise ValueError("an env factory takes no env options or wrappers: apply them in it")
        return task_or_id, ()
    from termgym._registration import NAMESPACE
    from termgym.tasks import get_task

    target = str(task_or_id)
    if target.startswith(NAMESPACE + "/"):
        spec = gym.spec(target)
        task = get_task(str(spec.kwargs["task"]))
        make: Callable[..., gym.Env] = gym.make
    else:
        task = get_task(target)
        target = task.id
        from termgym.env import make as make_env

        make = make_env
    factory = functools.partial(_apply, make, target, dict(kwargs), wrappers)
    from termgym._task_paths import BUNDLED

    if task.root.resolve().is_relative_to(BUNDLED.resolve()):
        return factory, ()  # every node has the bundled tasks
    return factory, (bundle_task(task.id, task.root),)


def _seeds(seed: int | list[int | None] | None, n: int) -> list[int | None]:
    if seed is None:
        return [None] * n
    if isinstance(seed, int):
        return [seed + i for i in range(n)]
    if len(seed) != n:
        raise ValueError(
            f"If seeds are passed as a list the length must match num_envs={n} "
            f"but got length={len(seed)}."
        )
    return list(seed)


def _mask(mask: Any, n: int) -> list[bool]:
    if mask is None:
        return [True] * n
    if not isinstance(mask, np.ndarray) or mask.shape != (n,) or mask.dtype != np.bool_:
        raise TypeError(
            f"`options['reset_mask']` must be a numpy bool array of shape ({n},), got {mask!r}"
        )
    if not mask.any():
        raise ValueError(f"`options['reset_mask']` must select at least one env, got {mask}")
    return mask.tolist()
