"""examples/ray_training.py in quick mode on the test cluster: it trains over a RayVectorEnv,
evaluates, and reports what it measured."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "ray_training.py"


@pytest.mark.bwrap
def test_the_ray_training_example_trains_and_evaluates(ray_on, base_rootfs, tmp_path) -> None:
    spec = importlib.util.spec_from_file_location("ray_training", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "ray_training.json"
    argv = ["--quick", "--envs", "2", "--backend", "bwrap", "--address", ray_on.address]
    assert module.main([*argv, "--out", str(out)]) == 0
    log = json.loads(out.read_text())
    assert log["episodes"] == 16 and log["env_steps"] >= 16 and log["env_steps_per_second"] > 0
    assert log["eval_episodes"] == 4 and 0.0 <= log["contradicted_pass_rate"] <= 1.0
