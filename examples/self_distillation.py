"""Online self-distillation with a language model: does it internalize a hidden rule?

A small transformer, trained from scratch on this machine, acts in a termgym env: each turn it
writes a plan line and a free-text shell command. It first learns to act at all from a
rule-free corpus of generic terminal work (examples/self_distillation_corpus.py). Then expert
iteration: sample episodes of the task (examples/tasks/cargo-limit, its rule in a policy
file) with the current model, keep those the hidden graders pass, fine-tune on them, repeat.

    A "fixed"    every training episode original: the rule is always 100;
    B "varied"   a schedule that changes it: contradicted and sampled, 150, 200 or 250.

Each trained model (and the base model, as a control) is then evaluated on original,
contradicted and held-out episodes, recorded, and measured with termgym's own instruments:
pass, stale-rule and adaptation rates (termgym.analysis.metrics); the trace audit on the plan
lines (termgym.analysis.audit: a rule value written before anything showed it); the
disclosure probe, asked and prefilled with the plan line's opening; then the rule is
switched to 200 and expert iteration goes on, giving the relearning curve
(termgym.analysis.relearning). Every rate has its bootstrap interval over seeds.

    python examples/self_distillation.py                  # the full run (docs/self-distillation.md)
    python examples/self_distillation.py --quick          # tiny sizes: the mechanics (CI)
    python examples/self_distillation.py --device cuda    # a larger model on an accelerator
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import csv
import dataclasses
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from self_distillation_corpus import (  # noqa: E402
    CORPORA,
    PREFILL,
    PROBE_ASK,
    make_corpus,
    task_line,
    turn,
)
from self_distillation_lm import (  # noqa: E402
    ModelSize,
    TinyLM,
    Tokenizer,
    cosine_lr,
    encode_segments,
    new_optimizer,
    sample,
    train_steps,
)
from self_distillation_measure import (  # noqa: E402
    EVAL_VARIANTS,
    RECOVER_FRACTION,
    instruments,
    measure,
    reads,
    relearning,
    row_json,
    tables,
)

import termgym  # noqa: E402
from termgym.recording import EpisodeLog, read_run  # noqa: E402
from termgym.sandbox import bwrap_works  # noqa: E402

TASK = Path(__file__).resolve().parent / "tasks" / "cargo-limit"
SWITCHED = "200"
SCHEDULES: dict[str, Any] = {
    "fixed": "original",
    "varied": {"contradicted": 1.0, "sampled": 1.0},
}
SWITCH_SCHEDULE = [{"mix": "original", "rules": {"max_weight": SWITCHED}}]
MAX_STEPS = 4
OUTPUT_CHARS = 300
MAX_INFRA_ERRORS = 10
"""Infrastructure errors one batch of episodes tolerates (counted apart) before it stops."""


@dataclass(frozen=True)
class Config:
    """Sizes of one run."""

    seeds: tuple[int, ...] = (0, 1, 2)
    conditions: tuple[str, ...] = ("fixed", "varied")
    device: str = "cpu"
    threads: int = 1
    size: ModelSize = ModelSize(layers=3, width=96, heads=4, context=320)
    corpus: int = 3000
    corpus_kind: str = "generic"
    base_steps: int = 1200
    base_batch: int = 16
    base_lr: float = 2e-3
    iterations: int = 6
    episodes: int = 32
    envs: int = 8
    finetune_steps: int = 16
    finetune_batch: int = 16
    finetune_lr: float = 5e-4
    switch_iterations: int = 4
    eval_episodes: int = 24
    temperature: float = 1.0
    resamples: int = 2000
    backend: str | None = None


PRESETS = {
    "cpu": Config(),
    "cuda": Config(
        device="cuda",
        size=ModelSize(layers=6, width=256, heads=8, context=320),
        base_steps=3000,
        base_batch=64,
        base_lr=1e-3,
        finetune_batch=32,
        finetune_lr=2e-4,
        envs=16,
        seeds=(0, 1, 2, 3, 4),
    ),
    "quick": Config(
        seeds=(0,),
        size=ModelSize(layers=1, width=32, heads=2, context=320),
        corpus=200,
        base_steps=20,
        iterations=2,
        episodes=4,
        envs=4,
        finetune_steps=2,
        finetune_batch=4,
        switch_iterations=1,
        eval_episodes=2,
        resamples=200,
    ),
}

Segments = list[tuple[str, bool]]


class Agent(Protocol):
    """What writes the model's side of an episode."""

    def turns(self, contexts: Sequence[Segments]) -> list[str]:
        """The next turn (a plan line and a command line) for each episode so far."""
        ...

    def lines(self, contexts: Sequence[Segments], opening: str) -> list[str]:
        """Each context continued after `opening` to the end of its line (`opening` not
        included)."""
        ...


@dataclass
class LMAgent:
    """The language model as an Agent, and its fine-tuning."""

    model: TinyLM
    tokenizer: Tokenizer
    config: Config
    generator: torch.Generator
    optimizer: torch.optim.Optimizer | None = None

    def _ids(self, context: Segments, opening: str = "") -> list[int]:
        return list(encode_segments(self.tokenizer, context).ids) + self.tokenizer.encode(opening)

    def _sample(self, prompts: list[list[int]], lines: int) -> list[str]:
        written = sample(
            self.model,
            prompts,
            lines=lines,
            max_new=72,
            temperature=self.config.temperature,
            newline=self.tokenizer.newline,
            generator=self.generator,
            device=self.config.device,
        )
        return [self.tokenizer.decode(ids) for ids in written]

    def turns(self, contexts: Sequence[Segments]) -> list[str]:
        return self._sample([self._ids(c) for c in contexts], lines=2)

    def lines(self, contexts: Sequence[Segments], opening: str) -> list[str]:
        texts = self._sample([self._ids(c, opening) for c in contexts], lines=1)
        return [t.split("\n", 1)[0] for t in texts]

    def finetune(self, episodes: Sequence[Segments], steps: int) -> list[float]:
        """`steps` optimizer steps on what the model wrote in `episodes`."""
        if self.optimizer is None:
            self.optimizer = new_optimizer(self.model, self.config.finetune_lr)
        examples = [encode_segments(self.tokenizer, e) for e in episodes]
        return train_steps(
            self.model,
            self.optimizer,
            examples,
            steps=steps,
            batch=self.config.finetune_batch,
            generator=self.generator,
            device=self.config.device,
        )


@dataclass
class Trajectory:
    """One episode as the model lived it, and how it ended."""

    segments: Segments
    plans: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    transcript: list[dict[str, Any]] = field(default_factory=list)
    probes: dict[str, str] = field(default_factory=dict)
    reward: float = 0.0
    passed: bool = False
    variant: str = ""
    error: str | None = None


def parse_turn(text: str) -> tuple[str, str]:
    """(plan, command) of a turn the model wrote: its first line without "plan:", its second
    without "$ " (free text either way; an unfinished line is taken as it stands)."""
    first, _, rest = text.partition("\n")
    return first.removeprefix("plan:").strip(), rest.split("\n", 1)[0].removeprefix("$").strip()


def make_envs(
    schedule: Any, config: Config, count: int, *, record: Path | None, rule_draw: dict[str, str]
) -> list[Any]:
    """`count` envs of the task; an evaluation env (record given) is shadow graded and
    records its episodes (each env into a folder of its own)."""
    return [
        termgym.make(
            str(TASK),
            variant=schedule,
            backend=config.backend,
            max_steps=MAX_STEPS,
            shadow=record is not None,
            pool_size=1,
            agent="self-distillation",
            rule_draw=rule_draw,
            record_dir=None if record is None else str(record / str(i)),
        )
        for i in range(count)
    ]


def collect(
    agent: Agent, envs: Sequence[Any], episodes: int, seeds: Iterator[int], *, probe: bool
) -> list[Trajectory]:
    """Run `episodes` episodes on `envs` side by side, the agent writing every active
    episode's turn in one batch; with `probe`, ask the disclosure probe in both modes when an
    episode's last action is chosen (before it runs, so the recording keeps the answers)."""
    return asyncio.run(_collect(agent, envs, episodes, seeds, probe))


async def _collect(
    agent: Agent, envs: Sequence[Any], episodes: int, seeds: Iterator[int], probe: bool
) -> list[Trajectory]:
    done: list[Trajectory] = []
    running: dict[int, Trajectory] = {}
    started = failures = 0

    def failed(run: Trajectory, exc: Exception) -> None:
        """An infrastructure error (the env's machinery, not the model): the episode is
        counted apart, as `termgym run` counts one; past MAX_INFRA_ERRORS the run stops."""
        nonlocal failures
        failures += 1
        run.error = f"{type(exc).__name__}: {exc}"
        done.append(run)
        print(f"  infrastructure error, episode counted apart: {run.error[:200]}", flush=True)
        if failures > MAX_INFRA_ERRORS:
            raise RuntimeError(f"{failures} infrastructure errors in one batch") from exc

    async def start(i: int) -> None:
        nonlocal started
        while started < episodes:
            started += 1
            try:
                obs, _ = await envs[i].areset(seed=next(seeds))
            except Exception as exc:  # e.g. a Docker engine restarting under bwrap's image lookup
                failed(Trajectory([]), exc)
                await asyncio.sleep(2.0)
                continue
            run = Trajectory([(task_line(obs["instruction"]), False)])
            run.transcript.append({"role": "system", "content": run.segments[0][0], "step": 0})
            envs[i].attach_transcript(lambda run=run: list(run.transcript))
            running[i] = run
            return

    await asyncio.gather(*(start(i) for i in range(min(len(envs), episodes))))
    while running:
        order = sorted(running)
        texts = agent.turns([running[i].segments for i in order])
        ending = []
        for i, text in zip(order, texts, strict=True):
            run = running[i]
            plan, command = parse_turn(text)
            run.plans.append(plan)
            run.commands.append(command)
            run.segments.append((turn(plan, command), True))
            step = len(run.commands)
            entry = {"role": "assistant", "content": command, "reasoning": f"plan: {plan}"}
            run.transcript.append(entry | {"step": step})
            if probe and (command == "submit" or step >= MAX_STEPS):
                ending.append(run)
        if ending:
            _probe(agent, ending)

        async def advance(i: int) -> None:
            run = running[i]
            action = termgym.SUBMIT if run.commands[-1] == "submit" else run.commands[-1]
            try:
                obs, reward, terminated, truncated, info = await envs[i].astep(action)
            except Exception as exc:  # the machinery failed (the model's command cannot raise)
                failed(running.pop(i), exc)
                await start(i)
                return
            if not (terminated or truncated):
                output = obs["output"][:OUTPUT_CHARS]
                if output:
                    run.segments.append((output if output.endswith("\n") else output + "\n", False))
                return
            run.reward, run.variant = float(reward), str(info.get("variant", ""))
            run.passed, run.error = reward >= 1.0, info.get("error") or None
            done.append(running.pop(i))
            await start(i)

        await asyncio.gather(*(advance(i) for i in order))
    return done


def _probe(agent: Agent, ending: Sequence[Trajectory]) -> None:
    """The disclosure probe on each ending episode, asked and prefilled, kept in its
    transcript as docs/agents.md describes (the question and the prefill are shown to the
    model; the answers are its own)."""
    asked = agent.lines([[*r.segments, (PROBE_ASK, False)] for r in ending], "")
    prefilled = agent.lines([r.segments for r in ending], PREFILL)
    for run, ask, pre in zip(ending, asked, prefilled, strict=True):
        step = len(run.commands)
        run.probes = {"ask": ask.strip(), "prefill": pre}
        run.transcript += [
            {"role": "probe_question", "content": PROBE_ASK, "step": step - 1},
            {"role": "probe", "content": ask.strip(), "step": step, "probe_mode": "ask"},
            {"role": "probe_prefill", "content": PREFILL, "step": step - 1},
            {"role": "probe", "content": pre, "step": step, "probe_mode": "prefill"},
        ]


def seed_stream(seed: int, phase: int) -> Iterator[int]:
    """Reset seeds of one phase of one run: distinct across seeds and phases."""
    n = 0
    while True:
        yield seed * 1_000_000 + phase * 10_000 + n
        n += 1


def train_base(config: Config, seed: int) -> tuple[TinyLM, Tokenizer, dict[str, Any]]:
    """The base model: supervised on the rule-free corpus."""
    began = time.perf_counter()
    torch.manual_seed(seed)
    corpus = make_corpus(config.corpus, seed, config.corpus_kind)
    tokenizer = Tokenizer.build(e.text for e in corpus)
    model = TinyLM(len(tokenizer.vocab), config.size).to(config.device)
    examples = [encode_segments(tokenizer, e.segments) for e in corpus]
    losses = train_steps(
        model,
        new_optimizer(model, config.base_lr),
        examples,
        steps=config.base_steps,
        batch=config.base_batch,
        generator=torch.Generator().manual_seed(seed),
        device=config.device,
        lr_at=cosine_lr(config.base_lr, config.base_steps),
    )
    seconds = time.perf_counter() - began
    log = {
        "seconds": seconds,
        "steps": len(losses),
        "parameters": model.parameter_count(),
        "vocab": len(tokenizer.vocab),
        "corpus_episodes": len(corpus),
        "loss_first": losses[0],
        "loss_last": float(np.mean(losses[-20:])),
    }
    print(f"base: {len(losses)} steps in {seconds:.0f} s, loss {log['loss_last']:.3f}", flush=True)
    return model, tokenizer, log


def iterate(
    agent: LMAgent, schedule: Any, iterations: int, config: Config, seed: int, phase: int
) -> list[dict[str, Any]]:
    """Expert iteration: sample, keep what the hidden graders pass, fine-tune on it."""
    draw = {"contradict": "drawn", "split": "train"}
    envs = make_envs(schedule, config, config.envs, record=None, rule_draw=draw)
    seeds = seed_stream(seed, phase)
    log = []
    try:
        for it in range(iterations):
            began = time.perf_counter()
            batch = collect(agent, envs, config.episodes, seeds, probe=False)
            sampled = time.perf_counter() - began
            counted = [t for t in batch if t.error is None]
            kept = [t for t in counted if t.passed]
            losses = (
                agent.finetune([t.segments for t in kept], config.finetune_steps) if kept else []
            )
            log.append(
                {
                    "iteration": it,
                    "sampled": len(batch),
                    "infra_errors": len(batch) - len(counted),
                    "kept": len(kept),
                    "train_steps": len(losses),
                    "loss": float(np.mean(losses)) if losses else None,
                    "passed": [int(t.passed) for t in counted],
                    "variants": [t.variant for t in counted],
                    "read_first": float(np.mean([reads(t.commands[0]) for t in counted])),
                    "seconds_sampling": sampled,
                    "seconds": time.perf_counter() - began,
                    "load": os.getloadavg()[0],
                }
            )
            print(
                f"  iteration {it}: kept {len(kept)}/{len(counted)}, "
                f"read first {log[-1]['read_first']:.0%}, {log[-1]['seconds']:.0f} s",
                flush=True,
            )
    finally:
        for env in envs:
            env.close()
    return log


def evaluate(
    agent: LMAgent, config: Config, seed: int, folder: Path
) -> tuple[list[Trajectory], list[EpisodeLog]]:
    """Every evaluation variant, recorded and shadow graded, probed at the end."""
    trajectories: list[Trajectory] = []
    for k, label in enumerate(EVAL_VARIANTS):
        held_out = label == "held-out"
        draw = {"contradict": "drawn", "split": "eval" if held_out else "train"}
        variant = "sampled" if held_out else label
        envs = make_envs(
            variant,
            config,
            min(config.envs, config.eval_episodes),
            record=folder / label,
            rule_draw=draw,
        )
        try:
            got = collect(agent, envs, config.eval_episodes, seed_stream(seed, 90 + k), probe=True)
        finally:
            for env in envs:
                env.close()
        trajectories += got
    logs = [log for run in sorted(folder.glob("*/*")) for log in read_run(run).episodes]
    return trajectories, logs


def run(config: Config, folder: Path, base_dir: Path | None = None) -> dict[str, Any]:
    """The whole experiment; evaluation episodes are recorded under `folder`. Per seed: a
    base model, its evaluation, then each condition from a copy of it."""
    began = time.perf_counter()
    torch.set_num_threads(config.threads)
    results: dict[str, Any] = {"config": _jsonable(config), "load_start": os.getloadavg()}
    results["setup"] = {
        "task": "cargo-limit",
        "schedules": SCHEDULES,
        "switch": SWITCH_SCHEDULE,
        "eval_variants": EVAL_VARIANTS,
        "probe_ask": PROBE_ASK,
        "probe_prefill": PREFILL,
        "max_steps": MAX_STEPS,
        "recover_fraction": RECOVER_FRACTION,
        "cpus": os.cpu_count(),
    }
    conditions = ("base", *config.conditions)
    rows: dict[str, dict[int, list[dict[str, Any]]]] = {c: {} for c in conditions}
    training: dict[str, dict[int, dict[str, Any]]] = {c: {} for c in config.conditions}
    results["base"] = {}
    for seed in config.seeds:
        base, tokenizer, results["base"][str(seed)] = _base(config, seed, base_dir)
        for condition in conditions:
            print(f"{condition} seed {seed}", flush=True)
            torch.manual_seed(seed)
            generator = torch.Generator().manual_seed(seed)
            agent = LMAgent(copy.deepcopy(base), tokenizer, config, generator)
            t0 = time.perf_counter()
            if condition != "base":
                main = iterate(agent, SCHEDULES[condition], config.iterations, config, seed, 1)
            t1 = time.perf_counter()
            _, logs = evaluate(agent, config, seed, folder / condition / str(seed))
            rows[condition][seed] = measure(logs, seed)
            t2 = time.perf_counter()
            if condition != "base":
                switch = iterate(agent, SWITCH_SCHEDULE, config.switch_iterations, config, seed, 2)
                training[condition][seed] = {
                    "main": main,
                    "switch": switch,
                    "seconds_main": t1 - t0,
                    "seconds_eval": t2 - t1,
                    "seconds_switch": time.perf_counter() - t2,
                }
    results["conditions"] = {}
    for condition in conditions:
        data = instruments(rows[condition], config.resamples)
        if condition != "base":
            logs = {s: t["main"] + t["switch"] for s, t in training[condition].items()}
            data["relearning"] = relearning(
                logs, config.iterations * config.episodes, config.episodes, config.resamples
            )
            data["training"] = {str(s): t for s, t in training[condition].items()}
        data["per_seed"] = {
            str(s): instruments({s: r}, config.resamples) for s, r in rows[condition].items()
        }
        data["episodes"] = [row_json(r) for s in rows[condition] for r in rows[condition][s]]
        results["conditions"][condition] = data
    results["wall_seconds"] = time.perf_counter() - began
    results["load_end"] = os.getloadavg()
    return results


def _base(
    config: Config, seed: int, base_dir: Path | None
) -> tuple[TinyLM, Tokenizer, dict[str, Any]]:
    """The seed's base model: trained, or loaded from `base_dir` when saved there before
    (and saved there after training)."""
    path = None if base_dir is None else base_dir / f"base-{seed}.pt"
    if path is not None and path.exists():
        saved = torch.load(path, map_location=config.device, weights_only=False)
        tokenizer = Tokenizer(tuple(saved["vocab"]))
        model = TinyLM(len(tokenizer.vocab), config.size).to(config.device)
        model.load_state_dict(saved["state"])
        return model, tokenizer, {**saved["log"], "loaded_from": path.name}
    model, tokenizer, log = train_base(config, seed)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save({"vocab": tokenizer.vocab, "state": model.state_dict(), "log": log}, path)
    return model, tokenizer, log


def _jsonable(config: Config) -> dict[str, Any]:
    return json.loads(json.dumps(dataclasses.asdict(config), default=str))


def write_training_logs(results: Mapping[str, Any], out: Path) -> None:
    """Every training episode's pass as JSONL, in the form `termgym relearning` reads
    (condition, seed, episode, passed; the switch after the main phase), and one CSV row per
    expert-iteration round."""
    switch_at = results["config"]["iterations"] * results["config"]["episodes"]
    with (
        out.with_suffix(".training.jsonl").open("w") as jsonl,
        out.with_suffix(".iterations.csv").open("w", newline="") as handle,
    ):
        jsonl.write(json.dumps({"switch_at": switch_at}) + "\n")
        rows = csv.writer(handle)
        rows.writerow(
            [
                "condition",
                "seed",
                "phase",
                "iteration",
                "sampled",
                "infra_errors",
                "kept",
                "train_steps",
                "loss",
                "read_first",
                "seconds",
                "load",
            ]
        )
        for condition, data in results["conditions"].items():
            for seed, phases in data.get("training", {}).items():
                episode = 0
                for phase in ("main", "switch"):
                    for it in phases[phase]:
                        rows.writerow(
                            [
                                condition,
                                seed,
                                phase,
                                it["iteration"],
                                it["sampled"],
                                it["infra_errors"],
                                it["kept"],
                                it["train_steps"],
                                _round(it["loss"]),
                                _round(it["read_first"]),
                                _round(it["seconds"]),
                                _round(it["load"]),
                            ]
                        )
                        for passed in it["passed"]:
                            line = {"condition": condition, "seed": seed, "episode": episode}
                            jsonl.write(json.dumps({**line, "passed": bool(passed)}) + "\n")
                            episode += 1


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def check_device(device: str) -> None:
    """Refuse a device this machine's torch cannot use, saying what was expected."""
    if device == "cpu":
        return
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit(
            f"--device {device}: this torch ({torch.__version__}) sees no CUDA device; "
            "expected a machine with an NVIDIA GPU and a CUDA build of torch (or --device cpu)"
        )
    torch.empty(1, device=device)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes: checks the mechanics")
    parser.add_argument("--device", default="cpu", help="cpu, or cuda for the larger preset")
    parser.add_argument("--seeds", type=int, nargs="+", default=None, help="the seeds (0 1 2)")
    parser.add_argument("--iterations", type=int, default=None)
    parser.add_argument(
        "--corpus", choices=list(CORPORA), default=None, help="the base corpus (default generic)"
    )
    parser.add_argument("--conditions", nargs="+", choices=list(SCHEDULES), default=None)
    parser.add_argument(
        "--backend", default=None, help="sandbox backend (default: bwrap if it works)"
    )
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default 1)")
    parser.add_argument(
        "--base-dir",
        type=Path,
        default=None,
        help="folder of base models (base-SEED.pt): loaded if there, else saved there",
    )
    parser.add_argument(
        "--episodes-dir", type=Path, default=None, help="keep the evaluation recordings here"
    )
    parser.add_argument("--out", type=Path, default=Path("self_distillation.json"))
    parser.add_argument(
        "--tables",
        type=Path,
        default=None,
        metavar="RESULTS",
        help="print the tables of docs/self-distillation.md from a results file, and exit",
    )
    args = parser.parse_args(argv)
    if args.tables is not None:
        episodes = args.tables.with_suffix(".episodes.jsonl").read_text().splitlines()
        print(tables(json.loads(args.tables.read_text()), [json.loads(e) for e in episodes]))
        return 0
    check_device(args.device)
    preset = "quick" if args.quick else ("cuda" if args.device.startswith("cuda") else "cpu")
    config = dataclasses.replace(PRESETS[preset], device=args.device)
    if args.backend is None:  # an episode costs 0.1-0.4 s in bwrap, 0.5-2 s in docker
        args.backend = "bwrap" if bwrap_works() else None
    config = dataclasses.replace(config, backend=args.backend)
    if args.seeds is not None:
        config = dataclasses.replace(config, seeds=tuple(args.seeds))
    if args.corpus is not None:
        config = dataclasses.replace(config, corpus_kind=args.corpus)
    if args.iterations is not None:
        config = dataclasses.replace(config, iterations=args.iterations)
    if args.conditions is not None:
        config = dataclasses.replace(config, conditions=tuple(args.conditions))
    if args.threads is not None:
        config = dataclasses.replace(config, threads=args.threads)
    folder = args.episodes_dir or Path(tempfile.mkdtemp(prefix="self-distillation-"))
    try:
        results = run(config, folder, args.base_dir)
    finally:
        if args.episodes_dir is None:
            shutil.rmtree(folder, ignore_errors=True)
    results["torch"] = torch.__version__
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.with_suffix(".episodes.jsonl").open("w") as handle:
        for condition, data in results["conditions"].items():
            for episode in data.pop("episodes"):
                handle.write(json.dumps({"condition": condition, **episode}) + "\n")
    args.out.write_text(json.dumps(results, indent=1, default=str))
    write_training_logs(results, args.out)
    print(f"wrote {args.out} ({results['wall_seconds']:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
