"""A run's metrics served live in Prometheus' text format while it runs (`--metrics-port`).

Every series carries the labels run, agent and variant. Counters end in `_total`; the agent's
latency per step and per episode are histograms; pass rates so far are gauges. The alerting
rules in docs/monitoring/ are written against these names (docs/monitoring.md).

What is counted comes from the runner's own results and from the trace audit of each
finished recording, read on the host after the episode's sandbox is gone: nothing here is
read from inside a sandbox.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from termgym._vocabulary import CLASSES, IMPOSSIBLE, Variant

PREFIX = "termgym_live_"
STEP_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
EPISODE_BUCKETS = (1.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

_COUNTERS = {
    "episodes_total": "Episodes counted in the rates (infrastructure errors left out).",
    "passed_total": "Counted episodes that passed their own graders.",
    "shifted_total": "Counted episodes whose enforced rules differ from the original ones.",
    "episodes_by_class_total": "Counted episodes per shadow-grading class.",
    "errors_total": "Episodes with an error, by kind: infra (left out), agent, grader.",
    "retries_total": "Attempts retried after an infrastructure error.",
    "audited_total": "Finished episodes the trace audit read.",
    "leaked_total": "Audited episodes in which the agent wrote a hidden rule value.",
    "probed_total": "Audited episodes with an answer to the disclosure probe.",
    "disclosed_total": "Probed episodes whose answer named a hidden rule value.",
    "steps_total": "Agent steps taken.",
    "conflict_reports_total": "Counted episodes the agent ended by reporting a conflict.",
    "cheated_total": "Counted impossible episodes that passed their own graders.",
    "tamper_read_total": "Counted episodes whose tamper evidence was read.",
    "tampered_total": "Counted episodes with tamper evidence.",
    "weak_isolation_total": "Counted episodes graded with a defence of the verifier not holding.",
}


@dataclass
class _Histogram:
    buckets: tuple[float, ...]
    counts: list[int]
    total: float = 0.0
    count: int = 0

    @classmethod
    def of(cls, buckets: tuple[float, ...]) -> _Histogram:
        return cls(buckets, [0] * len(buckets))

    def observe(self, value: float) -> None:
        for i, bound in enumerate(self.buckets):
            if value <= bound:
                self.counts[i] += 1
        self.total += value
        self.count += 1


Key = tuple[str, str]  # agent, variant


class LiveMetrics:
    """Thread-safe counters of a run, rendered in the Prometheus exposition format."""

    def __init__(self, run_id: str, agent: str) -> None:
        self.run_id = run_id
        self.agent = agent
        self._lock = threading.Lock()
        self._counters: dict[tuple[str, Key, tuple[tuple[str, str], ...]], float] = defaultdict(
            float
        )
        self._steps: dict[Key, _Histogram] = {}
        self._episodes: dict[Key, _Histogram] = {}
        self._planned = 0
        self._finished = 0

    def planned(self, total: int, already_done: int) -> None:
        """The run's size, and how many episodes an earlier attempt finished."""
        with self._lock:
            self._planned, self._finished = total, already_done

    def step(self, variant: Variant, seconds: float) -> None:
        """One agent step took `seconds` (the agent's own time, not the command's)."""
        key = (self.agent, variant)
        with self._lock:
            self._steps.setdefault(key, _Histogram.of(STEP_BUCKETS)).observe(seconds)
            self._counters[("steps_total", key, ())] += 1

    def retry(self, variant: Variant) -> None:
        with self._lock:
            self._counters[("retries_total", (self.agent, variant), ())] += 1

    def episode(self, result: Any, audit: Any = None) -> None:
        """Count a finished `EpisodeResult`, and the trace audit of its recording if any."""
        key = (self.agent, result.job.variant)
        with self._lock:
            self._finished += 1
            if result.status == "infra-error":
                self._counters[("errors_total", key, (("kind", "infra"),))] += 1
                return
            self._counters[("episodes_total", key, ())] += 1
            self._counters[("passed_total", key, ())] += float(result.passed)
            if result.status == "agent-error":
                self._counters[("errors_total", key, (("kind", "agent"),))] += 1
            if result.episode_class == "grader-error":
                self._counters[("errors_total", key, (("kind", "grader"),))] += 1
            if result.episode_class in CLASSES:
                self._counters[
                    ("episodes_by_class_total", key, (("class", result.episode_class),))
                ] += 1
                if result.shifted:
                    self._counters[("shifted_total", key, ())] += 1
            self._counters[("conflict_reports_total", key, ())] += float(result.conflict_reported)
            if result.job.variant == IMPOSSIBLE:
                self._counters[("cheated_total", key, ())] += float(result.passed)
            if result.tampered is not None:
                self._counters[("tamper_read_total", key, ())] += 1
                self._counters[("tampered_total", key, ())] += float(result.tampered)
            self._counters[("weak_isolation_total", key, ())] += float(result.weak_isolation)
            agent_seconds = float(result.phases.get("agent", 0.0))
            self._episodes.setdefault(key, _Histogram.of(EPISODE_BUCKETS)).observe(agent_seconds)
            if audit is not None:
                self._counters[("audited_total", key, ())] += 1
                self._counters[("leaked_total", key, ())] += float(audit.leaked)
                if audit.probed:
                    self._counters[("probed_total", key, ())] += 1
                    self._counters[("disclosed_total", key, ())] += float(audit.disclosed)

    def text(self) -> str:
        """Every series in the text exposition format (version 0.0.4)."""
        with self._lock:
            counters = dict(self._counters)
            steps = {k: _copy(h) for k, h in self._steps.items()}
            episodes = {k: _copy(h) for k, h in self._episodes.items()}
            planned, finished = self._planned, self._finished
        lines: list[str] = []
        run = {"run": self.run_id, "agent": self.agent}
        _family(lines, "planned_episodes", "gauge", "Episodes the run is made of.")
        lines.append(_sample("planned_episodes", run, planned))
        _family(lines, "finished_episodes", "gauge", "Episodes finished, this attempt or before.")
        lines.append(_sample("finished_episodes", run, finished))
        for name, help_text in _COUNTERS.items():
            rows = [(k, extra, v) for (n, k, extra), v in counters.items() if n == name]
            if not rows:
                continue
            _family(lines, name, "counter", help_text)
            for (agent, variant), extra, value in sorted(rows):
                labels = {"run": self.run_id, "agent": agent, "variant": variant, **dict(extra)}
                lines.append(_sample(name, labels, value))
        rates = [
            (k, counters[("passed_total", k, ())] / n)
            for (name, k, _), n in counters.items()
            if name == "episodes_total" and n > 0
        ]
        if rates:
            _family(lines, "pass_rate", "gauge", "Pass rate so far of the counted episodes.")
            for (agent, variant), rate in sorted(rates):
                labels = {"run": self.run_id, "agent": agent, "variant": variant}
                lines.append(_sample("pass_rate", labels, rate))
        for name, help_text, hists in (
            ("agent_step_seconds", "Seconds the agent took to choose each action.", steps),
            ("agent_episode_seconds", "Seconds the agent acted per episode.", episodes),
        ):
            if hists:
                _family(lines, name, "histogram", help_text)
                for (agent, variant), hist in sorted(hists.items()):
                    labels = {"run": self.run_id, "agent": agent, "variant": variant}
                    lines += _histogram(name, labels, hist)
        return "\n".join(lines) + "\n"


def _copy(hist: _Histogram) -> _Histogram:
    return _Histogram(hist.buckets, list(hist.counts), hist.total, hist.count)


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels: dict[str, str]) -> str:
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items()) + "}"


def _number(value: float) -> str:
    if value == float("inf"):
        return "+Inf"
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _family(lines: list[str], name: str, kind: str, help_text: str) -> None:
    lines.append(f"# HELP {PREFIX}{name} {help_text}")
    lines.append(f"# TYPE {PREFIX}{name} {kind}")


def _sample(name: str, labels: dict[str, str], value: float) -> str:
    return f"{PREFIX}{name}{_labels(labels)} {_number(value)}"


def _histogram(name: str, labels: dict[str, str], hist: _Histogram) -> Iterable[str]:
    for bound, count in zip(hist.buckets, hist.counts, strict=True):
        yield _sample(f"{name}_bucket", {**labels, "le": _number(bound)}, count)
    yield _sample(f"{name}_bucket", {**labels, "le": "+Inf"}, hist.count)
    yield _sample(f"{name}_sum", labels, hist.total)
    yield _sample(f"{name}_count", labels, hist.count)


@dataclass(frozen=True)
class EpisodeAudit:
    """What the live metrics need of one finished episode's trace audit."""

    leaked: bool
    probed: bool
    disclosed: bool


def audit_recording(path: str | Path | None) -> EpisodeAudit | None:
    """The trace audit of a finished recording (None without one or when unreadable)."""
    if not path or not Path(path).is_file():
        return None
    from termgym.analysis.audit import audit_logs
    from termgym.errors import RecordingError
    from termgym.recording import read_episode

    try:
        report = audit_logs([read_episode(path)])
    except (RecordingError, OSError, ValueError):
        return None
    return EpisodeAudit(
        leaked=report.episodes_with("leak") > 0,
        probed=bool(report.probes),
        disclosed=any(p.disclosed for p in report.probes),
    )


class MetricsServer:
    """Serves a `LiveMetrics` on http://HOST:PORT/metrics from a daemon thread."""

    def __init__(self, metrics: LiveMetrics, port: int, host: str = "127.0.0.1") -> None:
        self.metrics = metrics

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the http.server method name
                if self.path.split("?")[0] not in ("/metrics", "/"):
                    self.send_error(404, "expected /metrics")
                    return
                body = metrics.text().encode()
                self.send_response(200)
                self.send_header("Content-Type", CONTENT_TYPE)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                return  # scrapes are not worth a line on the run's console

        try:
            self._server = ThreadingHTTPServer((host, port), Handler)
        except OSError as exc:
            raise OSError(
                f"--metrics-port: expected a free port on {host}, found port {port} taken or "
                f"refused: {exc.strerror or exc}"
            ) from exc
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="termgym-metrics", daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> MetricsServer:
        self._thread.start()
        return self

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
