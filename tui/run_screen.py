"""The run view: one row per episode, sortable and filterable, updated while the run goes on."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, Static

from .agent_text import printable
from .disclosure_panel import DisclosurePanel
from .help_screen import HelpScreen, describe
from .messages import CompareChosen, EpisodeChosen
from .model import FLAGS, EpisodeRow, RunModel
from .rules_panel import CLASS_STYLE
from .search_bar import SearchBar

COLUMNS = ("episode", "class", "reward", "flags", "variant", "task", "agent", "steps")
"""The run view's columns: what an episode came to first, so that 80 columns show it."""


def duration(seconds: float) -> str:
    """E.g. "1h 02m", "3m 20s", "12s"."""
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    return f"{minutes}m {secs:02d}s" if minutes else f"{secs}s"


class RunScreen(Screen[None]):
    """Every episode of a run; enter opens one."""

    DEFAULT_CSS = """
    RunScreen #title { height: auto; background: $boost; padding: 0 1; }
    RunScreen #skipped { height: auto; color: $warning; padding: 0 1; display: none; }
    RunScreen #skipped.-shown { display: block; }
    RunScreen DataTable { height: 1fr; }
    """
    BINDINGS = [
        Binding("enter", "open", "Open"),
        Binding("s", "sort", "Sort"),
        Binding("r", "reverse", "Reverse", show=False),
        Binding("slash,f", "filter", "Filter"),
        Binding("c", "clear_filter", "Clear filter", show=False),
        Binding("d", "toggle_disclosure", "Disclosure"),
        Binding("m", "mark", "Mark"),
        Binding("C", "compare", "Compare with marked"),
        Binding("question_mark", "help", "Keys"),
    ]

    def __init__(self, model: RunModel) -> None:
        super().__init__()
        self.model = model
        self.sort_column = COLUMNS.index("class")
        self.sort_reverse = False
        self.filter_text = ""
        self.marked: Path | None = None
        self._finished = -1

    def compose(self) -> ComposeResult:
        yield Static(id="title")
        yield DisclosurePanel(id="disclosure")
        yield Static(id="skipped")
        table: DataTable[Text | str] = DataTable(cursor_type="row", zebra_stripes=True)
        yield table
        yield SearchBar(id="filter")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for name in COLUMNS:
            table.add_column(name, key=name)
        self.fill()
        table.focus()
        self.set_interval(1.0, self.poll_live)

    # -- content -----------------------------------------------------------------------------

    def visible_rows(self) -> list[EpisodeRow]:
        """The rows passing the filter, sorted as asked."""
        needle = self.filter_text.lower()
        rows = [
            r
            for r in self.model.rows.values()
            if not needle or any(needle in cell.lower() for cell in r.cells())
        ]

        def key(row: EpisodeRow) -> tuple:
            value = (
                row.episode_id,
                row.episode_class,
                -1.0 if row.reward is None else row.reward,
                (not row.flags, row.flags),  # flagged episodes first
                row.variant,
                row.task,
                row.agent,
                row.steps,
            )[self.sort_column]
            return (value, row.started, row.episode_id)

        return sorted(rows, key=key, reverse=self.sort_reverse)

    def fill(self) -> None:
        """Rebuild the table, keeping the cursor on the same episode."""
        table = self.query_one(DataTable)
        current = self.current_path()
        table.clear()
        for row in self.visible_rows():
            cells: list[Text | str] = list(row.cells())
            cells[1] = Text(row.episode_class, style=CLASS_STYLE.get(row.episode_class, ""))
            cells[3] = Text(row.flags, style="bold red")
            if row.path == self.marked:
                cells[0] = Text("● " + row.episode_id, style="bold magenta")
            table.add_row(*cells, key=str(row.path))
        if current is not None and str(current) in table.rows:
            table.move_cursor(row=table.get_row_index(str(current)))
        self.refresh_title()
        finished = sum(r.episode_class != "running" for r in self.model.rows.values())
        if finished != self._finished:  # the split changes only when an episode ends
            self._finished = finished
            # after this paint: reading the whole run must not hold up the table's first one
            panel = self.query_one(DisclosurePanel)
            self.call_after_refresh(panel.refresh_from, self.model.path)

    def refresh_title(self) -> None:
        rows = list(self.model.rows.values())
        title = Text()
        title.append(f"run {self.model.run_id}", style="bold")
        if self.model.header and isinstance(self.model.header.get("started"), int | float):
            started = datetime.fromtimestamp(self.model.header["started"], tz=UTC)
            when = started.strftime("%Y-%m-%d %H:%M UTC")
            title.append(f"  started {when}")
        planned = self.model.planned
        if planned is not None:
            done = sum(r.episode_class != "running" for r in rows)
            title.append(f"  {done} of {planned} episodes done")
            eta = self.model.eta()
            if eta is not None and done < planned:
                title.append(f", ETA {duration(eta)}", style="bold")
        else:
            title.append(f"  {len(rows)} episodes")
        counts: dict[str, int] = {}
        unverified = [r for r in rows if FLAGS["unverified"] in r.flags.split(", ")]
        for row in rows:
            if row not in unverified:  # what an unverified episode claims counts nowhere
                counts[row.episode_class] = counts.get(row.episode_class, 0) + 1
        for episode_class, n in sorted(counts.items()):
            title.append("  ")
            title.append(f"{episode_class} {n}", style=CLASS_STYLE.get(episode_class, ""))
        if unverified:
            title.append(f"  unverified {len(unverified)}", style="bold yellow")
        flagged = sum(bool(r.flags) for r in rows)
        if flagged:
            title.append(f"  flagged {flagged}", style="bold red")
        if self.marked is not None:
            title.append(f"  marked {printable(self.marked.stem)}", style="bold magenta")
        title.append(f"  sorted by {COLUMNS[self.sort_column]}{' ↓' if self.sort_reverse else ''}")
        if self.filter_text:
            title.append(f"  filter {self.filter_text!r}", style="bold yellow")
        self.query_one("#title", Static).update(title)
        notice = self.query_one("#skipped", Static)
        notice.set_class(bool(self.model.skipped), "-shown")
        notice.update("skipped: " + "; ".join(self.model.skipped))

    def current_path(self) -> Path | None:
        """The episode under the cursor."""
        table = self.query_one(DataTable)
        if not table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key
        return Path(str(key.value))

    def poll_live(self) -> None:
        if self.model.poll():
            self.fill()

    # -- actions -----------------------------------------------------------------------------

    @on(DataTable.RowSelected)
    def row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_open()

    def action_open(self) -> None:
        path = self.current_path()
        if path is not None:
            self.post_message(EpisodeChosen(path))

    def action_sort(self) -> None:
        self.sort_column = (self.sort_column + 1) % len(COLUMNS)
        self.fill()

    def action_reverse(self) -> None:
        self.sort_reverse = not self.sort_reverse
        self.fill()

    def action_filter(self) -> None:
        self.query_one(SearchBar).open("filter episodes: text in any column (enter: apply)")

    @on(Input.Submitted, "#filter")
    def apply_filter(self, event: Input.Submitted) -> None:
        self.filter_text = event.value.strip()
        self.query_one(SearchBar).action_close()
        self.query_one(DataTable).focus()
        self.fill()

    def action_mark(self) -> None:
        """Mark the episode under the cursor (the first of a comparison)."""
        path = self.current_path()
        self.marked = None if path == self.marked else path
        self.fill()

    def action_compare(self) -> None:
        """Compare the marked episode with the one under the cursor."""
        path = self.current_path()
        if self.marked is None or path is None or path == self.marked:
            self.notify("mark an episode with m, then compare another one with C", timeout=3)
            return
        self.post_message(CompareChosen(self.marked, path))

    def action_toggle_disclosure(self) -> None:
        panel = self.query_one(DisclosurePanel)
        panel.display = not panel.display

    def action_clear_filter(self) -> None:
        self.filter_text = ""
        self.fill()

    def action_help(self) -> None:
        moves = ("up,down", "move", "Move between episodes")
        rows = describe([*self.BINDINGS, moves, *self.app.BINDINGS])
        self.app.push_screen(HelpScreen("keys: run view", rows))
