"""The run view's disclosure line: per agent, pass rates where it disclosed hidden rules or not.

Its intervals are the report's: the run is loaded as `termgym report` loads it, with the one
bootstrap they share (`termgym._vocabulary.BOOTSTRAP`), in a worker thread so that the run
view paints first.
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import on, work
from textual.widgets import Static

from termgym.analysis.metrics import Estimate

from .agent_text import agent_text
from .messages import DisclosureReady


def _rate(e: Estimate) -> str:
    return "n/a" if e.value is None else e.format()


def _diff(e: Estimate) -> str:
    if e.value is None:
        return "n/a"
    bounds = (
        "" if e.low is None or e.high is None else f" [{e.low * 100:+.1f}, {e.high * 100:+.1f}]"
    )
    return f"{e.value * 100:+.1f} pts{bounds}"


def disclosure_text(run_dir: Path) -> Text:
    """One line per agent: disclosed vs not, over episodes and over tasks, and probe modes."""
    from termgym.errors import RecordingError
    from termgym.report import load_run

    try:
        run = load_run(run_dir)  # the report's bootstrap: the same intervals as its tables
    except RecordingError as exc:
        return agent_text(f"disclosure: {exc}", "dim")
    text = Text()
    for number, (agent, split) in enumerate(run.disclosure.items()):
        if number:
            text.append("\n")
        text.append("disclosed ", style="bold")
        text.append(agent_text(f"{agent or '(unnamed)'}: ", one_line=True))
        for unit, d, u, diff in split.rows():
            text.append(f"{unit} ")
            text.append(f"{_rate(d)} n={d.n}", style="yellow")
            text.append(" vs not ")
            text.append(f"{_rate(u)} n={u.n}")
            text.append(f" ({_diff(diff)})  ", style="bold" if diff.value else "")
        modes = ", ".join(f"{m} {h}/{t}" for m, (h, t) in split.by_mode.items())
        if modes:
            text.append(agent_text(f"probe disclosures: {modes}", "dim", one_line=True))
    if run.unverified:  # what it claims is in no figure: said here, as in the report
        text.append("\n" if text.plain else "")
        text.append(f"{len(run.unverified)} unverified episodes: counted in no rate", "yellow")
    return text


class DisclosurePanel(Static):
    """Shows `disclosure_text` of the run; `refresh_from` recomputes it."""

    DEFAULT_CSS = """
    DisclosurePanel { height: auto; padding: 0 1; color: $text-muted; }
    """

    def on_mount(self) -> None:
        self.update(Text("disclosure: reading the run…", style="dim italic"))

    def refresh_from(self, run_dir: Path) -> None:
        """Recompute the text in a thread (the latest call wins); show it when done."""
        self._compute(run_dir)

    @work(thread=True, exclusive=True, group="disclosure")
    def _compute(self, run_dir: Path) -> None:
        self.post_message(DisclosureReady(disclosure_text(run_dir)))

    @on(DisclosureReady)
    def _show(self, message: DisclosureReady) -> None:
        self.update(message.text)
