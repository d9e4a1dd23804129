"""Read a Harbor task folder: task.toml, instruction.md, environment/, tests/test.sh,
solution/solve.sh. Undocumented and legacy keys are accepted, as Harbor accepts them."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from termgym.errors import ImportRefused, TaskSpecError
from termgym.importing._compose import check_compose
from termgym.importing._model import DISK_MB, ForeignTask, parse_memory
from termgym.importing._solution import with_solution_folder

HARBOR_FILES = ("task.toml", "instruction.md")
"""A folder holding both is a Harbor task (or task.toml and steps/: a multi-step one)."""


def is_harbor(folder: Path) -> bool:
    if not (folder / "task.toml").is_file():
        return False
    return (folder / "instruction.md").is_file() or (folder / "steps").is_dir()


def _table(data: dict[str, Any], name: str, source: Path) -> dict[str, Any]:
    value = data.get(name, {})
    if not isinstance(value, dict):
        raise TaskSpecError(f"{source}: [{name}]: expected a table, found {value!r}")
    return value


def _number(table: dict[str, Any], key: str, default: float, source: Path, where: str) -> float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise TaskSpecError(f"{source}: {where}.{key}: expected seconds > 0, found {value!r}")
    return float(value)


def _cpus(environment: dict[str, Any], source: Path) -> float:
    """`[environment].cpus` (Harbor's default: 1), the cores its container may use."""
    value = environment.get("cpus", 1)
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise TaskSpecError(f"{source}: [environment].cpus: expected cores > 0, found {value!r}")
    return float(value)


def _size(environment: dict[str, Any], keys: tuple[str, str], default: int, source: Path) -> int:
    """Megabytes of `[environment]`'s first key of `keys` there (`memory_mb = 2048`, or the
    legacy `memory = "2G"`), else `default`."""
    for key in keys:
        if key in environment:
            try:
                return parse_memory(environment[key], f"[environment].{key}")
            except ValueError as exc:
                raise TaskSpecError(f"{source}: {exc}") from None
    return default


def read_harbor(folder: Path) -> ForeignTask:
    """Read and check a Harbor task folder.

    Raises:
        ImportRefused: the task cannot run here (the reason is in the message).
        TaskSpecError: task.toml is malformed.
    """
    source = folder / "task.toml"
    if not (folder / "instruction.md").is_file():
        steps = sorted(p.name for p in (folder / "steps").iterdir() if p.is_dir())
        raise ImportRefused(
            f"{folder.name}: a multi-step Harbor task ({len(steps)} steps under steps/, each "
            "with its own instruction and tests): termgym runs one instruction per episode; "
            "multi-step tasks are not supported yet"
        )
    try:
        data = tomllib.loads(source.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise TaskSpecError(f"{source}: expected TOML, found: {exc}") from None
    meta = _table(data, "metadata", source)
    verifier = _table(data, "verifier", source)
    agent = _table(data, "agent", source)
    environment = _table(data, "environment", source)
    memory = _size(environment, ("memory_mb", "memory"), 2048, source)
    disk = _size(environment, ("storage_mb", "storage"), DISK_MB, source)
    env_dir = folder / "environment"
    check_compose(env_dir / "docker-compose.yaml", folder.name)
    dockerfile = env_dir / "Dockerfile"
    image = environment.get("docker_image") or None
    if not dockerfile.is_file() and not image:
        raise ImportRefused(
            f"{folder.name}: expected environment/Dockerfile or [environment].docker_image, "
            "found neither"
        )
    test_sh = folder / "tests" / "test.sh"
    if not test_sh.is_file():
        raise ImportRefused(f"{folder.name}: expected tests/test.sh, found none")
    solve = folder / "solution" / "solve.sh"
    env = verifier.get("env", {})
    if not isinstance(env, dict):
        raise TaskSpecError(f"{source}: [verifier.env]: expected a table, found {env!r}")
    approximate = []
    if environment.get("gpus"):
        approximate.append(f"[environment].gpus = {environment['gpus']}: no GPU is given")
    return ForeignTask(
        format="harbor",
        root=folder,
        original_id=folder.name,
        instruction=(folder / "instruction.md").read_text(encoding="utf-8"),
        context=env_dir,
        dockerfile=dockerfile.read_text(encoding="utf-8") if dockerfile.is_file() else None,
        docker_image=str(image) if image else None,
        test_script=test_sh.read_text(encoding="utf-8"),
        tests=folder / "tests",
        solution=(
            with_solution_folder(solve.parent, solve.read_text(encoding="utf-8"))
            if solve.is_file()
            else None
        ),
        solution_name="solution/solve.sh",
        agent_timeout=_number(agent, "timeout_sec", 600.0, source, "[agent]"),
        test_timeout=_number(verifier, "timeout_sec", 600.0, source, "[verifier]"),
        build_timeout=_number(environment, "build_timeout_sec", 600.0, source, "[environment]"),
        memory_mb=memory,
        cpus=_cpus(environment, source),
        disk_mb=disk,
        network=bool(environment.get("allow_internet", True)),
        verifier_env={str(k): str(v) for k, v in env.items()},
        author=" ".join(str(meta.get(k, "")) for k in ("author_name", "author_email")).strip(),
        difficulty=str(meta.get("difficulty", "")),
        category=str(meta.get("category", "")),
        tags=tuple(str(t) for t in meta.get("tags", []) or []),
        approximate=tuple(approximate),
    )
