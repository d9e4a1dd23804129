"""`termgym run`: parallel episodes, results per phase, retries, resumption, Ctrl-C safety."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from termgym.agents import SUBMIT, register_agent, unregister_agent
from termgym.recording import read_episode
from termgym.run import EpisodeDone, ProgressEvent, Retrying, RunConfig, Runner, RunPlanned

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "run-tasks"
TERMGYM = str(Path(sys.executable).parent / "termgym")


def _results(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


@pytest.mark.bwrap
def test_a_run_grades_every_episode_and_reports_its_phases(tmp_path, base_rootfs) -> None:
    config = RunConfig(
        agent="memorizer",
        tasks=("text-*",),
        variants=("original", "contradicted"),
        episodes=2,
        concurrency=2,
        out=tmp_path / "run",
        backend="bwrap",
    )
    summary = Runner(config).run()
    assert len(summary.results) == 4 and not summary.skipped
    by_variant = {(r.job.variant, r.job.index): r for r in summary.results}
    assert by_variant[("original", 0)].reward == 1.0
    assert by_variant[("contradicted", 1)].episode_class == "stale"
    for line in _results(tmp_path / "run"):
        assert line["status"] == "ok" and line["attempts"] == 1
        assert set(line["phases"]) == {"setup", "agent", "grading"}
    assert json.loads((tmp_path / "run" / "run.json").read_text())["total_episodes"] == 4


@pytest.mark.bwrap
def test_a_rerun_resumes_without_redoing_finished_episodes(tmp_path, base_rootfs) -> None:
    out = tmp_path / "run"
    config = RunConfig(
        agent="oracle",
        tasks=("text-report",),
        variants=("original", "sampled"),
        episodes=2,
        out=out,
        backend="bwrap",
    )
    Runner(config).run()
    # a crash mid-episode leaves a recording without its end line
    victim = out / "episodes" / "text-report--sampled--001.jsonl"
    lines = victim.read_bytes().splitlines(keepends=True)
    ended = (b'{"type":"end"', b'{"type":"signature"')  # its end line and its signature
    victim.write_bytes(b"".join(line for line in lines if not line.startswith(ended)))
    assert read_episode(victim).end is None
    summary = Runner(config).run()
    assert [r.job.episode_id for r in summary.results] == ["text-report--sampled--001"]
    assert len(summary.skipped) == 3
    assert read_episode(victim).end is not None


@pytest.mark.bwrap
def test_infrastructure_failures_are_retried_then_reported_apart(
    tmp_path, base_rootfs, monkeypatch
) -> None:
    monkeypatch.setenv("TERMGYM_TASKS_PATH", str(FIXTURES))
    out = tmp_path / "run"
    config = RunConfig(
        agent="oracle",
        tasks=("missing-image",),
        variants=("original",),
        out=out,
        backend="bwrap",
        retries=1,
    )
    events: list[ProgressEvent] = []
    summary = Runner(config, progress=events.append).run()
    [result] = summary.results
    assert result.status == "infra-error" and result.attempts == 2
    assert "termgym/missing:never" in result.error
    assert summary.infra_errors == 1
    assert [type(e) for e in events].count(Retrying) == 1  # one retry made, one reported
    assert isinstance(events[0], RunPlanned) and events[0].total == 1
    assert isinstance(events[-1], EpisodeDone) and events[-1].result is result
    assert not list((out / "episodes").glob("*.jsonl"))  # nothing counts as finished


@pytest.mark.bwrap
def test_a_grader_that_fails_on_the_final_state_is_a_counted_grader_error(
    tmp_path, base_rootfs, monkeypatch
) -> None:
    """Grading runs on clean tools, so a failing grader is the final state's doing: counted."""
    monkeypatch.setenv("TERMGYM_TASKS_PATH", str(FIXTURES))
    out = tmp_path / "run"
    config = RunConfig(
        agent="oracle", tasks=("crashing-grader",), variants=("original",), out=out,
        backend="bwrap", retries=1,
    )  # fmt: skip
    summary = Runner(config).run()
    [result] = summary.results
    assert (result.status, result.episode_class, result.reward, result.attempts) == (
        "ok", "grader-error", 0.0, 1,
    )  # fmt: skip
    assert "wrote no score" in result.error and summary.infra_errors == 0
    assert len(list((out / "episodes").glob("*.jsonl"))) == 1
    # finished: a resumed run does not give the agent another try at it
    again = Runner(config).run()
    assert again.results == () and again.skipped == ("crashing-grader--original--000",)
    assert len(_results(out)) == 1 and not (out / "episodes" / "failed").exists()


@pytest.mark.bwrap
def test_a_grader_error_of_a_shadow_rule_set_fails_the_episode(tmp_path, base_rootfs) -> None:
    """Its own rules graded and passed, the original ones crashed the grader: a grader error,
    scored 0, and a failure in every rate (the runner's, live and the report's)."""
    from termgym.report import load_run

    task = tmp_path / "tasks" / "half-crashing-grader"
    shutil.copytree(FIXTURES / "crashing-grader", task)
    spec = (task / "task.yaml").read_text()
    (task / "task.yaml").write_text(spec.replace("id: crashing-grader", f"id: {task.name}"))
    (task / "graders" / "no_score.sh").write_text(
        'limit=$(python3 -c \'import json, os; print(json.loads(os.environ["TERMGYM_RULES"])'
        '["limit"])\')\n'
        'if [ "$limit" = 10 ]; then echo crashed >&2; exit 3; fi\n'
        'if [ "$(cat /app/out.txt)" = "$limit" ]; then echo 1; else echo 0; fi'
        ' > "$TERMGYM_SCORE_FILE"\n'
    )
    out = tmp_path / "run"
    config = RunConfig(
        agent="oracle", tasks=(task.name,), variants=("contradicted",), out=out,
        backend="bwrap", paths=(str(tmp_path / "tasks"),),
    )  # fmt: skip
    runner = Runner(config)
    [result] = runner.run().results
    assert (result.episode_class, result.reward) == ("grader-error", 0.0)
    assert "[original]" in result.error
    assert not result.passed
    live = {
        s.name: s.value
        for family in text_string_to_metric_families(runner.live.text())
        for s in family.samples
    }
    assert live["termgym_live_passed_total"] == 0 and live["termgym_live_pass_rate"] == 0
    [summary] = load_run(out, resamples=0).summaries
    assert not summary.passed
    metrics = load_run(out, resamples=0).metrics["oracle"]
    assert metrics.pass_rate["contradicted"].value == 0.0 and metrics.grader_errors == 1


class _Surrogates:
    """Types lone surrogates: an undecodable byte (U+DCFF, as surrogateescape decodes one)
    and a model's JSON escape (\\ud800 in a tool call's arguments), then submits."""

    name = "surrogates"
    privileged = False

    def reset(self, context) -> None:  # noqa: ANN001
        self.steps = 0

    def act(self, observation) -> str:  # noqa: ANN001
        self.steps += 1
        return ["printf 'x\udcff' > /tmp/a", "echo '\ud800'", SUBMIT][self.steps - 1]

    def transcript(self) -> list:
        return []


@pytest.mark.bwrap
def test_an_agents_lone_surrogate_is_typed_and_its_episode_counted(tmp_path, base_rootfs) -> None:
    """UTF-8 cannot hold a lone surrogate: echoing the command into the recording (and, for
    one surrogateescape does not carry, quoting it for the shell) raised out of env.step, and
    the runner set the episode aside as an infrastructure error, out of every rate."""
    register_agent("surrogates", _Surrogates)
    try:
        config = RunConfig(
            agent="surrogates", tasks=("text-report",), variants=("original",),
            out=tmp_path / "run", backend="bwrap", retries=1,
        )  # fmt: skip
        summary = Runner(config).run()
    finally:
        unregister_agent("surrogates")
    [result] = summary.results
    assert (result.status, result.attempts, summary.infra_errors) == ("ok", 1, 0), result.error
    [log] = [read_episode(p) for p in (tmp_path / "run" / "episodes").glob("*.jsonl")]
    assert [s.action for s in log.steps] == ["printf 'x\udcff' > /tmp/a", "echo '\ud800'"]
    assert log.steps[1].output == "\ufffd\n"  # sent as U+FFFD; the byte went as itself


class _Sleeper:
    """Writes its answer, then runs a command that outlives its time."""

    name = "sleeper"
    privileged = False

    def reset(self, context) -> None:  # noqa: ANN001
        self.steps = 0

    def act(self, observation) -> str:  # noqa: ANN001
        self.steps += 1
        return ["echo done > /app/report.txt", "sleep 120", SUBMIT][self.steps - 1]

    def transcript(self) -> list:
        return []


@pytest.mark.bwrap
def test_the_agent_time_limit_stops_a_command_still_running_and_grades_the_episode(
    tmp_path, base_rootfs
) -> None:
    """The task's agent timeout bounds the agent's whole time, its last command included:
    the command is stopped at the deadline (not at the step timeout, minutes later), and
    the episode is graded as a timed-out one."""
    register_agent("sleeper", _Sleeper)
    try:
        config = RunConfig(
            agent="sleeper", tasks=("text-report",), variants=("original",),
            out=tmp_path / "run", backend="bwrap", agent_timeout=3.0, retries=0,
        )  # fmt: skip
        summary = Runner(config).run()
    finally:
        unregister_agent("sleeper")
    [result] = summary.results
    assert (result.status, result.agent_timed_out, result.steps) == ("ok", True, 2)
    assert result.phases["agent"] < 60  # the deadline, not `sleep 120` or the step timeout
    [log] = [read_episode(p) for p in (tmp_path / "run" / "episodes").glob("*.jsonl")]
    assert log.steps[-1].action == "sleep 120" and log.steps[-1].timed_out
    assert log.end is not None and log.end.truncated and not log.end.terminated
    assert log.end.verdicts  # graded as it stood


def test_unknown_tasks_are_named_with_what_exists(tmp_path) -> None:
    from termgym.errors import TaskNotFound

    config = RunConfig(agent="oracle", tasks=("fuel-planer",), out=tmp_path)
    with pytest.raises(
        TaskNotFound, match="no task matches 'fuel-planer'; available: .*fuel-planner"
    ):
        Runner(config).jobs()


@pytest.mark.docker
@pytest.mark.timeout(900)  # its clean-up closes containers one by one: minutes on a busy machine
def test_ctrl_c_stops_the_run_and_leaves_no_container(tmp_path, base_image) -> None:
    from termgym.images._engine import docker_client

    out = tmp_path / f"ctrlc-{uuid.uuid4().hex[:8]}"  # the run id labels its containers
    proc = subprocess.Popen(
        [
            TERMGYM,
            "run",
            "--agent",
            "oracle",
            "--tasks",
            "*",
            "--variants",
            "original,contradicted",
            "--concurrency",
            "2",
            "--out",
            str(out),
            "--no-report",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        # Ctrl-C as in a terminal, even when the suite itself runs with SIGINT ignored
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    client = docker_client()
    label = {"label": f"io.termgym.run={out.name}"}
    deadline = time.monotonic() + 120
    while not client.containers.list(filters=label, sparse=True) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert client.containers.list(filters=label, sparse=True), "the run never started a container"
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=600)
    assert proc.returncode != 0
    assert client.containers.list(all=True, filters=label, sparse=True) == []


def test_a_name_that_is_no_variant_is_refused_when_the_run_is_made(tmp_path: Path) -> None:
    with pytest.raises(
        ValueError, match=r"expected a variant \(original, .*found 'sampeld'.*'sampled'"
    ):
        RunConfig(agent="oracle", variants=("original", "sampeld"), out=tmp_path)  # type: ignore[arg-type]
    result = subprocess.run(
        [TERMGYM, "run", "--agent", "oracle", "--variants", "original,orignal",
         "--out", str(tmp_path / "run"), "--no-report"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr
    assert "--variants" in result.stderr and "Did you mean 'original'?" in result.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"agent": "oracl"}, r"no agent named 'oracl'.*Did you mean 'oracle'\?"),
        (
            {"agent": "oracle", "agent_options": {"foo": "1"}},
            r"agent 'oracle' takes no option 'foo'",
        ),
        (
            {"agent": "llm", "agent_options": {"model": "m", "probe": "maybe"}},
            r"agent 'llm' option 'probe': expected bool, found 'maybe'",
        ),
        ({"agent": "oracle", "backend": "dockr"}, r"got 'dockr'. Did you mean 'docker'\?"),
        (
            {"agent": "oracle", "backend": "bwrap", "runtime": "runsc"},
            r"The bwrap backend takes no runtime; got runtime='runsc'",
        ),
        ({"agent": "llm"}, r"llm: expected a model name \(option model or \$TERMGYM_LLM_MODEL\)"),
        (
            {"agent": "replay", "agent_options": {"episode": "/nonexistent/e.jsonl"}},
            r"replay: expected an episode recording \(.jsonl\), found no file",
        ),
        (
            {"agent": "oracle", "variants": ("impossible",)},
            r"no episode to run: expected a task among fuel-planner that offers one of the "
            r"variants impossible",
        ),
    ],
)
def test_a_run_that_would_fail_every_episode_alike_is_refused_before_any_starts(
    tmp_path: Path, options: dict, expected: str, monkeypatch
) -> None:
    from termgym.errors import TermgymError

    monkeypatch.delenv("TERMGYM_LLM_MODEL", raising=False)

    out = tmp_path / "run"
    config = RunConfig(**{"tasks": ("fuel-planner",), "out": out, **options})
    with pytest.raises(TermgymError, match=expected):
        Runner(config).run()
    assert not out.exists()  # nothing recorded: no infrastructure errors to resume or report


def test_a_run_folder_that_cannot_be_made_is_an_error_naming_it(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = subprocess.run(
        [TERMGYM, "run", "--agent", "oracle", "--tasks", "fuel-planner",
         "--out", str(blocker / "run"), "--no-report"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{blocker / 'run'}: expected a run folder that can be written" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_negative_agent_timeout_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"agent_timeout: expected seconds >= 0 .*found -1"):
        RunConfig(agent="oracle", agent_timeout=-1, out=tmp_path)
    result = subprocess.run(
        [TERMGYM, "run", "--agent", "oracle", "--agent-timeout", "-1",
         "--out", str(tmp_path / "r")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2 and "--agent-timeout" in result.stderr, result.stderr


@pytest.mark.bwrap
def test_a_run_folder_is_resumed_only_by_the_run_it_holds(tmp_path: Path, base_rootfs) -> None:
    """Another agent (or seed, or agent option) given the folder of a finished run reported
    its episodes as 'resumed from before', ran none, and rewrote run.json as its own."""
    from termgym.errors import RecordingError
    from termgym.recording import read_run_header

    out = tmp_path / "run"
    base = {"tasks": ("fuel-planner",), "variants": ("original",), "out": out}
    first = Runner(RunConfig(agent="memorizer", backend="bwrap", **base)).run()
    assert [r.status for r in first.results] == ["ok"]
    for other, differs in [
        ({"agent": "oracle"}, "agent 'memorizer' (now 'oracle')"),
        ({"agent": "memorizer", "seed": 3}, "seed 0 (now 3)"),
    ]:
        with pytest.raises(RecordingError, match=re.escape(f"holds a run of another {differs}")):
            Runner(RunConfig(**{**base, **other})).run()
    assert read_run_header(out)["agent"] == "memorizer"  # the header is the first run's still
    again = Runner(RunConfig(agent="memorizer", backend="bwrap", **base)).run()
    assert (again.results, again.skipped) == ((), ("fuel-planner--original--000",))


def test_a_run_of_no_task_or_no_variant_is_refused_as_such(tmp_path: Path) -> None:
    """`--tasks ''` and `--variants ,` reached the planner, which said it expected 'a task
    among  that offers one of the variants '; a str of tasks was read letter by letter."""
    for option, value in (("--tasks", ""), ("--variants", " , ")):
        result = subprocess.run(
            [TERMGYM, "run", "--agent", "oracle", option, value, "--out", str(tmp_path / "r")],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert result.returncode == 2, result.stdout + result.stderr
        assert f"Invalid value for {option}: expected at least one" in result.stderr
    for field, value in (("tasks", ()), ("tasks", "fuel-planner"), ("variants", ())):
        with pytest.raises(ValueError, match=rf"{field}: expected a tuple of"):
            RunConfig(agent="oracle", out=tmp_path, **{field: value})
