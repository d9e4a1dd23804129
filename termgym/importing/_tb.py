"""Read a Terminal-Bench task folder: task.yaml, Dockerfile, docker-compose.yaml,
run-tests.sh, tests/, solution.sh or solution.yaml."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pydantic
import yaml
from pydantic import BaseModel, ConfigDict

from termgym.errors import ImportRefused
from termgym.importing._compose import check_compose
from termgym.importing._model import ForeignTask, read_text
from termgym.importing._solution import keystroke_oracle

TB_FILES = ("task.yaml", "run-tests.sh")
"""A folder holding both is a Terminal-Bench task."""


class TBDescription(BaseModel):
    model_config = ConfigDict(extra="allow")
    key: str = "base"
    description: str


class TBTask(BaseModel):
    """Terminal-Bench's task.yaml; keys it does not know are kept out (as its harness does)."""

    model_config = ConfigDict(extra="allow")

    instruction: str | None = None
    descriptions: list[TBDescription] | None = None
    author_name: str | None = ""
    author_email: str | None = ""
    difficulty: str | None = ""
    category: str | None = ""
    tags: list[str] | None = None
    parser_name: str | None = "pytest"
    max_agent_timeout_sec: float = 360.0
    max_test_timeout_sec: float = 60.0
    run_tests_in_same_shell: bool = False
    test_scripts: list[str] | None = None


def is_tb(folder: Path) -> bool:
    """Whether `folder` holds a Terminal-Bench task (and not a termgym one)."""
    if not all((folder / name).is_file() for name in TB_FILES):
        return False
    try:
        data = yaml.safe_load((folder / "task.yaml").read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError, OSError):
        return True  # read_tb says what is wrong
    return not (isinstance(data, dict) and "graders" in data and "id" in data)


def read_tb(folder: Path) -> ForeignTask:
    """Read and check a Terminal-Bench task folder.

    Raises:
        ImportRefused: the task cannot run here (the reason is in the message).
        TaskSpecError: task.yaml is malformed.
    """
    from termgym.errors import TaskSpecError

    source = folder / "task.yaml"
    try:
        data: Any = yaml.safe_load(source.read_text(encoding="utf-8"))
        spec = TBTask.model_validate(data if isinstance(data, dict) else {})
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise TaskSpecError(
            f"{source}: expected Terminal-Bench's task.yaml, found: {exc}"
        ) from None
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise TaskSpecError(f"{source}: field '{loc}': {first['msg']}") from None
    instruction = spec.instruction
    if instruction is None and spec.descriptions:
        chosen = [d for d in spec.descriptions if d.key == "base"] or spec.descriptions
        instruction = chosen[0].description
    if not instruction or not instruction.strip():
        raise TaskSpecError(f"{source}: field 'instruction': expected the task's text, found none")
    if (spec.parser_name or "pytest") != "pytest":
        raise ImportRefused(
            f"{folder.name}: parser {spec.parser_name!r}: termgym reads Terminal-Bench verdicts "
            "with its pytest parser only"
        )
    compose = check_compose(folder / "docker-compose.yaml", folder.name)
    if not (folder / "Dockerfile").is_file():
        raise ImportRefused(f"{folder.name}: expected a Dockerfile beside task.yaml, found none")
    approximate: list[str] = list(compose.notes)
    solution, solution_name = None, ""
    if (folder / "solution.sh").is_file():
        solution, solution_name = (
            read_text(folder / "solution.sh"),
            "solution.sh",
        )
    elif (folder / "solution.yaml").is_file():
        solution = keystroke_oracle(folder / "solution.yaml")
        solution_name = "solution.yaml"
    if spec.run_tests_in_same_shell:
        approximate.append(
            "run_tests_in_same_shell: the tests run in a fresh shell of the clean verifier, "
            "not in the agent's terminal session: what the agent left only in its shell "
            "(variables, an activated virtualenv, background jobs) is not seen"
        )
    tests = folder / "tests"
    return ForeignTask(
        format="terminal-bench",
        root=folder,
        original_id=folder.name,
        instruction=instruction,
        context=folder,
        dockerfile=read_text(folder / "Dockerfile"),
        docker_image=None,
        test_script=read_text(folder / "run-tests.sh"),
        tests=tests if tests.is_dir() else None,
        solution=solution,
        solution_name=solution_name,
        agent_timeout=spec.max_agent_timeout_sec,
        test_timeout=spec.max_test_timeout_sec,
        build_timeout=600.0,
        network=True,
        same_shell=spec.run_tests_in_same_shell,
        workdir=compose.working_dir,
        env=compose.env,
        author=" ".join(x for x in (spec.author_name, spec.author_email) if x and x != "unknown"),
        difficulty=spec.difficulty or "",
        category=spec.category or "",
        tags=tuple(spec.tags or ()),
        approximate=tuple(approximate),
    )
