"""What a recording, an ATIF file or a run folder claims reaches no figure unverified, and
every field of theirs is shown, never obeyed, by the terminal.

A third party (or an agent's own trajectory, exported and edited) can hand over files:
`termgym import atif` turns a trajectory into an episode recording, a run folder can be
copied from elsewhere, a recording edited. Before, an ATIF file whose `extra.termgym` was
edited to claim reward 1 and passing verdicts made `termgym report` show 100% pass and 100%
adaptation, as graded episodes do; and an agent, task, variant or run name carrying OSC 2 /
OSC 52 set the terminal's title and clipboard through the report's tables. Now episodes
whose recordings prove no run here wrote them are counted in no figure and listed apart as
unverified (the report, the HTML file, the gate), and every field is printed as text.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from termgym.cli import main
from termgym.recording import (
    EpisodeEnd,
    EpisodeHeader,
    RunWriter,
    StepRecord,
    episode_to_atif,
    read_episode,
    write_run_header,
)


def sets(field: str) -> str:
    """Sets the terminal's title (OSC 2) and clipboard (OSC 52), clears it, if obeyed."""
    return f"\x1b]2;SET-BY-{field}\x1b\\\x1b]52;c;cm0gLXJmIH4K\x07\x1b[2J\x9b31m"


OBEYED = ("\x1b]", "\x1b[2J", "\x9b", "\x07")


def _failed_run(root: Path, run_id: str, agent: str = "honest") -> Path:
    """A run written here: one contradicted episode that failed its graders."""
    run = RunWriter(root, run_id=run_id, header={"agent": agent, "model": "m"})
    header = EpisodeHeader(
        episode_id="ep-0", task="fuel-planner", task_version=1, variant="contradicted",
        rules_visible={"max_weight": 100}, rules_enforced={"max_weight": 150}, seed=0,
        agent=agent, backend="bwrap", versions={"termgym": "test"}, started=time.time(),
        run_id=run_id, extra={"instruction": "plan the load"},
    )  # fmt: skip
    failed = {"passed": False, "score": 0.0, "rules": {"max_weight": 150},
              "results": [{"grader": "tests", "passed": False, "score": 0.0,
                           "message": "failed: test_plan"}]}  # fmt: skip
    original = {"passed": True, "score": 1.0, "rules": {"max_weight": 100}}
    with run.episode(header) as writer:
        writer.step(StepRecord(0, "command", "python3 plan.py", "ok\n", 0, 0.01))
        writer.end(
            EpisodeEnd(
                reward=0.0,
                terminated=True,
                truncated=False,
                episode_class="stale",
                verdicts={"contradicted": failed, "original": original},
            )  # fmt: skip
        )
    run.finish()
    return run.run_dir


def _forged_atif(run_dir: Path, out: Path, *, names: bool = True) -> Path:
    """The failed episode exported, its `extra.termgym` edited to claim a pass, and (with
    `names`) every name in it made to set the terminal's title."""
    doc = episode_to_atif(read_episode(run_dir / "episodes" / "ep-0.jsonl"))
    ours = doc["extra"]["termgym"]
    ours.update(reward=1.0, episode_class="adapted", episode_id="forged")
    for verdict in ours["verdicts"].values():
        verdict.update(passed=True, score=1.0)
        for result in verdict.get("results", []):
            result.update(passed=True, score=1.0, message="ok" + sets("message"))
    if names:
        ours["task"] = "fuel-planner" + sets("task")
        ours["variant"] = "contradicted" + sets("variant")
        ours["run_id"] = "run" + sets("run")
    doc["agent"]["name"] = "honest"
    out.write_text(json.dumps(doc))
    return out


def _evil_run(root: Path) -> Path:
    """A run written here whose every name and header field a file gave it carries escape
    sequences (a foreign task's id, a variant, an agent's or a model's name ...)."""
    run_id = "evil" + sets("run")
    run = RunWriter(root, run_id="evil-run", header={"agent": "agent" + sets("agent-json"),
                                                    "model": "model" + sets("model")})  # fmt: skip
    header = EpisodeHeader(
        episode_id="ep-evil", task="task" + sets("task"), task_version=1,
        variant="contradicted", rules_visible={"limit" + sets("rule"): 1},
        rules_enforced={"limit" + sets("rule"): 2}, seed=0, agent="agent" + sets("agent"),
        backend="bwrap" + sets("backend"), versions={"model": "m" + sets("version")},
        started=time.time(), run_id=run_id, extra={"instruction": "x" + sets("instruction")},
    )  # fmt: skip
    verdict = {"passed": True, "score": 1.0, "rules": {"limit" + sets("rule"): 2},
               "results": [{"grader": "g" + sets("grader"), "passed": True, "score": 1.0,
                            "message": "ok" + sets("verdict")}]}  # fmt: skip
    with run.episode(header) as writer:
        writer.step(StepRecord(0, "command", "ls" + sets("action"), "o" + sets("output"), 0, 0.1))
        writer.end(
            EpisodeEnd(
                reward=1.0,
                terminated=True,
                truncated=False,
                episode_class="adapted",
                verdicts={"contradicted": verdict, "original": {**verdict, "passed": False}},
                audit=[
                    {"kind": "leak" + sets("audit-kind"), "message": "m" + sets("audit"), "step": 0}
                ],
                extra={
                    "grading": {
                        "filesystem": "snapshot" + sets("filesystem"),
                        "isolation": ["gap" + sets("isolation")],
                    }
                },
                conflict="c" + sets("conflict"),
            )  # fmt: skip
        )
    run.finish()
    write_run_header(run.run_dir, {"run_id": run_id, "agent": "agent" + sets("agent-json")})
    return run.run_dir


def _invoke(*args: str) -> str:
    done = CliRunner(env={"COLUMNS": "400"}).invoke(main, list(args), catch_exceptions=False)
    return done.output


def _gate(base: Path, candidate: Path) -> Result:
    runner = CliRunner(env={"COLUMNS": "400"})
    return runner.invoke(main, ["compare", str(base), str(candidate), "--max-drop", "0.1"])


def _nothing_obeyed(text: str, where: str) -> None:
    for sequence in OBEYED:
        assert sequence not in text, (where, sequence, text[-2000:])


def test_a_forged_atif_import_changes_no_figure_and_is_shown_unverified(tmp_path: Path) -> None:
    failed = _failed_run(tmp_path / "runs", "honest-run")
    imported = tmp_path / "imported"
    _invoke("import", "atif", str(_forged_atif(failed, tmp_path / "forged.json")),
            "--out", str(imported))  # fmt: skip
    html = tmp_path / "report.html"
    shown = _invoke("report", str(imported), "--html", str(html), "--resamples", "10")
    assert "100.0%" not in shown, shown  # before: 100% pass, 100% adaptation
    assert "unverified" in shown.lower() and "forged" in shown, shown
    _nothing_obeyed(shown, "report")
    page = html.read_text()
    assert "Unverified episodes" in page and "100.0%" not in page
    _nothing_obeyed(page, "html")
    # pooled with the run it was forged from, the pass rate is the real one's: 0
    pooled = _invoke("report", str(failed), str(imported), "--no-html", "--resamples", "10")
    (rate,) = [line for line in pooled.splitlines() if "pass rate (possible variants)" in line]
    assert "0.0%" in rate and "100.0%" not in rate, pooled
    # the gate: the forged pass is no candidate's; it fails, saying what it left out
    gate = CliRunner(env={"COLUMNS": "400"}).invoke(
        main, ["compare", str(failed), str(imported), "--max-drop", "0.1"]
    )
    assert gate.exit_code == 1, gate.output
    assert "UNVERIFIED: candidate: 1 unverified episodes" in gate.output, gate.output
    _nothing_obeyed(gate.output, "compare")


def test_a_recording_changed_after_its_run_is_unverified(tmp_path: Path) -> None:
    """Its run's own recording, edited to claim a pass, no longer proves anything: its
    signature does not match, and nothing counts it."""
    run = _failed_run(tmp_path / "runs", "edited-run")
    path = run / "episodes" / "ep-0.jsonl"
    path.write_text(path.read_text().replace('"reward":0.0', '"reward":1.0'))
    shown = _invoke("report", str(run), "--no-html", "--resamples", "10")
    assert "changed after it was written" in shown, shown
    assert "0 episodes" in shown.splitlines()[0], shown


@pytest.mark.parametrize("html", [False, True], ids=["tables", "html"])
def test_every_field_of_a_run_is_shown_never_obeyed(tmp_path: Path, html: bool) -> None:
    run = _evil_run(tmp_path / "runs")
    page = tmp_path / "report.html"
    shown = _invoke("report", str(run), *(["--html", str(page)] if html else ["--no-html"]))
    assert "1 episodes" in shown.splitlines()[0], shown  # written here: counted
    _nothing_obeyed(shown, "report")
    if html:
        _nothing_obeyed(page.read_text(), "html")
    other = _evil_run(tmp_path / "other")
    gate = CliRunner(env={"COLUMNS": "400"}).invoke(
        main, ["compare", str(run), str(other), "--max-drop", "0.1"]
    )
    _nothing_obeyed(gate.output, "compare")
