"""Read a Harbor task folder: task.toml, instruction.md, environment/, tests/test.sh,
solution/solve.sh. Undocumented and legacy keys are accepted, as Harbor accepts them."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from termgym.errors import ImportRefused, TaskSpecError
from termgym.importing._compose import check_compose
from termgym.importing._model import HARBOR_DISK_MB, ForeignTask, parse_memory, read_text
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


_KNOWN: dict[str, frozenset[str]] = {
    "": frozenset({"version", "schema_version", "task", "metadata", "verifier", "agent",
                   "environment", "solution", "source"}),
    "environment": frozenset({"build_timeout_sec", "docker_image", "cpus", "memory_mb",
                              "memory", "storage_mb", "storage", "gpus", "gpu_types",
                              "allow_internet", "network_mode", "allowed_hosts", "mcp_servers",
                              "env", "skills_dir", "healthcheck"}),
    "agent": frozenset({"timeout_sec", "user", "network_mode", "allowed_hosts"}),
    "verifier": frozenset({"timeout_sec", "env", "user", "network_mode", "allowed_hosts"}),
    "solution": frozenset({"env"}),
}  # fmt: skip
"""The keys of Harbor's task.toml model; others are ignored by Harbor too, and noted here."""
_NOT_HONOURED = {
    ("environment", "env"): "its variables are not set in the sandbox (values are often "
    "${HOST_SECRET} references, and nothing of the host's environment reaches a sandbox)",
    ("solution", "env"): "the oracle runs without these variables",
    ("agent", "user"): "the agent runs as root",
    ("verifier", "user"): "the tests run as termgym's verifier runs them",
    ("environment", "healthcheck"): "the episode starts without waiting for it",
    ("environment", "mcp_servers"): "no MCP server is given to the agent",
    ("environment", "skills_dir"): "its skills are not given to the agent",
}
"""Keys termgym reads but cannot honour: a task that sets one is approximate, saying how."""


def _unhonoured(data: dict[str, Any]) -> list[str]:
    """How the task differs here for each key it sets that termgym ignores or knows not."""
    notes = []
    unknown = [k for k in data if k not in _KNOWN[""]]
    for table in ("environment", "agent", "verifier", "solution"):
        values = data.get(table, {})
        unknown += [f"[{table}].{k}" for k in values if k not in _KNOWN[table]]
        for (where, key), how in _NOT_HONOURED.items():
            if where == table and values.get(key) not in (None, "", [], {}, "root", 0):
                value = values[key]
                # never the variables' names or values: they may name the host's secrets
                shown = f"sets {len(value)} variable(s)" if key == "env" else f"= {value!r}"
                notes.append(f"[{table}].{key} {shown}: {how}")
    if unknown:
        notes.append(
            f"keys Harbor's task.toml does not define are ignored: {', '.join(unknown)} "
            "(a newer Harbor may give them a meaning)"
        )
    return notes


def _network(
    environment: dict[str, Any], agent: dict[str, Any], source: Path
) -> tuple[bool, list[str]]:
    """Whether the agent's sandbox has a network, as Harbor decides it: the agent's own
    `network_mode` (or `allowed_hosts`), else the environment's, else `allow_internet`;
    an allowlist has the whole network here, noted as approximate."""
    for where, table in (("[agent]", agent), ("[environment]", environment)):
        mode, hosts = table.get("network_mode"), table.get("allowed_hosts") or []
        if mode is None and not hosts:
            continue
        mode = mode or "allowlist"
        if mode == "public":
            return True, []
        if mode == "no-network":
            return False, []
        if mode == "allowlist":
            return True, [
                f"{where}.network_mode = 'allowlist' ({', '.join(map(str, hosts))}): the "
                "sandbox has the whole network, not only those hosts"
            ]
        raise TaskSpecError(
            f"{source}: {where}.network_mode: expected 'public', 'no-network' or "
            f"'allowlist', found {mode!r}"
        )
    return bool(environment.get("allow_internet", True)), []


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
    disk = _size(environment, ("storage_mb", "storage"), HARBOR_DISK_MB, source)
    env_dir = folder / "environment"
    compose = check_compose(env_dir / "docker-compose.yaml", folder.name)
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
    _table(data, "solution", source)
    network, approximate = _network(environment, agent, source)
    approximate += _unhonoured(data) + list(compose.notes)
    if environment.get("gpus"):
        approximate.append(f"[environment].gpus = {environment['gpus']}: no GPU is given")
    return ForeignTask(
        format="harbor",
        root=folder,
        original_id=folder.name,
        instruction=read_text(folder / "instruction.md"),
        context=env_dir,
        dockerfile=read_text(dockerfile) if dockerfile.is_file() else None,
        docker_image=str(image) if image else None,
        test_script=read_text(test_sh),
        tests=folder / "tests",
        solution=(
            with_solution_folder(solve.parent, read_text(solve)) if solve.is_file() else None
        ),
        solution_name="solution/solve.sh",
        agent_timeout=_number(agent, "timeout_sec", 600.0, source, "[agent]"),
        test_timeout=_number(verifier, "timeout_sec", 600.0, source, "[verifier]"),
        build_timeout=_number(environment, "build_timeout_sec", 600.0, source, "[environment]"),
        memory_mb=memory,
        cpus=_cpus(environment, source),
        disk_mb=disk,
        network=network,
        workdir=compose.working_dir,
        env=compose.env,
        verifier_env={str(k): str(v) for k, v in env.items()},
        author=" ".join(str(meta.get(k, "")) for k in ("author_name", "author_email")).strip(),
        difficulty=str(meta.get("difficulty", "")),
        category=str(meta.get("category", "")),
        tags=_tags(meta.get("tags")),
        approximate=tuple(approximate),
    )


def _tags(value: object) -> tuple[str, ...]:
    """`[metadata] tags`: a list of names, or one name (a str is one tag, not its letters)."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (list, tuple)):
        return tuple(str(tag) for tag in value)
    return (str(value),)
