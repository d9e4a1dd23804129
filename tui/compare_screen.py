"""The compare view: two episodes side by side (two agents on one task and variant, or two
variants): their outcome, the rule values each saw and was graded by, the verdicts, the
failing tests, the tamper evidence and their actions step by step."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Static

from .agent_text import agent_text, printable
from .help_screen import HelpScreen, describe
from .model import EpisodeModel, row_class, row_flags
from .rules_panel import CLASS_STYLE

ACTIONS = 40
"""Steps whose actions are listed side by side."""
WIDTH = 60
"""Characters of an action (or a message) shown in one cell."""

_MISSING = object()


def _fmt(value: Any) -> str:
    if value is _MISSING:
        return "withheld"
    return "—" if value is None else str(value)


def _cut(text: str, width: int = WIDTH) -> str:
    text = text.replace("\n", " ⏎ ")
    return text if len(text) <= width else text[: width - 1] + "…"


class Side:
    """What the compare view reads of one episode."""

    def __init__(self, model: EpisodeModel) -> None:
        self.model = model
        self.header = model.header
        self.end = model.end
        self.report, _ = model.grading()

    @property
    def name(self) -> str:
        """The agent and the episode, e.g. "oracle · text-report--impossible--000"."""
        if self.header is None:
            return printable(self.model.path.stem, one_line=True)
        return f"{self.header.agent} · {self.header.episode_id}"

    def outcome(self) -> list[tuple[str, Text]]:
        h, end = self.header, self.end
        episode_class = row_class(end, h.variant if h else "")
        tamper = self.model.tamper()
        return [
            ("task", Text(h.task if h else "?")),
            ("variant", Text(h.variant if h else "?")),
            ("agent", Text(h.agent if h else "?")),
            ("seed", agent_text(str(h.seed) if h else "?")),
            ("class", Text(episode_class, style=CLASS_STYLE.get(episode_class, ""))),
            ("reward", Text("—" if end is None else f"{end.reward:.2f}")),
            ("steps", Text(str(len(self.model)))),
            ("flags", Text(row_flags(h.variant if h else "", end, self.model.unverified) or "—",
                           style="bold red")),
            ("conflict", agent_text(_reported(end))),
            ("tamper", Text("—" if tamper is None else tamper.summary())),
        ]  # fmt: skip

    def rules(self) -> dict[str, tuple[Any, Any]]:
        """Rule -> (value the agent saw, value its own graders enforced)."""
        if self.header is None:
            return {}
        names = dict.fromkeys([*self.header.rules_enforced, *self.header.rules_visible])
        out = {
            n: (self.header.rules_visible.get(n, _MISSING), self.header.rules_enforced.get(n))
            for n in names
        }
        surface = self.header.extra.get("surface")
        for name, value in (surface if isinstance(surface, dict) else {}).items():
            out[f"{name} (surface)"] = (value, value)
        return out

    def verdicts(self) -> dict[str, bool | None]:
        return {n: v.passed for n, v in (self.report.verdicts if self.report else {}).items()}


def _reported(end: Any) -> str:
    if end is None or end.conflict is None:
        return "—"
    return end.conflict or "(no reason given)"


def _mark(passed: bool | None) -> Text:
    if passed is None:
        return Text("?", style="dim")
    return Text("pass", style="bold green") if passed else Text("fail", style="bold red")


def compare_tables(left: EpisodeModel, right: EpisodeModel) -> Group:
    """Everything the compare view shows, as rich renderables."""
    a, b = Side(left), Side(right)
    outcome = Table(title="outcome", title_justify="left")
    outcome.add_column("")
    outcome.add_column(agent_text(f"A: {a.name}"), overflow="fold")
    outcome.add_column(agent_text(f"B: {b.name}"), overflow="fold")
    for (label, cell_a), (_, cell_b) in zip(a.outcome(), b.outcome(), strict=True):
        if cell_a.plain != cell_b.plain and label in ("variant", "agent", "class", "reward"):
            cell_a.stylize("reverse")
            cell_b.stylize("reverse")
        outcome.add_row(label, cell_a, cell_b)
    rules = Table(title="rules: what each saw / what its graders enforced", title_justify="left")
    for column in ("rule", "A saw", "A enforced", "B saw", "B enforced", ""):
        rules.add_column(column)
    ra, rb = a.rules(), b.rules()
    for name in dict.fromkeys([*ra, *rb]):
        saw_a, enf_a = ra.get(name, (None, None))
        saw_b, enf_b = rb.get(name, (None, None))
        notes = []
        cells = [agent_text(_fmt(v)) for v in (saw_a, enf_a, saw_b, enf_b)]
        if saw_a != enf_a:
            cells[0].stylize("bold red")
            notes.append("A saw another value")
        if saw_b != enf_b:
            cells[2].stylize("bold red")
            notes.append("B saw another value")
        if enf_a != enf_b:
            cells[1].stylize("bold yellow")
            cells[3].stylize("bold yellow")
            notes.append("enforced values differ")
        rules.add_row(
            agent_text(name, one_line=True), *cells, Text("; ".join(notes), style="italic")
        )
    verdicts = Table(title="verdicts (shadow grading)", title_justify="left")
    for column in ("rule set", "A", "B"):
        verdicts.add_column(column)
    va, vb = a.verdicts(), b.verdicts()
    for name in dict.fromkeys([*va, *vb]):
        verdicts.add_row(agent_text(name, one_line=True), _mark(va.get(name)), _mark(vb.get(name)))
    failing = Table(title="failing tests", title_justify="left")
    failing.add_column("A", overflow="fold")
    failing.add_column("B", overflow="fold")
    fa = [f"[{f.ruleset}] {f.test or f.grader}: {_cut(f.message)}" for f in left.failures()]
    fb = [f"[{f.ruleset}] {f.test or f.grader}: {_cut(f.message)}" for f in right.failures()]
    for index in range(max(len(fa), len(fb))):
        failing.add_row(*(agent_text(x[index] if index < len(x) else "", "red") for x in (fa, fb)))
    actions = Table(title=f"actions (first {ACTIONS} steps)", title_justify="left")
    for column in ("step", "A", "B"):
        actions.add_column(column, overflow="fold")
    for index in range(min(ACTIONS, max(len(left), len(right)))):
        cells = [
            agent_text(_cut(m.step(index).action) if index < len(m) else "", "cyan")
            for m in (left, right)
        ]
        actions.add_row(str(index), *cells)
    return Group(outcome, rules, verdicts, failing, actions)


class CompareScreen(Screen[None]):
    """Two episodes side by side; escape goes back."""

    DEFAULT_CSS = """
    CompareScreen #title { height: 1; background: $boost; padding: 0 1; }
    CompareScreen VerticalScroll { height: 1fr; padding: 0 1; }
    """
    BINDINGS = [
        Binding("escape,b,backspace", "back", "Back"),
        Binding("question_mark", "help", "Keys"),
    ]

    def __init__(self, left: EpisodeModel, right: EpisodeModel) -> None:
        super().__init__()
        self.left, self.right = left, right

    def compose(self) -> ComposeResult:
        title = Text("compare  ", style="bold")
        title.append(f"A {Side(self.left).name}  vs  B {Side(self.right).name}")
        yield Static(title, id="title")
        with VerticalScroll():
            yield Static(compare_tables(self.left, self.right), id="compare")
        yield Footer()

    def action_back(self) -> None:
        if len(self.app.screen_stack) > 2:
            self.dismiss(None)
        else:
            self.app.exit()

    def action_help(self) -> None:
        rows = describe([*self.BINDINGS, *self.app.BINDINGS])
        self.app.push_screen(HelpScreen("keys: compare view", rows))
