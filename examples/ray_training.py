"""The rule-internalization policy trained over a RayVectorEnv: sub-environments anywhere in
a Ray cluster, the same wrappers, policy and REINFORCE update as rule_internalization.py.

    python examples/ray_training.py --envs 4                      # a local Ray on this machine
    python examples/ray_training.py --address auto --envs 64      # the cluster this node is in
    python examples/ray_training.py --address ray://head:10001 --envs 256

Each sub-environment asks for one `termgym_sandbox` resource; start every node with
`ray start ... --resources='{"termgym_sandbox": N}'` (docs/scaling.md). The task folder is
shipped to the nodes with the actors; the nodes need termgym installed (`termgym[ray]`).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode

sys.path.insert(0, str(Path(__file__).resolve().parent))

from rule_internalization import (  # noqa: E402
    COMMANDS,
    CONDITIONS,
    MAX_STEPS,
    TASK,
    Policy,
    Trajectory,
    reinforce_update,
    run_episodes,
)

from termgym.env import DiscreteCommands, HashedText  # noqa: E402
from termgym.vector import RayVectorEnv  # noqa: E402


def make_vector(
    args: argparse.Namespace, variant: Any, *, shadow: bool, contradict: str = "fixed"
) -> RayVectorEnv:
    """The cargo task in `args.envs` Ray actors, wrapped for the policy on their nodes."""
    return RayVectorEnv(
        str(TASK),
        args.envs,
        autoreset_mode=AutoresetMode.SAME_STEP,
        wrappers=[
            functools.partial(HashedText, dim=args.dim),
            functools.partial(DiscreteCommands, commands=COMMANDS),
        ],
        address=args.address,
        variant=variant,
        backend=args.backend,
        max_steps=MAX_STEPS,
        shadow=shadow,
        agent="ray-reinforce",
        rule_draw={"contradict": contradict},
    )


def train(args: argparse.Namespace) -> tuple[Policy, dict[str, Any]]:
    """REINFORCE on varied rules, over the Ray vector env."""
    varied = CONDITIONS["varied"]
    vec = make_vector(
        args, varied.schedule(args.episodes), shadow=False, contradict=varied.contradict
    )
    policy = Policy.zeros(int(vec.single_observation_space.shape[0]), len(COMMANDS) + 1, 0)
    baseline = np.zeros(MAX_STEPS)
    batch: list[tuple[Trajectory, float]] = []
    rewards: list[float] = []

    def on_episode(trajectory: Trajectory, reward: float, final: dict[str, Any]) -> None:
        if final.get("error"):
            return
        batch.append((trajectory, reward))
        rewards.append(reward)
        if len(batch) == args.batch:
            reinforce_update(policy, batch, baseline, args.lr)
            batch.clear()

    began = time.perf_counter()
    try:
        steps = run_episodes(vec, policy, args.episodes, 0, on_episode)
    finally:
        vec.close()
    seconds = time.perf_counter() - began
    tail = rewards[-max(1, len(rewards) // 4) :]
    return policy, {
        "episodes": len(rewards),
        "env_steps": steps,
        "seconds": seconds,
        "env_steps_per_second": steps / seconds,
        "mean_reward_first_quarter": float(np.mean(rewards[: max(1, len(rewards) // 4)])),
        "mean_reward_last_quarter": float(np.mean(tail)),
    }


def evaluate(policy: Policy, args: argparse.Namespace) -> dict[str, float]:
    """Pass rate of the trained policy on contradicted episodes."""
    vec = make_vector(args, "contradicted", shadow=True)
    rewards: list[float] = []
    try:
        run_episodes(vec, policy, args.eval_episodes, 10_000, lambda t, r, f: rewards.append(r))
    finally:
        vec.close()
    return {"contradicted_pass_rate": float(np.mean(rewards)), "eval_episodes": len(rewards)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", default=None, help="Ray address (default: auto or local)")
    parser.add_argument("--envs", type=int, default=4)
    parser.add_argument("--episodes", type=int, default=400)
    parser.add_argument("--eval-episodes", type=int, default=40)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--lr", type=float, default=0.5)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--backend", default=None, help="docker or bwrap (default: per node)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes: checks the mechanics")
    parser.add_argument("--out", type=Path, default=None, help="write the results as JSON")
    args = parser.parse_args(argv)
    if args.quick:
        args.episodes, args.eval_episodes, args.batch = 16, 4, 4
    policy, log = train(args)
    log |= evaluate(policy, args)
    print(
        f"{args.envs} Ray envs: {log['episodes']} episodes in {log['seconds']:.0f} s "
        f"({log['env_steps_per_second']:.1f} env steps/s); reward "
        f"{log['mean_reward_first_quarter']:.2f} -> {log['mean_reward_last_quarter']:.2f}; "
        f"contradicted pass rate {log['contradicted_pass_rate']:.2f}"
    )
    if args.out:
        args.out.write_text(json.dumps(log, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
