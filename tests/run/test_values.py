"""Runs with held-out values and an evaluator's secret: what is drawn, what is written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from termgym.recording import read_episode
from termgym.run import RunConfig, Runner
from termgym.run._verify import verify_values
from termgym.tasks import Rotation, get_task

TERMGYM = str(Path(sys.executable).parent / "termgym")
SECRET = "evaluator-secret-7f3a9c1e5b2d4a60"


def _every_byte(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


@pytest.mark.bwrap
def test_a_secret_run_draws_held_out_values_and_writes_no_secret(tmp_path, base_rootfs) -> None:
    out = tmp_path / "run"
    env = {"TERMGYM_SECRET": SECRET, "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [TERMGYM, "run", "--agent", "oracle", "--tasks", "text-report", "--variants",
         "original,sampled,contradicted", "--episodes", "2", "--split", "eval",
         "--backend", "bwrap", "--out", str(out), "--no-report", "--period", "2026-W49"],
        capture_output=True, env={**env, **_python_env()}, timeout=400, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    assert SECRET.encode() not in _every_byte(out)
    assert SECRET.encode() not in done.stdout + done.stderr
    header = json.loads((out / "run.json").read_text())
    assert header["draw"] == {
        "split": "eval",
        "contradict": "drawn",
        "secret_id": Rotation(SECRET).secret_id,
        "period": "2026-W49",
    }
    rules = get_task("text-report").rules
    for path in sorted((out / "episodes").glob("*sampled*.jsonl")):
        log = read_episode(path)
        assert log.end is not None and log.end.episode_class == "adapted", path.name
        values = log.header.rules_enforced
        assert all(rules[name].is_held_out(value) for name, value in values.items())
        assert log.header.extra["draw"]["secret_id"] == Rotation(SECRET).secret_id
    checks = verify_values(out, SECRET)
    assert {c.status for c in checks} == {"ok"} and len(checks) == 6
    assert {c.status for c in verify_values(out, "another-secret-of-16-chars")} == {"other-secret"}
    assert {c.status for c in verify_values(out)} == {"needs-secret"}


def test_verify_values_finds_a_recording_whose_values_were_altered(tmp_path) -> None:
    from termgym.recording import EpisodeEnd, EpisodeHeader, EpisodeWriter
    from termgym.tasks import RuleDraw, instantiate

    rotation = Rotation(SECRET, "2026-W49")
    draw = RuleDraw(split="eval", rotation=rotation)
    task = get_task("text-report")
    for number, tamper in enumerate((False, True)):
        plan = instantiate(task, "sampled", seed=number, draw=draw)
        enforced = dict(plan.rules_enforced)
        if tamper:
            enforced["top_n"] = 10
        header = EpisodeHeader(
            episode_id=f"e{number}", task=task.id, task_version=task.spec.version,
            variant="sampled", rules_visible=enforced, rules_enforced=enforced, seed=number,
            agent="x", backend="none", versions={}, started=0.0, extra={"draw": draw.public()},
        )  # fmt: skip
        with EpisodeWriter(tmp_path, header) as writer:
            writer.end(EpisodeEnd(reward=1.0, terminated=True, truncated=False))
    statuses = {c.episode_id: c.status for c in verify_values(tmp_path, SECRET)}
    assert statuses == {"e0": "ok", "e1": "mismatch"}
    done = subprocess.run(
        [TERMGYM, "verify-values", str(tmp_path)],
        capture_output=True, text=True, env={**_python_env(), "TERMGYM_SECRET": SECRET},
        check=False,
    )  # fmt: skip
    assert done.returncode == 1 and "1 mismatch, 1 ok" in done.stdout
    assert SECRET not in done.stdout + done.stderr


def test_run_eval_split_leaves_out_what_has_no_held_out_values(tmp_path) -> None:
    config = RunConfig(
        agent="oracle",
        tasks=("text-report", "cron-schedule"),
        variants=("original", "sampled"),
        out=tmp_path / "run",
        split="eval",
    )
    runner = Runner(config)
    jobs = {(j.task, j.variant) for j in runner.jobs()}
    assert ("text-report", "sampled") in jobs and ("cron-schedule", "original") in jobs
    assert ("cron-schedule", "sampled") not in jobs
    assert runner.left_out == ["cron-schedule sampled: no held-out values to draw"]


def _python_env() -> dict[str, str]:
    import os

    keep = ("PATH", "HOME", "TERMGYM_TASKS_PATH", "TERMGYM_CACHE", "DOCKER_HOST", "CI", "TMPDIR")
    return {k: os.environ[k] for k in keep if k in os.environ}
