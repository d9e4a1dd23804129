"""The termgym TUI: replay episodes step by step and watch runs live (`termgym tui`)."""

from __future__ import annotations

from pathlib import Path

from textual import on
from textual.app import App
from textual.binding import Binding

from termgym.errors import RecordingError
from termgym.recording import latest_run

from .episode_screen import EpisodeScreen
from .messages import EpisodeChosen
from .metronome import Metronome
from .model import EpisodeModel, RunModel
from .run_screen import RunScreen


def resolve_target(target: Path | None, runs_root: Path = Path("runs")) -> Path:
    """The run folder or episode file to open: `target`, else the latest run under `runs_root`.

    Raises:
        RecordingError: Nothing to open.
    """
    if target is None:
        found = latest_run(runs_root)
        if found is None:
            raise RecordingError(f"expected a run folder under {runs_root}/; found none")
        return found
    if not target.exists():
        raise RecordingError(f"expected a run folder or an episode file at {target}; found nothing")
    if target.is_file() and target.suffix not in (".jsonl", ".cast"):
        raise RecordingError(f"expected a .jsonl (or .cast) episode file; found {target.name}")
    return target


class TermgymApp(App[None]):
    """Opens a run folder (run view first) or a single episode file (episode view)."""

    TITLE = "termgym"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("ctrl+c", "quit", "Quit", show=False),
    ]

    def __init__(self, target: Path, metronome: Metronome | None = None) -> None:
        """Open `target`; `metronome` paces playback (a Textual timer per episode view when
        None; a test passes one it beats by hand)."""
        super().__init__()
        self.target = Path(target)
        self.metronome = metronome
        self.run_model: RunModel | None = None

    def on_mount(self) -> None:
        if self.target.is_dir():
            self.run_model = RunModel(self.target)
            self.push_screen(RunScreen(self.run_model))
        else:
            path = self.target.with_suffix(".jsonl")
            model = EpisodeModel(path)
            self.push_screen(EpisodeScreen(model, self._run_of(path), self.metronome))

    def _run_of(self, episode: Path) -> bool:
        """Whether an episode file sits in a run folder the back key can open."""
        return episode.parent.name == "episodes" and episode.parent.parent.is_dir()

    @on(EpisodeChosen)
    def open_episode(self, message: EpisodeChosen) -> None:
        self.push_screen(EpisodeScreen(EpisodeModel(message.path), metronome=self.metronome))

    def pop_to_run(self) -> None:
        """From an episode opened alone, open its run view."""
        run = RunModel(self.target.parent.parent)
        self.run_model = run
        self.switch_screen(RunScreen(run))
