"""Agent text printed to a terminal is shown, never obeyed: an action carrying OSC 0 (the
window title), OSC 52 (the clipboard) and CSI (clear the screen) goes through a real run,
its progress lines and `termgym report`, and none of those sequences
reaches the bytes printed."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from termgym._terminal_text import printable, shown
from termgym.agents import SUBMIT, register_agent, unregister_agent
from termgym.cli import main
from termgym.errors import AgentError

TITLE = "\x1b]0;PWNED-TITLE\x07"
CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4K\x1b\\"
CLEAR = "\x1b[2J\x1b[H"
C1_CSI = "\x9b31m"
EVIL = f"terminal-bench {TITLE} {CLIPBOARD} {CLEAR} {C1_CSI} reward"
"""Platform words around the sequences, so the trace audit quotes them in its excerpt."""
OBEYED = (b"\x1b]0;", b"\x1b]52;", b"\x1b[2J", b"\x1b[H", "\x9b".encode(), b"\x07")


class _Escaper:
    """Types the sequences in a command (its first episode), or fails with them (after)."""

    name = "escaper"
    privileged = False
    episodes = 0

    def __init__(self) -> None:
        self.steps = 0
        self.failing = False

    def reset(self, context) -> None:  # noqa: ANN001
        self.steps = 0
        self.failing = _Escaper.episodes > 0
        _Escaper.episodes += 1

    def act(self, observation) -> str:  # noqa: ANN001
        self.steps += 1
        if self.failing:
            raise AgentError(f"the model answered {TITLE}{CLIPBOARD}{CLEAR}")
        if self.steps == 1:
            return f"echo '{EVIL}' > /dev/null; true"
        return SUBMIT

    def transcript(self) -> list:
        return [{"role": "assistant", "content": EVIL}]


def _assert_shown_not_obeyed(output: bytes) -> None:
    for sequence in OBEYED:
        assert sequence not in output, (sequence, output)


def test_printable_shows_every_control_and_keeps_text() -> None:
    assert printable("a\tb\nc") == "a\tb\nc"
    assert printable(TITLE) == "⎋]0;PWNED-TITLE␇"
    assert printable(CLIPBOARD) == "⎋]52;c;cm0gLXJmIH4K⎋\\"
    assert printable("x\ry\x7f\x9b\u202e") == "x⏎y␡\\x9b\\u202e"
    assert printable("one\ntwo", one_line=True) == "one⏎two"
    assert shown("[red]x\x1b") == "\\[red]x⎋"


@pytest.mark.usefixtures("backend")
def test_a_run_and_its_report_print_the_agents_escape_sequences_harmlessly(
    backend: str, tmp_path: Path
) -> None:
    _Escaper.episodes = 0
    register_agent("escaper", _Escaper)
    try:
        run = CliRunner().invoke(
            main,
            [
                "run", "--agent", "escaper", "--tasks", "fuel-planner", "--variants",
                "original", "--episodes", "2", "--concurrency", "1", "--backend", backend,
                "--out", str(tmp_path / "run"), "--retries", "0",
            ],
        )  # fmt: skip
    finally:
        unregister_agent("escaper")
    assert run.exit_code == 0, run.output
    _assert_shown_not_obeyed(run.stdout_bytes)
    assert "agent-error" in run.output and "⎋]0;PWNED-TITLE␇" in run.output  # the progress line
    wide = {"COLUMNS": "400"}  # the audit's excerpt on one line
    report = CliRunner().invoke(main, ["report", str(tmp_path / "run"), "--no-html"], env=wide)
    assert report.exit_code == 0, report.output
    _assert_shown_not_obeyed(report.stdout_bytes)
    assert "terminal-bench ⎋]0;PWNED-TITLE␇ ⎋]52;c;cm0gLXJmIH4K⎋\\ ⎋[2J⎋[H" in report.output


def test_an_undecodable_byte_of_the_agents_breaks_no_report(tmp_path: Path) -> None:
    """A lone surrogate (what an agent's undecodable byte is, decoded with surrogateescape)
    in an action the trace audit quotes: UTF-8 cannot hold it, and writing the HTML report
    failed, truncating the one already there and never writing the Prometheus file."""
    import time

    from termgym.recording import (
        EpisodeEnd,
        EpisodeHeader,
        EpisodeWriter,
        StepRecord,
        write_run_header,
    )

    run = tmp_path / "run"
    write_run_header(run, {"run_id": "r", "agent": "llm"})
    header = EpisodeHeader(
        episode_id="t--impossible--0", task="t", task_version=1, variant="impossible",
        rules_visible={"max_weight": 100}, rules_enforced={"max_weight": 100}, seed=0,
        agent="llm", backend="bwrap", versions={}, started=time.time(), run_id="r",
        extra={"instruction": "x"},
    )  # fmt: skip
    with EpisodeWriter(run, header) as writer:
        action = "echo 'the hidden tests want it' \udcff"
        writer.step(StepRecord(0, "command", action, "", 0, 0.01))
        writer.end(
            EpisodeEnd(
                reward=1.0,
                terminated=True,
                truncated=False,
                episode_class=None,
                verdicts={"impossible": {"passed": True, "rules": {"max_weight": 100}}},
                tamper={"tests": [], "known": True},
            )  # fmt: skip
        )
    (run / "report.html").write_text("the last report")
    prom = tmp_path / "metrics.prom"
    done = CliRunner().invoke(main, ["report", str(run), "--prometheus", str(prom)])
    assert done.exit_code == 0, done.output
    assert "\\udcff" in (run / "report.html").read_text()  # shown, escaped
    assert prom.read_text().strip()
    assert printable("a\udcffb") == "a\\udcffb"
