"""`termgym run --metrics-port`: the live endpoint, its format, a real Prometheus scraping it."""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import pytest
from prometheus_client.parser import text_string_to_metric_families

from termgym.run import RunConfig, Runner
from termgym.run._jobs import Job
from termgym.run._live import EpisodeAudit, LiveMetrics, MetricsServer

MONITORING = Path(__file__).resolve().parents[2] / "docs" / "monitoring"


def _result(
    variant: str,
    status: str = "ok",
    passed: bool = True,
    episode_class: str | None = None,
    **more: object,
):
    fields = {"conflict_reported": False, "tampered": None, "weak_isolation": False, **more}
    return SimpleNamespace(
        job=Job("t", variant, 0, 1),
        status=status,
        passed=passed,
        episode_class=episode_class,
        shifted=episode_class is not None,
        phases={"agent": 2.0},
        **fields,
    )


def _samples(text: str) -> dict[tuple[str, tuple], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def test_the_exposition_parses_and_counts_by_agent_variant_and_kind() -> None:
    live = LiveMetrics("run-1", "oracle")
    live.planned(4, 0)
    live.step("contradicted", 0.2)
    live.step("contradicted", 3.0)
    live.episode(_result("original"), EpisodeAudit(leaked=False, probed=True, disclosed=True))
    live.episode(_result("contradicted", passed=False, episode_class="stale"))
    live.episode(
        _result("contradicted", status="agent-error", passed=False, episode_class="neither")
    )
    live.episode(_result("contradicted", status="infra-error", passed=False))
    samples = _samples(live.text())
    base = (("agent", "oracle"), ("run", "run-1"))

    def get(name: str, variant: str, **extra: str) -> float:
        labels = tuple(sorted((*base, ("variant", variant), *extra.items())))
        return samples[(name, labels)]

    assert get("termgym_live_episodes_total", "contradicted") == 2
    assert get("termgym_live_passed_total", "contradicted") == 0
    assert get("termgym_live_pass_rate", "original") == 1.0
    assert get("termgym_live_episodes_by_class_total", "contradicted", **{"class": "stale"}) == 1
    assert get("termgym_live_errors_total", "contradicted", kind="infra") == 1
    assert get("termgym_live_errors_total", "contradicted", kind="agent") == 1
    assert get("termgym_live_disclosed_total", "original") == 1
    assert get("termgym_live_agent_step_seconds_count", "contradicted") == 2
    assert get("termgym_live_agent_step_seconds_bucket", "contradicted", le="0.25") == 1
    assert get("termgym_live_agent_step_seconds_bucket", "contradicted", le="+Inf") == 2
    assert get("termgym_live_agent_episode_seconds_sum", "contradicted") == 4.0
    assert samples[("termgym_live_finished_episodes", base)] == 4


def test_conflict_reports_cheating_tamper_and_weak_isolation_are_counted_live() -> None:
    live = LiveMetrics("run-2", "cheater")
    live.episode(_result("impossible", passed=True, tampered=True))
    live.episode(_result("impossible", passed=False, conflict_reported=True, tampered=False))
    live.episode(_result("original", passed=True, weak_isolation=True))
    samples = _samples(live.text())
    base = (("agent", "cheater"), ("run", "run-2"))

    def get(name: str, variant: str) -> float:
        return samples[(name, tuple(sorted((*base, ("variant", variant)))))]

    assert get("termgym_live_cheated_total", "impossible") == 1
    assert get("termgym_live_conflict_reports_total", "impossible") == 1
    assert get("termgym_live_tamper_read_total", "impossible") == 2
    assert get("termgym_live_tampered_total", "impossible") == 1
    assert get("termgym_live_weak_isolation_total", "original") == 1
    assert ("termgym_live_cheated_total", tuple(sorted((*base, ("variant", "original"))))) not in (
        samples
    )


def test_a_taken_port_is_a_clear_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(OSError, match=rf"expected a free port on 127.0.0.1, found port {port}"):
            MetricsServer(LiveMetrics("r", "a"), port)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _query(port: int, expr: str) -> list[dict]:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.loads(response.read())["data"]["result"]


def _wait(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = predicate()
        except OSError:
            value = None
        if value:
            return value
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


@pytest.mark.bwrap
@pytest.mark.slow
def test_a_real_prometheus_scrapes_a_live_run(tmp_path, base_rootfs, prometheus_binary) -> None:
    run_port, prom_port = _free_port(), _free_port()
    config_file = tmp_path / "prometheus.yml"
    config_file.write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        f"rule_files: ['{MONITORING / 'termgym-rules.yml'}']\n"
        "scrape_configs:\n"
        "  - job_name: termgym\n"
        f"    static_configs: [{{targets: ['127.0.0.1:{run_port}']}}]\n"
    )
    server = subprocess.Popen(
        [
            prometheus_binary,
            f"--config.file={config_file}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{prom_port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "prometheus.log").open("w"),
    )
    runner = Runner(
        RunConfig(
            agent="memorizer",
            tasks=("text-report",),
            variants=("original", "contradicted"),
            episodes=3,
            concurrency=1,
            out=tmp_path / "live-run",
            backend="bwrap",
            metrics_port=run_port,
        )
    )
    try:
        _wait(lambda: _query(prom_port, "up") is not None, 60, "Prometheus to answer")
        worker = threading.Thread(target=runner.run)
        worker.start()
        # while the run runs, Prometheus sees the target up and the planned episodes
        planned = _wait(
            lambda: _query(prom_port, "termgym_live_planned_episodes"), 60, "a first scrape"
        )
        assert planned[0]["metric"]["agent"] == "memorizer"
        assert planned[0]["value"][1] == "6"
        worker.join(timeout=300)
        assert not worker.is_alive()

        def final() -> list[dict]:
            result = _query(prom_port, "termgym_live_episodes_total")
            return result if sum(float(r["value"][1]) for r in result) == 6 else []

        by_variant = {r["metric"]["variant"]: r["value"][1] for r in _wait(final, 30, "6 episodes")}
        assert by_variant == {"original": "3", "contradicted": "3"}
        stale = _query(prom_port, 'termgym_live_episodes_by_class_total{class="stale"}')
        assert [r["value"][1] for r in stale] == ["3"]
        rates = {
            r["metric"]["variant"]: float(r["value"][1])
            for r in _query(prom_port, "termgym_live_pass_rate")
        }
        assert rates == {"original": 1.0, "contradicted": 0.0}
        steps = _query(prom_port, "sum(termgym_live_agent_step_seconds_count)")
        assert float(steps[0]["value"][1]) >= 6
        # the shipped rules load into the server and evaluate against the run's series
        rules_url = f"http://127.0.0.1:{prom_port}/api/v1/rules"
        with urllib.request.urlopen(rules_url, timeout=5) as response:
            groups = json.loads(response.read())["data"]["groups"]
        assert {g["name"] for g in groups} == {"termgym-recording", "termgym-alerts"}
        assert all(r["health"] != "err" for g in groups for r in g["rules"])
    finally:
        runner.close()
        server.terminate()
        server.wait(timeout=30)
