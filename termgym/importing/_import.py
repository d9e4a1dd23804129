"""`termgym import`: read every task folder given (or found one level down), convert the
ones that can run here, and say why each other one was refused."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from termgym.errors import ImportRefused, TaskError
from termgym.importing._bundled import overlay_folder
from termgym.importing._convert import Converted, convert
from termgym.importing._harbor import is_harbor, read_harbor
from termgym.importing._links import refuse_outside_links
from termgym.importing._model import ForeignTask, Format, normalize_id
from termgym.importing._source import resolve_source
from termgym.importing._tb import is_tb, read_tb
from termgym.overlay import OVERLAY_FILE


def detect(folder: Path) -> Format | None:
    """The format of a task folder, or None when it is neither."""
    if is_harbor(folder):
        return "harbor"
    if is_tb(folder):
        return "terminal-bench"
    return None


def read_foreign(folder: Path, fmt: Format | None = None) -> ForeignTask:
    """Read a Terminal-Bench or Harbor task folder.

    Raises:
        TaskError: it is not a task of that format (ImportRefused: it cannot run here, or
            a link in it leads out of it; TaskSpecError: its files are malformed).
    """
    found = detect(folder)
    fmt = fmt or found
    if fmt is None or found != fmt:
        expected = {
            "terminal-bench": "task.yaml and run-tests.sh",
            "harbor": "task.toml and instruction.md",
            None: "a Terminal-Bench (task.yaml, run-tests.sh) or Harbor (task.toml, "
            "instruction.md) task",
        }[fmt]
        present = [n for n in _MARKERS if (folder / n).is_file()]
        what = found or (f"only {', '.join(present)}" if present else "neither")
        raise TaskError(f"{folder}: expected {expected}, found {what}")
    refuse_outside_links(folder)  # before any file of it is read
    return read_harbor(folder) if fmt == "harbor" else read_tb(folder)


_MARKERS = ("task.toml", "instruction.md", "task.yaml", "run-tests.sh")
"""Files of a Terminal-Bench or Harbor task (a termgym task has a task.yaml too)."""


def _partial(folder: Path) -> bool:
    """Whether `folder` holds part of a foreign task (a Harbor or Terminal-Bench file
    without the rest): it is read, so that its refusal says what it lacks."""
    return any((folder / name).is_file() for name in _MARKERS if name != "task.yaml")


def task_folders(
    sources: Sequence[Path], fmt: Format | None, passed_over: list[tuple[Path, str]] | None = None
) -> list[Path]:
    """Each source that is a task folder, else its children that are; a folder holding part
    of a task (task.toml without instruction.md ...) is one too, so that reading it says what
    it lacks instead of leaving it out unsaid. Every other child folder goes in
    `passed_over`, with why it is no task."""
    out: list[Path] = []
    for source in sources:
        if not source.is_dir():
            raise TaskError(
                f"expected a task folder or a folder of tasks at {source}, found "
                f"{'a file' if source.exists() else 'nothing'}"
            )
        if detect(source) or _partial(source):
            out.append(source)
            continue
        children: list[Path] = []
        others: list[Path] = []
        for child in sorted(source.iterdir()):
            if child.is_dir():
                (children if detect(child) or _partial(child) else others).append(child)
        if not children:
            what = {
                "terminal-bench": "Terminal-Bench task (task.yaml, run-tests.sh)",
                "harbor": "Harbor task (task.toml, instruction.md)",
                None: "Terminal-Bench (task.yaml, run-tests.sh) or Harbor (task.toml, "
                "instruction.md) task",
            }[fmt]
            raise TaskError(
                f"expected {source} to be a {what} or to hold such task folders, found none"
            )
        out.extend(children)
        if passed_over is not None:
            passed_over.extend((other, _no_task(other)) for other in others)
    return out


def _no_task(folder: Path) -> str:
    """Why a folder beside the tasks is none."""
    if (folder / "task.yaml").is_file():
        return (
            "task.yaml without run-tests.sh: no Terminal-Bench task (a termgym task is run "
            "from its folder, not imported)"
        )
    if folder.name.startswith("."):
        return "a hidden folder, with no task files"
    return "holds none of " + ", ".join(_MARKERS)


@dataclass
class ImportReport:
    """What an import did: converted tasks, refused ones with the reason, overlays of the
    overlay folder that matched no task, tasks left out for having no overlay, and the
    folders beside the tasks that are none (with why)."""

    converted: list[Converted] = field(default_factory=list)
    refused: list[tuple[Path, str]] = field(default_factory=list)
    unused_overlays: list[Path] = field(default_factory=list)
    skipped: list[Path] = field(default_factory=list)
    passed_over: list[tuple[Path, str]] = field(default_factory=list)


def _overlay_for(overlays: Path | None, folder: Path) -> Path | None:
    """The overlay kept apart from a task: `<overlays>/<folder name>.yaml`, or under the
    task's normalized id."""
    if overlays is None:
        return None
    for name in dict.fromkeys((folder.name, normalize_id(folder.name))):
        path = overlays / f"{name}.yaml"
        if path.is_file():
            return path
    return None


def import_tasks(
    sources: Sequence[Path | str],
    out: Path,
    fmt: Format | None = None,
    *,
    registry: bool = False,
    ca: Path | None = None,
    overlays: Path | str | None = None,
    overlaid_only: bool = False,
) -> ImportReport:
    """Convert every task found in `sources` into `out` (ids made unique with -2, -3 ...).

    A source is a task folder, a folder of them, or a git source (`git+URL@COMMIT
    [#subdirectory=DIR]`, cloned into the cache and checked by hash: `resolve_source`).
    `overlays`: a folder of overlays kept apart from the tasks, `<task folder name>.yaml`
    each, used in place of an overlay.yaml beside the task (so a collection is perturbed
    without writing into it), or the name of a bundled collection (`tb2`).
    `overlaid_only`: leave out (as `skipped`) the tasks that get no overlay.

    Raises:
        TaskError: a source holds no task or cannot be fetched, or `overlays` names no
            folder of overlays.
    """
    folder_of_overlays = overlay_folder(overlays) if overlays is not None else None
    out.mkdir(parents=True, exist_ok=True)
    report = ImportReport()
    taken: set[str] = set()
    used: set[Path] = set()
    for folder in task_folders([resolve_source(s) for s in sources], fmt, report.passed_over):
        overlay = _overlay_for(folder_of_overlays, folder)
        if overlaid_only and overlay is None and not (folder / OVERLAY_FILE).is_file():
            report.skipped.append(folder)
            continue
        try:
            task = read_foreign(folder, fmt)
            if task.task_id in taken:
                number = 2
                while f"{task.task_id}-{number}" in taken:
                    number += 1
                task = dataclasses.replace(task, original_id=f"{task.original_id}-{number}")
            done = convert(task, out, registry=registry, ca=ca, overlay=overlay)
        except (ImportRefused, TaskError) as exc:
            report.refused.append((folder, str(exc)))
            continue
        finally:
            if overlay is not None:
                used.add(overlay)
        taken.add(done.task_id)
        report.converted.append(done)
    if folder_of_overlays is not None:
        report.unused_overlays = sorted(set(folder_of_overlays.glob("*.yaml")) - used)
    return report
