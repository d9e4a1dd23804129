"""The self-distillation example's pieces connect: episodes are collected from the real env,
filtered by the hidden graders' verdict, trained on, and measured by the audit and the probe.

The mechanics only, never the outcome: a tiny model that cannot pass the task yet, and a
scripted memorizer (written into the same agent, so its episodes train the same model) whose
passes and hidden values are known in advance.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner

from termgym.cli import main

try:
    import torch
except ImportError as exc:  # the dev extra installs it: a missing torch fails, never skips
    raise ImportError(
        "tests/examples/test_self_distillation.py needs torch: pip install -e '.[selfdistill]' "
        "(the dev extra includes it)"
    ) from exc

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))
import self_distillation as sd  # noqa: E402

pytestmark = [pytest.mark.bwrap, pytest.mark.slow]

MEMORIZED = "plan: the limit is 100; write it to /app/answer\n$ echo 100 > /app/answer\n"


class Memorizer(sd.LMAgent):
    """Writes 100 without reading, whatever the policy says, and says so when probed; its
    episodes still fine-tune the agent's model."""

    def turns(self, contexts: Sequence[sd.Segments]) -> list[str]:
        written = [sum(trained for _, trained in c) for c in contexts]
        return [MEMORIZED if n == 0 else "plan: done\n$ submit\n" for n in written]

    def lines(self, contexts: Sequence[sd.Segments], opening: str) -> list[str]:
        answer = " limit is 100; write it" if opening else " the limit is 100, from the policy"
        return [answer for _ in contexts]


@pytest.fixture(scope="module")
def config() -> sd.Config:
    return dataclasses.replace(sd.PRESETS["quick"], backend="bwrap", episodes=8)


@pytest.fixture(scope="module")
def base(config: sd.Config) -> tuple[sd.TinyLM, sd.Tokenizer]:
    model, tokenizer, log = sd.train_base(config, seed=0)
    assert log["steps"] == config.base_steps and log["loss_last"] == log["loss_last"]  # not nan
    return model, tokenizer


def agent_of(kind: type[sd.LMAgent], base: tuple[sd.TinyLM, sd.Tokenizer], config: sd.Config):
    model, tokenizer = base
    return kind(copy.deepcopy(model), tokenizer, config, torch.Generator().manual_seed(0))


def test_expert_iteration_keeps_the_passed_episodes_and_trains_on_them(
    base_rootfs: str, config: sd.Config, base: tuple[sd.TinyLM, sd.Tokenizer]
) -> None:
    agent = agent_of(Memorizer, base, config)
    before = [p.detach().clone() for p in agent.model.parameters()]
    schedule = {"original": 1.0, "contradicted": 1.0}
    log = sd.iterate(agent, schedule, 2, config, seed=0, phase=1)
    assert [it["sampled"] for it in log] == [8, 8]
    for it in log:
        assert it["infra_errors"] == 0
        # the memorizer passes exactly the original episodes: those are kept, the rest not
        passed = [v == "original" for v in it["variants"]]
        assert it["passed"] == [int(p) for p in passed] and it["kept"] == sum(passed)
        assert it["train_steps"] == (config.finetune_steps if it["kept"] else 0)
    assert any(0 < it["kept"] < it["sampled"] for it in log), log
    assert any(it["loss"] is not None for it in log)
    after = list(agent.model.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(before, after, strict=True))


def test_the_audit_and_both_probes_read_the_recorded_evaluation(
    base_rootfs: str, config: sd.Config, base: tuple[sd.TinyLM, sd.Tokenizer], tmp_path: Path
) -> None:
    _, logs = sd.evaluate(agent_of(Memorizer, base, config), config, 0, tmp_path / "memorizer")
    rows = sd.measure(logs, seed=0)
    assert sorted(r["summary"].variant for r in rows) == sorted(
        v for v in sd.EVAL_VARIANTS for _ in range(config.eval_episodes)
    )
    for row in rows:
        shifted = row["summary"].variant != "original"
        hidden = ["max_weight=100"] if shifted else []  # 100 is in the policy file of originals
        assert row["plan_leaks"] == hidden and row["action_leaks"] == hidden, row
        assert row["probe_ask"] == hidden and row["probe_prefill"] == hidden, row
        assert row["summary"].passed is not shifted
        if shifted:
            assert row["summary"].episode_class == "stale"
    found = sd.instruments({0: rows}, resamples=50)
    assert found["plan_states_original"]["value"] == 1.0
    assert found["probe_prefill_original"]["value"] == found["probe_ask_original"]["value"] == 1.0
    assert found["contradicted"]["stale_rate"]["value"] == 1.0

    # the tiny model's own episodes: every probe asked and scored, whatever it wrote
    _, logs = sd.evaluate(agent_of(sd.LMAgent, base, config), config, 0, tmp_path / "model")
    rows = sd.measure(logs, seed=0)
    assert len(rows) == len(sd.EVAL_VARIANTS) * config.eval_episodes
    assert all(r["probe_ask"] is not None and r["probe_prefill"] is not None for r in rows)
    assert all(set(r["answers"]) == {"ask", "prefill"} and r["plans"] for r in rows)


def test_quick_mode_writes_every_instrument_for_every_condition(
    base_rootfs: str, tmp_path: Path
) -> None:
    out = tmp_path / "sd.json"
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "self_distillation.py"), "--quick", "--backend", "bwrap",
         "--out", str(out)],
        capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(out.read_text())
    assert set(results["conditions"]) == {"base", "fixed", "varied"}
    for name, data in results["conditions"].items():
        assert data["all"]["episodes"] + data["all"]["infra_errors"] == 6  # 2 per variant
        for key in ("plan_leak_rate", "probe_ask_disclosure", "probe_prefill_disclosure"):
            estimate = data[key]  # over the 4 shifted episodes (2 contradicted, 2 held-out)
            assert 0 < estimate["n"] <= 4 and estimate["low"] <= estimate["value"], (key, estimate)
        if name != "base":
            assert data["relearning"]["switch_at"] == 2 * 4
            (seed,) = data["training"].values()
            assert [it["sampled"] for it in seed["main"] + seed["switch"]] == [4, 4, 4]
    lines = out.with_suffix(".training.jsonl").read_text().splitlines()
    assert json.loads(lines[0]) == {"switch_at": 8} and len(lines) == 1 + 2 * 12
    episodes = out.with_suffix(".episodes.jsonl").read_text().splitlines()
    assert len(episodes) == 3 * 6
    training = str(out.with_suffix(".training.jsonl"))
    relearn = CliRunner().invoke(
        main, ["relearning", training, "--condition", "fixed", "--window", "4"]
    )
    assert relearn.exit_code == 0 and "episodes to recover" in relearn.output, relearn.output
