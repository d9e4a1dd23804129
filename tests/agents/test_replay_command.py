"""The command `termgym import atif` prints for replaying an imported episode runs that
episode's task alone. It used to say `termgym run --agent replay --agent-opt episode=FILE`,
which plans every task: the replay agent refused each episode of another task, 33
infrastructure errors, each retried, beside the 3 it could replay."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUN = ROOT / "tests" / "tui" / "fixtures" / "reference" / "oracle"
TERMGYM = str(Path(sys.executable).parent / "termgym")


def _termgym(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TERMGYM, *args], capture_output=True, text=True, timeout=600)


@pytest.mark.bwrap
def test_the_printed_replay_command_runs_the_imported_episode_alone(
    base_rootfs: str, tmp_path: Path
) -> None:
    run = tmp_path / "recorded"
    shutil.copytree(RUN, run)
    assert _termgym("export", "atif", str(run)).returncode == 0
    imported = _termgym("import", "atif", str(run / "atif"), "--out", str(tmp_path / "imported"))
    assert imported.returncode == 0, imported.stderr
    [command] = re.findall(r"`(termgym run --agent replay [^`]*)`", imported.stdout)
    [episode] = (tmp_path / "imported" / "episodes").glob("*.jsonl")
    header = json.loads(episode.read_text().splitlines()[0])
    own = {"FILE": str(episode), "TASK": header["task"], "VARIANT": header["variant"]}
    words = [re.sub(r"\b(FILE|TASK|VARIANT)\b", lambda m: own[m[1]], w) for w in command.split()]
    words = words[1:]  # termgym
    out = tmp_path / "replayed"
    done = _termgym(*words, "--backend", "bwrap", "--out", str(out), "--no-report")
    assert done.returncode == 0, done.stdout + done.stderr
    results = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [(r["task"], r["variant"], r["status"]) for r in results] == [
        ("fuel-planner", "contradicted", "ok")
    ]
