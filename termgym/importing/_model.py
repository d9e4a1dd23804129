"""What an imported task is, whatever its format: one frozen value the converter writes out."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

Format = Literal["terminal-bench", "harbor"]
FORMATS: dict[str, Format] = {"tb": "terminal-bench", "harbor": "harbor"}
"""The names `termgym import` takes, and the formats they stand for."""


DISK_MB = 4096
"""The disk an imported Terminal-Bench task gets (its task.yaml cannot declare one)."""
HARBOR_DISK_MB = 10240
"""The disk a Harbor task gets when it declares none: Harbor's own default `storage_mb`."""


@dataclass(frozen=True)
class ForeignTask:
    """A Terminal-Bench or Harbor task folder, read and checked, before conversion.

    Attributes:
        format: terminal-bench | harbor.
        root: The task folder.
        original_id: The folder's name (both formats name a task by its folder).
        instruction: Shown verbatim.
        context: The image build context (TB: the task folder; Harbor: environment/).
        dockerfile: The Dockerfile's text (None: Harbor's prebuilt `docker_image` only).
        docker_image: Harbor's prebuilt image, when the task names one.
        test_script: The test script's text (TB run-tests.sh, Harbor tests/test.sh).
        tests: The tests folder (copied to /tests before the script runs), if any.
        solution: The oracle script's text, if any (solution.sh / solution/solve.sh, or
            solution.yaml's keystrokes replayed through tmux).
        solution_name: The file the oracle came from (for overlays and messages).
        agent_timeout, test_timeout, build_timeout: Seconds.
        memory_mb, cpus, network: Limits the task asks for (Harbor's `cpus`; 1 where it
            asks for none, as Harbor's default).
        disk_mb: The disk it asks for (Harbor's `storage_mb`, or the legacy `storage =
            "10G"`, else Harbor's default HARBOR_DISK_MB); DISK_MB for Terminal-Bench's,
            whose task.yaml cannot ask for any.
        same_shell: TB's run_tests_in_same_shell.
        workdir: The compose service's `working_dir`, which wins over the Dockerfile's
            WORKDIR (None: the Dockerfile's).
        env: Variables the compose service sets in the container (`environment:`), plain
            values only: the converted Dockerfile sets them.
        verifier_env: Harbor's [verifier.env].
        author, difficulty, category, tags: Provenance.
        approximate: Why the conversion is not exactly the original's semantics.
    """

    format: Format
    root: Path
    original_id: str
    instruction: str
    context: Path
    dockerfile: str | None
    docker_image: str | None
    test_script: str
    tests: Path | None
    solution: str | None
    solution_name: str
    agent_timeout: float
    test_timeout: float
    build_timeout: float
    memory_mb: int = 2048
    cpus: float = 1.0
    disk_mb: int = DISK_MB
    network: bool = False
    same_shell: bool = False
    workdir: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    verifier_env: dict[str, str] = field(default_factory=dict)
    author: str = ""
    difficulty: str = ""
    category: str = ""
    tags: tuple[str, ...] = ()
    approximate: tuple[str, ...] = ()

    @property
    def task_id(self) -> str:
        """The id normalized to termgym's pattern (the original is kept in provenance)."""
        return normalize_id(self.original_id)


def read_text(path: Path) -> str:
    """A task file's text (instruction, Dockerfile, test script, solution).

    Raises:
        TaskSpecError: it is not UTF-8 text (the byte and where it is).
    """
    from termgym.errors import TaskSpecError

    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        bad = exc.object[exc.start : exc.start + 1].hex()
        raise TaskSpecError(
            f"{path}: expected UTF-8 text, found byte 0x{bad} at offset {exc.start}"
        ) from None


def normalize_id(name: str) -> str:
    """`[a-z0-9][a-z0-9-]*`: lower-cased, other characters runs become '-'."""
    text = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return text or "task"


def parse_memory(value: object, where: str) -> int:
    """Harbor's memory: `memory_mb = 2048`, or the legacy `memory = "2G"` / "512M"."""
    if isinstance(value, bool):
        raise ValueError(f"{where}: expected megabytes or a size like '2G', found {value!r}")
    if isinstance(value, int | float):
        return int(value)
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)i?[bB]?\s*", str(value))
    if not match:
        raise ValueError(f"{where}: expected megabytes or a size like '2G', found {value!r}")
    number, unit = float(match.group(1)), match.group(2).upper()
    scale = {"": 1, "K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}[unit]
    return max(16, int(number * scale))
