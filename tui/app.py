"""The termgym TUI: replay episodes step by step and watch runs live (`termgym tui`)."""

from __future__ import annotations

from pathlib import Path

from textual import on
from textual.app import App
from textual.binding import Binding

from termgym.errors import RecordingError
from termgym.recording import latest_run

from .compare_screen import CompareScreen
from .episode_screen import EpisodeScreen
from .messages import CompareChosen, EpisodeChosen
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
    """Opens a run folder (run view first), a single episode file (episode view), or two
    episode files (compare view)."""

    TITLE = "termgym"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("ctrl+c", "quit", "Quit", show=False),
    ]

    def __init__(
        self, target: Path, other: Path | None = None, metronome: Metronome | None = None
    ) -> None:
        """Open `target` (and `other`, to compare two episodes); `metronome` paces playback
        (a Textual timer per episode view when None; a test passes one it beats by hand)."""
        super().__init__()
        self.target = Path(target)
        self.other = Path(other) if other is not None else None
        self.metronome = metronome
        self.run_model: RunModel | None = None

    def on_mount(self) -> None:
        if self.other is not None:
            left = EpisodeModel(self.target.with_suffix(".jsonl"))
            self.push_screen(CompareScreen(left, EpisodeModel(self.other.with_suffix(".jsonl"))))
        elif self.target.is_dir():
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

    @on(CompareChosen)
    def open_comparison(self, message: CompareChosen) -> None:
        self.push_screen(CompareScreen(EpisodeModel(message.left), EpisodeModel(message.right)))

    def pop_to_run(self) -> None:
        """From an episode opened alone, open its run view."""
        run = RunModel(self.target.parent.parent)
        self.run_model = run
        self.switch_screen(RunScreen(run))
