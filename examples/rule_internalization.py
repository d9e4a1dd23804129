"""Rule internalization in miniature: a policy trained on a fixed grader vs on varied rules.

The task (examples/tasks/cargo-limit) asks for the cargo weight limit that /app/policy.txt
states; its file grader checks /app/answer against the episode's rule. The policy picks
among six commands (DiscreteCommands): read the policy, write 100, 150, 200 or 250, submit;
it sees the terminal through HashedText. Rewards are discounted (gamma 0.9), so reading the
policy costs a step: under a grader that always wants 100, writing 100 blind pays more.

Training conditions, each over several seeds, with REINFORCE on a linear softmax policy
(numpy only):
    A  "fixed"     every training episode original (the first experiment);
    B  "varied"    original, contradicted (fixed at 150) and sampled mixed, 1/3 each (the first
                   experiment: 150 is the modal value);
    C  "balanced"  sampled only: 150, 200, 250 uniform, no value modal (the re-run);
    D  "switch"    original (100) for --train-episodes episodes, then the rule switched to 200
                   for as many more (the re-run: relearning after a rule change).
The re-run conditions (C, D) add a seventh action that copies the value from the policy file
into the answer (the only way to answer a held-out value, 300 or 350, which no `echo` action
writes). Each trained policy is then evaluated (shadow graded) on original, contradicted and
held-out episodes, and termgym.analysis.metrics gives pass rates, the stale-rule rate and the
adaptation rate with bootstrap intervals; for D, termgym.analysis.relearning gives
episodes-to-recover from the training log. Results go to a JSON file (and the training log
to a JSONL file beside it).

    python examples/rule_internalization.py                 # the full experiment
    python examples/rule_internalization.py --quick         # a mechanical check (CI)
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv

import termgym
from termgym.env import DiscreteCommands, HashedText, VariantSchedule
from termgym.analysis.metrics import EpisodeSummary, RunMetrics, compute_metrics
from termgym.analysis.relearning import TrainingLog, recovery
from termgym.sandbox import bwrap_works

TASK = Path(__file__).resolve().parent / "tasks" / "cargo-limit"
VALUES = (100, 150, 200, 250)
HELD_OUT = (300, 350)
COPY = "sed -n 's/^max_weight: *//p' policy.txt > answer"
COMMAND_SETS = {
    "classic": ("cat policy.txt", *(f"echo {v} > answer" for v in VALUES)),
    "copy": ("cat policy.txt", *(f"echo {v} > answer" for v in VALUES), COPY),
}
COMMANDS = COMMAND_SETS["classic"]
SWITCHED_VALUE = "200"


@dataclass(frozen=True)
class Condition:
    """A training condition: its schedule (a function of the training length), its action
    set, and how contradicted values are drawn."""

    schedule: Callable[[int], Any]
    commands: str = "classic"
    contradict: str = "fixed"
    switch: bool = False

    def episodes(self, train_episodes: int) -> int:
        """Training episodes: twice the length for a switch (before and after it)."""
        return 2 * train_episodes if self.switch else train_episodes


CONDITIONS = {
    "fixed": Condition(lambda n: "original"),
    "varied": Condition(lambda n: {"original": 1.0, "contradicted": 1.0, "sampled": 1.0}),
    "balanced": Condition(lambda n: {"sampled": 1.0}, commands="copy", contradict="drawn"),
    "switch": Condition(
        lambda n: [
            {"episodes": n, "mix": "original"},
            {"mix": "original", "rules": {"max_weight": SWITCHED_VALUE}},
        ],
        commands="copy",
        contradict="drawn",
        switch=True,
    ),
}
EVAL_VARIANTS = ("original", "contradicted")
HELD_OUT_VARIANT = "held-out"
"""An evaluation variant of this script: sampled, drawing the held-out values (split eval)."""
MAX_STEPS = 4
GAMMA = 0.9
RECOVER_FRACTION = 0.9
RECOVER_WINDOW = 40


@dataclass(frozen=True)
class Config:
    """Sizes of one run of the experiment."""

    seeds: tuple[int, ...] = (0, 1, 2)
    train_episodes: int = 400
    eval_episodes: int = 40
    envs: int = 1
    batch: int = 4
    lr: float = 0.5
    dim: int = 64
    backend: str | None = None
    resamples: int = 2000
    conditions: tuple[str, ...] = ("fixed", "varied")
    eval_variants: tuple[str, ...] = EVAL_VARIANTS


@dataclass
class Policy:
    """Linear softmax over hashed-text features: logits = W x + b."""

    weights: np.ndarray
    bias: np.ndarray
    rng: np.random.Generator

    @classmethod
    def zeros(cls, features: int, actions: int, seed: int) -> Policy:
        return cls(np.zeros((actions, features)), np.zeros(actions), np.random.default_rng(seed))

    def probs(self, obs: np.ndarray) -> np.ndarray:
        logits = obs @ self.weights.T + self.bias
        logits -= logits.max(axis=-1, keepdims=True)
        exp = np.exp(logits)
        return exp / exp.sum(axis=-1, keepdims=True)

    def act(self, obs: np.ndarray) -> np.ndarray:
        """One sampled action per row of `obs`."""
        p = self.probs(obs)
        return np.array([self.rng.choice(len(row), p=row) for row in p])


@dataclass
class Trajectory:
    """One environment's episode in progress: observations and actions so far."""

    obs: list[np.ndarray] = field(default_factory=list)
    actions: list[int] = field(default_factory=list)


def make_vector(
    schedule: Any,
    config: Config,
    *,
    shadow: bool,
    agent: str,
    commands: tuple[str, ...] = COMMANDS,
    rule_draw: dict[str, str] | None = None,
) -> Any:
    """A vector env of the cargo task, wrapped for the policy, resetting itself on the same step."""

    def factory() -> Any:
        env = termgym.make(
            str(TASK),
            variant=schedule,
            backend=config.backend,
            max_steps=MAX_STEPS,
            shadow=shadow,
            pool_size=1,
            agent=agent,
            rule_draw=rule_draw,
        )
        return DiscreteCommands(HashedText(env, dim=config.dim), commands)

    fns = [factory for _ in range(config.envs)]
    if config.envs == 1:
        return SyncVectorEnv(fns, autoreset_mode=AutoresetMode.SAME_STEP)
    return AsyncVectorEnv(fns, autoreset_mode=AutoresetMode.SAME_STEP)


def run_episodes(
    vec: Any,
    policy: Policy,
    episodes: int,
    seed: int,
    on_episode: Callable[[Trajectory, float, dict[str, Any]], None],
) -> int:
    """Step `vec` with `policy` until `episodes` episodes have ended; returns env steps taken."""
    obs, _ = vec.reset(seed=seed)
    running = [Trajectory() for _ in range(vec.num_envs)]
    ended = steps = 0
    while ended < episodes:
        actions = policy.act(obs)
        for i, trajectory in enumerate(running):
            trajectory.obs.append(obs[i])
            trajectory.actions.append(int(actions[i]))
        obs, reward, terminated, truncated, info = vec.step(actions)
        steps += vec.num_envs
        for i in np.flatnonzero(terminated | truncated).tolist():
            final = {
                key: value[i]
                for key, value in info["final_info"].items()
                if isinstance(value, np.ndarray) and not key.startswith("_")
            }
            if ended < episodes:
                on_episode(running[i], float(reward[i]), final)
            ended += 1
            running[i] = Trajectory()
    return steps


def reinforce_update(
    policy: Policy, batch: list[tuple[Trajectory, float]], baseline: np.ndarray, lr: float
) -> None:
    """One REINFORCE step over a batch of episodes (per-step running-mean baseline)."""
    grad_w = np.zeros_like(policy.weights)
    grad_b = np.zeros_like(policy.bias)
    for trajectory, reward in batch:
        length = len(trajectory.actions)
        for t, (x, a) in enumerate(zip(trajectory.obs, trajectory.actions, strict=True)):
            ret = reward * GAMMA ** (length - 1 - t)
            advantage = ret - baseline[t]
            baseline[t] += 0.05 * (ret - baseline[t])
            p = policy.probs(x[None, :])[0]
            p[a] -= 1.0  # -(onehot - p): the gradient of -log p(a)
            grad_w -= advantage * np.outer(p, x)
            grad_b -= advantage * p
    policy.weights += lr * grad_w / len(batch)
    policy.bias += lr * grad_b / len(batch)


def train(condition: str, seed: int, config: Config) -> tuple[Policy, dict[str, Any]]:
    """Train one policy; returns it and its training log (reward curve, steps, seconds)."""
    spec = CONDITIONS[condition]
    episodes = spec.episodes(config.train_episodes)
    vec = make_vector(
        spec.schedule(config.train_episodes),
        config,
        shadow=False,
        agent=f"train-{condition}",
        commands=COMMAND_SETS[spec.commands],
        rule_draw={"contradict": spec.contradict},
    )
    features = int(vec.single_observation_space.shape[0])
    policy = Policy.zeros(features, int(vec.single_action_space.n), seed)
    baseline = np.zeros(MAX_STEPS)
    batch: list[tuple[Trajectory, float]] = []
    rewards: list[float] = []
    reads: list[bool] = []
    passed: list[bool] = []
    errors = 0

    def on_episode(trajectory: Trajectory, reward: float, final: dict[str, Any]) -> None:
        nonlocal errors
        if final.get("error"):
            errors += 1
            return
        batch.append((trajectory, reward))
        rewards.append(reward)
        passed.append(reward > 0)  # the grader's score is 0 or 1, discounted by the steps
        reads.append(trajectory.actions[0] == 0)
        if len(batch) == config.batch:
            reinforce_update(policy, batch, baseline, config.lr)
            batch.clear()

    began = time.perf_counter()
    try:
        steps = run_episodes(vec, policy, episodes, seed, on_episode)
    finally:
        vec.close()
    seconds = time.perf_counter() - began
    window = max(1, episodes // 10)
    curve = [
        {
            "episodes": min(len(rewards), start + window),
            "mean_reward": float(np.mean(rewards[start : start + window])),
            "read_first": float(np.mean(reads[start : start + window])),
        }
        for start in range(0, len(rewards), window)
    ]
    log: dict[str, Any] = {"episodes": len(rewards), "infra_errors": errors, "env_steps": steps}
    log |= {"seconds": seconds, "steps_per_second": steps / seconds, "curve": curve}
    log["passed"] = [int(p) for p in passed]
    if spec.switch:
        log["switch_at"] = config.train_episodes
    return policy, log


def evaluate(
    policy: Policy, condition: str, seed: int, config: Config
) -> tuple[list[EpisodeSummary], dict[str, Any]]:
    """Run the trained policy (sampling its actions) on original and contradicted episodes."""
    summaries: list[EpisodeSummary] = []
    behaviour: dict[str, Any] = {}
    spec = CONDITIONS[condition]
    commands = COMMAND_SETS[spec.commands]
    for variant in config.eval_variants:
        held_out = variant == HELD_OUT_VARIANT
        vec = make_vector(
            "sampled" if held_out else variant,
            config,
            shadow=True,
            agent=condition,
            commands=commands,
            rule_draw={"split": "eval" if held_out else "train", "contradict": spec.contradict},
        )
        first_actions: list[int] = []
        on_episode = _collector(
            summaries, first_actions, f"{condition}-{seed}-{variant}", variant if held_out else ""
        )
        try:
            run_episodes(vec, policy, config.eval_episodes, seed + 10_000, on_episode)
        finally:
            vec.close()
        counts = np.bincount(first_actions, minlength=len(commands) + 1)
        behaviour[variant] = {
            "first_action": {
                name: int(n) for name, n in zip([*commands, "<submit>"], counts, strict=True)
            }
        }
    return summaries, behaviour


def _collector(
    summaries: list[EpisodeSummary], first_actions: list[int], prefix: str, label: str = ""
) -> Callable[[Trajectory, float, dict[str, Any]], None]:
    """An episode callback appending each evaluation episode's summary and first action
    (`label` replaces the variant's name, e.g. "held-out" for sampled on held-out values)."""
    condition, seed = prefix.split("-")[0], prefix.split("-")[1]

    def on_episode(trajectory: Trajectory, reward: float, final: dict[str, Any]) -> None:
        first_actions.append(trajectory.actions[0])
        summaries.append(
            EpisodeSummary(
                episode_id=f"{prefix}-{len(first_actions)}",
                # the bootstrap's cluster key: the episodes of one trained policy
                task=f"cargo-limit#seed{seed}",
                variant=label or str(final["variant"]),
                agent=condition,
                passed=reward >= 1.0,
                episode_class=final.get("class") or None,
                reward=reward,
                error=final.get("error") or None,
                steps=len(trajectory.actions),
            )
        )

    return on_episode


def metrics_dict(metrics: RunMetrics) -> dict[str, Any]:
    """The metrics the experiment reports, each as value and interval."""
    chosen = {
        "pass_rate[original]": metrics.pass_rate.get("original"),
        "pass_rate[contradicted]": metrics.pass_rate.get("contradicted"),
        "pass_rate[sampled]": metrics.pass_rate.get("sampled"),
        "pass_rate[held-out]": metrics.pass_rate.get(HELD_OUT_VARIANT),
        "stale_rate": metrics.stale_rate,
        "adaptation_rate": metrics.adaptation_rate,
        "memorization_index": metrics.memorization_index,
        "drop": metrics.drop,
    }
    out: dict[str, Any] = {
        name: {"value": e.value, "low": e.low, "high": e.high, "n": e.n}
        for name, e in chosen.items()
        if e is not None
    }
    out["episodes"] = metrics.episodes
    out["infra_errors"] = metrics.infra_errors
    out["class_counts"] = metrics.class_counts
    return out


def recovery_dict(per_seed: dict[int, Any], config: Config) -> dict[str, Any]:
    """Episodes-to-recover after the switch, per seed and pooled (termgym.analysis.relearning)."""
    log = TrainingLog(
        {str(s): tuple(float(p) for p in r["train"]["passed"]) for s, r in per_seed.items()},
        config.train_episodes,
    )
    found = recovery(
        log, fraction=RECOVER_FRACTION, window=RECOVER_WINDOW, resamples=config.resamples
    )
    e = found.episodes
    return {
        "episodes": {"value": e.value, "low": e.low, "high": e.high, "n": e.n},
        "per_seed": dict(found.per_seed),
        "censored": found.censored,
        "pre_rate": dict(found.pre_rate),
        "fraction": found.fraction,
        "window": found.window,
        "switch_at": found.switch_at,
        "text": found.format(),
    }


def write_training_log(results: dict[str, Any], path: Path) -> None:
    """Every training episode's pass as JSONL, one line per (condition, seed, episode)."""
    with path.open("w") as handle:
        for condition, data in results["conditions"].items():
            for seed, run in data["seeds"].items():
                for episode, passed in enumerate(run["train"]["passed"]):
                    line = {"condition": condition, "seed": seed, "episode": episode}
                    handle.write(json.dumps({**line, "passed": bool(passed)}) + "\n")


def run(config: Config) -> dict[str, Any]:
    """The whole experiment: train and evaluate every condition on every seed."""
    began = time.perf_counter()
    results: dict[str, Any] = {"config": config.__dict__ | {"seeds": list(config.seeds)}}
    results["setup"] = {
        "task": "cargo-limit",
        "commands": [*COMMANDS, termgym.SUBMIT],
        "gamma": GAMMA,
        "max_steps": MAX_STEPS,
        "conditions": {
            name: {
                "schedule": c.schedule(config.train_episodes),
                "commands": list(COMMAND_SETS[c.commands]),
                "contradict": c.contradict,
                "train_episodes": c.episodes(config.train_episodes),
            }
            for name, c in CONDITIONS.items()
            if name in config.conditions
        },
        "eval_variants": list(config.eval_variants),
        "held_out": list(HELD_OUT),
        "recover": {"fraction": RECOVER_FRACTION, "window": RECOVER_WINDOW},
    }
    results["conditions"] = {}
    for condition in config.conditions:
        VariantSchedule.coerce(CONDITIONS[condition].schedule(config.train_episodes))
        everything: list[EpisodeSummary] = []
        per_seed = {}
        for seed in config.seeds:
            policy, log = train(condition, seed, config)
            summaries, behaviour = evaluate(policy, condition, seed, config)
            everything += summaries
            metrics = compute_metrics(summaries, resamples=config.resamples, seed=seed)
            per_seed[seed] = {"train": log, "eval": metrics_dict(metrics), "behaviour": behaviour}
            passes = ", ".join(f"{v} {e.format()}" for v, e in metrics.pass_rate.items())
            print(
                f"{condition:6s} seed {seed}: trained {log['episodes']} episodes in "
                f"{log['seconds']:.0f} s ({log['steps_per_second']:.1f} env steps/s); "
                f"pass {passes}; stale {metrics.stale_rate.format()}, "
                f"adapted {metrics.adaptation_rate.format()}",
                flush=True,
            )
        pooled = compute_metrics(everything, resamples=config.resamples, seed=0)
        results["conditions"][condition] = {"seeds": per_seed, "pooled": metrics_dict(pooled)}
        if CONDITIONS[condition].switch:
            results["conditions"][condition]["recovery"] = recovery_dict(per_seed, config)
    results["wall_seconds"] = time.perf_counter() - began
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes: checks the mechanics")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--train-episodes", type=int, default=400)
    parser.add_argument("--eval-episodes", type=int, default=40, help="per evaluation variant")
    parser.add_argument("--envs", type=int, default=1, help="environments in the vector env")
    parser.add_argument(
        "--backend", default=None, help="sandbox backend (default: bwrap if it works, else docker)"
    )
    parser.add_argument("--out", type=Path, default=Path("rule_internalization.json"))
    parser.add_argument(
        "--conditions", nargs="+", choices=list(CONDITIONS), default=["fixed", "varied"]
    )
    parser.add_argument(
        "--eval-variants",
        nargs="+",
        choices=["original", "contradicted", "sampled", HELD_OUT_VARIANT],
        default=list(EVAL_VARIANTS),
    )
    args = parser.parse_args(argv)
    if args.backend is None:  # an episode costs 0.1-0.4 s in bwrap, 0.5-2 s in docker
        args.backend = "bwrap" if bwrap_works() else None
    if args.quick:
        config = Config(
            seeds=(0,),
            train_episodes=16,
            eval_episodes=4,
            envs=args.envs,
            backend=args.backend,
            resamples=200,
            conditions=tuple(args.conditions),
            eval_variants=tuple(args.eval_variants),
        )
    else:
        config = Config(
            seeds=tuple(range(args.seeds)),
            train_episodes=args.train_episodes,
            eval_episodes=args.eval_episodes,
            envs=args.envs,
            backend=args.backend,
            conditions=tuple(args.conditions),
            eval_variants=tuple(args.eval_variants),
        )
    results = run(config)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2, default=str))
    write_training_log(results, args.out.with_suffix(".training.jsonl"))
    for name, data in results["conditions"].items():
        if "recovery" in data:
            print(f"{name}: episodes to recover {data['recovery']['text']}")
    print(f"wrote {args.out} ({results['wall_seconds']:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
