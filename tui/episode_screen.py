"""The episode view: the steps, the screen after the selected one, its output, the rules
(with the failing tests and the tamper evidence), and the model's transcript."""

from __future__ import annotations

import bisect
import time

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import ContentSwitcher, Footer, Input, Static

from .agent_text import printable
from .audit_panel import AuditPanel
from .help_screen import HelpScreen, describe
from .messages import ScreenReady, StepHighlighted
from .metronome import Metronome, TimerMetronome
from .model import EpisodeModel, row_class
from .output_view import OutputView
from .rules_panel import CLASS_STYLE, RulesPanel
from .search_bar import SearchBar
from .step_detail import StepDetail
from .step_list import StepList
from .terminal_view import TerminalView
from .transcript_panel import TranscriptPanel

SPEEDS = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
"""Playback speeds, in steps per second."""


class EpisodeScreen(Screen[None]):
    """Replays one episode step by step; follows it live while it is being written."""

    DEFAULT_CSS = """
    EpisodeScreen #title { height: 1; background: $boost; padding: 0 1; }
    EpisodeScreen #skipped { height: auto; max-height: 5; color: $warning; padding: 0 1;
                             display: none; }
    EpisodeScreen #skipped.-shown { display: block; }
    EpisodeScreen #left { width: 1fr; min-width: 30; }
    EpisodeScreen #right { width: auto; }
    EpisodeScreen ContentSwitcher { width: auto; height: 1fr; }
    EpisodeScreen #rules, EpisodeScreen #transcript {
        height: 1fr; border: round $primary 50%;
    }
    EpisodeScreen #rules:focus-within, EpisodeScreen #transcript:focus-within {
        border: round $accent;
    }
    """
    LEFT_MIN = 30
    """Columns the step list keeps when the terminal is narrower than the agent's."""
    BINDINGS = [
        Binding("j", "step(1)", "Next"),
        Binding("k", "step(-1)", "Prev"),
        Binding("g", "jump(0)", "First", show=False),
        Binding("G", "jump(-1)", "Last", show=False),
        Binding("space", "play", "Play/pause"),
        Binding("plus,equals_sign", "speed(1)", "Faster", show=False),
        Binding("minus", "speed(-1)", "Slower", show=False),
        Binding("slash", "search", "Search"),
        Binding("n", "match(1)", "Next match", show=False),
        Binding("N", "match(-1)", "Previous match", show=False),
        Binding("1", "pane('screen')", "Screen"),
        Binding("2", "pane('output')", "Output"),
        Binding("3", "pane('rules')", "Rules"),
        Binding("4", "pane('transcript')", "Transcript"),
        Binding("escape,b,backspace", "back", "Back"),
        Binding("question_mark", "help", "Keys"),
    ]
    HELP_EXTRA = [
        ("down", "Next step (in the list)"),
        ("up", "Previous step (in the list)"),
        ("home", "First step (in the list)"),
        ("end", "Last step (in the list)"),
        ("pagedown", "Page down (in the list)"),
        ("pageup", "Page up (in the list)"),
    ]

    def __init__(
        self, model: EpisodeModel, can_go_back: bool = True, metronome: Metronome | None = None
    ) -> None:
        super().__init__()
        self.model = model
        self.can_go_back = can_go_back
        self.metronome: Metronome = metronome or TimerMetronome(self)
        self.speed_index = 1
        self.playing = False
        self.search_term = ""
        self.search_hits: list[int] = []
        self._was_at_end = True

    # -- layout ------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="title")
        yield Static(id="skipped")
        with Horizontal():
            with Vertical(id="left"):
                yield StepList(self.model, id="steps")
                yield StepDetail(id="detail")
            with Vertical(id="right"), ContentSwitcher(initial="screen"):
                yield TerminalView(id="screen")
                yield OutputView(id="output")
                with VerticalScroll(id="rules") as rules:
                    rules.border_title = "rules"
                    yield RulesPanel(id="rules-panel")
                    yield AuditPanel(id="audit-panel")
                with VerticalScroll(id="transcript") as transcript:
                    transcript.border_title = "transcript"
                    yield TranscriptPanel(id="transcript-panel")
        yield SearchBar(id="search")
        yield Footer()

    def on_mount(self) -> None:
        self.fit_panes()
        self.query_one(StepList).focus()
        self.refresh_header()
        self.set_interval(0.5, self.poll_live)
        if len(self.model):
            self.query_one(StepList).move_cursor(len(self.model) - 1)
        else:
            self.query_one(TerminalView).show_plain("", "no steps yet")

    def on_resize(self) -> None:
        self.fit_panes()

    def fit_panes(self) -> None:
        """The right-hand panes as wide as the agent's terminal (its border included), or as
        wide as the terminal allows beside a step list of `LEFT_MIN` columns."""
        cols = self.model.header.cols if self.model.header else 120
        width = min(cols + 2, max(40, self.size.width - self.LEFT_MIN))
        for pane in ("#screen", "#output", "#rules", "#transcript"):
            self.query_one(pane).styles.width = width

    def refresh_header(self) -> None:
        """Redraw the title line, the skipped notes and the rules pane."""
        header, end = self.model.header, self.model.end
        title = Text()
        name = header.episode_id if header else printable(self.model.path.stem, one_line=True)
        title.append(name, style="bold")
        episode_class = row_class(end, header.variant if header else "")
        title.append("  ")
        title.append(episode_class, style=CLASS_STYLE.get(episode_class, ""))
        if end is not None:
            title.append(f"  reward {end.reward:.2f}")
        if self.model.unverified is not None:  # what it claims, no run here graded
            title.append(f"  unverified: {self.model.unverified}", style="bold yellow")
        title.append(f"  {len(self.model)} steps")
        if header:
            title.append(f"  {header.task} · {header.variant} · {header.agent}")
        if self.playing:
            title.append(f"  ▶ {SPEEDS[self.speed_index]:g} steps/s", style="bold green")
        elif self.model.live:
            title.append("  ● live", style="bold red")
        self.query_one("#title", Static).update(title)
        skipped = self.model.skipped
        notice = self.query_one("#skipped", Static)
        notice.set_class(bool(skipped), "-shown")
        if skipped:
            notice.update("skipped while reading: " + "; ".join(skipped))
        report, unreadable = self.model.grading()
        self.query_one(RulesPanel).show(
            header, end, report, unreadable, self.model.failures(), self.model.tamper(),
            self.model.explanation() if end is not None else None,
        )  # fmt: skip
        self.query_one(AuditPanel).show(self.model.audit_by_step())
        if not len(self.model):
            self.query_one(TranscriptPanel).show(self.model.transcript())

    # -- showing a step ----------------------------------------------------------------------

    @on(StepHighlighted)
    def show_step(self, message: StepHighlighted) -> None:
        position = message.position
        if not len(self.model):
            return
        step = self.model.step(position)
        own = step.source == "termgym"  # not a step the agent's log reported
        hits = self.model.audit_by_step().get(step.index, []) if own else []
        said = self.model.said_at(step.index) if own else []
        self.query_one(StepDetail).show(step, position, len(self.model), hits, said)
        if self.query_one(ContentSwitcher).current == "transcript":
            self.query_one(TranscriptPanel).show(self.model.transcript(), step.at_step)
        self.query_one(OutputView).show(step.output, self.search_term)
        self.query_one(TerminalView).show_plain(step.screen, "replaying…")
        self._was_at_end = position == len(self.model) - 1
        # Replay once this step is painted, so opening a huge episode shows it at once.
        self.call_after_refresh(self.replay_screen, position)

    @work(thread=True, exclusive=True, group="screen")
    def replay_screen(self, position: int) -> None:
        try:
            screen = self.model.screen_after(position)
        except Exception as exc:  # a damaged cast must not take the app down
            self.post_message(ScreenReady(position, None, f"replay failed: {exc}"))
            return
        if screen is not None:
            self.post_message(ScreenReady(position, screen.styled_lines()))
        else:
            self.post_message(ScreenReady(position, None, "no cast: recorded text only"))

    @on(ScreenReady)
    def screen_ready(self, message: ScreenReady) -> None:
        if message.position != self.query_one(StepList).cursor:
            return
        view = self.query_one(TerminalView)
        if message.lines is None:
            view.show_plain(self.model.step(message.position).screen, message.note)
        else:
            view.show_styled(message.lines)

    # -- live --------------------------------------------------------------------------------

    def poll_live(self) -> None:
        if not self.model.live:
            return
        new = self.model.poll()
        steps = self.query_one(StepList)
        if new:
            steps.reload_lines()
            if self._was_at_end and not self.playing:
                steps.move_cursor(len(self.model) - 1)
        if new or not self.model.live:
            self.refresh_header()

    # -- actions -----------------------------------------------------------------------------

    def action_step(self, delta: int) -> None:
        steps = self.query_one(StepList)
        steps.move_cursor(steps.cursor + delta)

    def action_jump(self, where: int) -> None:
        self.query_one(StepList).move_cursor(where if where >= 0 else len(self.model) - 1)

    def action_play(self) -> None:
        self.playing = not self.playing
        steps = self.query_one(StepList)
        if self.playing and steps.cursor >= len(self.model) - 1:
            steps.move_cursor(0)
        self._restart_player()
        self.refresh_header()

    def _restart_player(self) -> None:
        # A fresh beat each time: a resumed one would fire the ticks it missed while paused.
        self.metronome.stop()
        if self.playing:
            self.metronome.start(1 / SPEEDS[self.speed_index], self.advance)

    def advance(self) -> None:
        steps = self.query_one(StepList)
        if steps.cursor >= len(self.model) - 1:
            if not self.model.live:
                self.playing = False
                self._restart_player()
                self.refresh_header()
            return
        steps.move_cursor(steps.cursor + 1)

    def action_speed(self, delta: int) -> None:
        self.speed_index = max(0, min(len(SPEEDS) - 1, self.speed_index + delta))
        self._restart_player()
        self.refresh_header()
        self.notify(f"speed {SPEEDS[self.speed_index]:g} steps/s", timeout=1.5)

    def action_search(self) -> None:
        self.query_one(SearchBar).open("search actions and output (enter: find, esc: close)")

    @on(Input.Submitted, "#search")
    def run_search(self, event: Input.Submitted) -> None:
        term = event.value.strip()
        self.query_one(SearchBar).action_close()
        self.search_term = term
        started = time.perf_counter()
        self.search_hits = [
            i for i in range(len(self.model)) if term and self.model.matches(i, term)
        ]
        steps = self.query_one(StepList)
        steps.matches = set(self.search_hits)
        steps.reload_lines()
        took = time.perf_counter() - started
        if not self.search_hits:
            self.notify(f"no step matches {term!r}", severity="warning")
            return
        self.notify(f"{len(self.search_hits)} steps match {term!r} ({took * 1000:.0f} ms)")
        self.action_match(1, include_current=True)

    def action_match(self, direction: int, include_current: bool = False) -> None:
        if not self.search_hits:
            return
        steps = self.query_one(StepList)
        here = steps.cursor
        if direction > 0:
            i = bisect.bisect_left(self.search_hits, here if include_current else here + 1)
            target = self.search_hits[i % len(self.search_hits)]
        else:
            i = bisect.bisect_left(self.search_hits, here) - 1
            target = self.search_hits[i]
        steps.move_cursor(target)

    def action_pane(self, name: str) -> None:
        self.query_one(ContentSwitcher).current = name
        if name == "transcript" and len(self.model):
            step = self.model.step(self.query_one(StepList).cursor)
            self.query_one(TranscriptPanel).show(self.model.transcript(), step.at_step)

    def action_back(self) -> None:
        if self.query_one(SearchBar).has_class("-shown"):
            self.query_one(SearchBar).action_close()
            return
        self.playing = False
        self.metronome.stop()
        if len(self.app.screen_stack) > 2:  # the run view is below
            self.dismiss(None)
        elif self.can_go_back and hasattr(self.app, "pop_to_run"):
            self.app.pop_to_run()
        else:
            self.app.exit()

    def action_help(self) -> None:
        rows = describe([*self.BINDINGS, *self.HELP_EXTRA, *self.app.BINDINGS])
        self.app.push_screen(HelpScreen("keys: episode view", rows))
