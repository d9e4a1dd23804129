"""`termgym run --ray`: episodes spread over the worker nodes of a real Ray cluster, recordings
written home as a local run writes them, a worker node killed mid-run, a driver killed
mid-run and resumed with the same command."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from termgym.recording import read_episode
from termgym.run import ProgressEvent, RanOnNode, Retrying, RunConfig, Runner, finished_episodes
from tests.cluster.conftest import EXAMPLE_TASKS

TERMGYM = str(Path(sys.executable).parent / "termgym")


def _config(out: Path, address: str, backend: str, episodes: int) -> RunConfig:
    return RunConfig(
        agent="oracle",
        tasks=("cargo-limit",),
        variants=("original", "contradicted"),
        episodes=episodes,
        concurrency=4,
        out=out,
        backend=backend,
        ray=address,
        shadow=True,
    )


def _containers(run_id: str) -> list:
    from tests.env.test_cleanup import containers_of

    return containers_of(run_id)


@pytest.mark.bwrap
def test_a_ray_run_spreads_over_both_workers_and_writes_home_like_a_local_run(
    ray_on, tmp_path, monkeypatch, base_rootfs
) -> None:
    monkeypatch.setenv("TERMGYM_TASKS_PATH", EXAMPLE_TASKS)
    nodes: set[str] = set()

    def hook(event: ProgressEvent) -> None:
        if isinstance(event, RanOnNode):
            nodes.add(event.node_id)

    out = tmp_path / "run"
    summary = Runner(_config(out, ray_on.address, "bwrap", episodes=4), progress=hook).run()
    assert len(summary.results) == 8 and all(r.status == "ok" for r in summary.results)
    assert nodes == ray_on.node_ids()  # both worker nodes ran episodes; the head holds none
    assert len(finished_episodes(out)) == 8
    for result in summary.results:
        episode = read_episode(Path(result.episode_file))
        assert Path(result.episode_file).parent == out / "episodes"
        assert Path(result.episode_file).with_suffix(".cast").is_file()
        assert episode.end is not None and episode.end.reward == result.reward == 1.0
        assert episode.header.run_id == "run"
    lines = (out / "results.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["episode_id"] for line in lines) == sorted(
        r.job.episode_id for r in summary.results
    )
    from termgym.report import load_run

    run = load_run(out)
    assert len(run.summaries) == 8 and not run.skipped


@pytest.mark.docker
def test_a_worker_node_killed_mid_run_loses_no_episode_and_leaves_no_container(
    ray_on, tmp_path, monkeypatch, base_image
) -> None:
    monkeypatch.setenv("TERMGYM_TASKS_PATH", EXAMPLE_TASKS)
    nodes: list[RanOnNode] = []
    retries: list[Retrying] = []

    def hook(event: ProgressEvent) -> None:
        if isinstance(event, Retrying):
            retries.append(event)
        if isinstance(event, RanOnNode):
            nodes.append(event)
            if len(nodes) == 1:  # kill the node that ran the first
                victim = next(n for n in ray_on.workers if n.node_id == event.node_id)
                ray_on.kill_worker(victim)

    out = tmp_path / "killed"
    summary = Runner(_config(out, ray_on.address, "docker", episodes=4), progress=hook).run()
    assert sorted(r.status for r in summary.results) == ["ok"] * 8
    assert len(retries) >= 1  # the episodes on the lost node ran again elsewhere
    assert all("Ray worker" in retry.error for retry in retries)
    assert len(finished_episodes(out)) == 8
    assert not (out / "episodes" / "failed").exists()  # nothing half-written came home
    assert _containers("killed") == []
    assert _scratch_of_dead_workers() == []  # the retries' workers removed the lost one's


def _scratch_of_dead_workers() -> list[Path]:
    from termgym.cluster._reap import SCRATCH_PREFIX, _alive

    found = Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*-*")
    return [f for f in found if (p := f.name.split("-")[2]).isdigit() and not _alive(int(p))]


@pytest.mark.docker
def test_a_driver_killed_mid_run_resumes_with_the_same_command(
    ray_on, tmp_path, base_image
) -> None:
    out = tmp_path / "resumed"
    argv = [
        TERMGYM, "run", "--agent", "oracle", "--tasks", "cargo-limit",
        "--variants", "original,contradicted,sampled", "--episodes", "3",
        "--backend", "docker", "--ray", ray_on.address, "--out", str(out), "--no-report",
    ]  # fmt: skip
    env = {**__import__("os").environ, "TERMGYM_TASKS_PATH": EXAMPLE_TASKS}
    first = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    results = out / "results.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if results.exists() and len(results.read_text().splitlines()) >= 2:
            break
        time.sleep(0.2)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=30)
    done_before = finished_episodes(out)
    assert 2 <= len(done_before) < 9
    second = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stdout + second.stderr
    assert f"{len(done_before)} resumed from before" in second.stderr
    assert len(finished_episodes(out)) == 9
    assert _containers("resumed") == []
