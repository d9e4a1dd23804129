"""docker-compose.yaml of an imported task: one service is fine, several are refused; what
the one service sets for its container (working_dir, environment) is read, and what termgym
cannot apply is said."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from termgym.errors import ImportRefused

_PLUMBING = frozenset({"build", "image", "container_name", "command", "volumes"})
"""What a harness's compose template sets for itself (its image name, its `sleep infinity`,
its log mounts): termgym does the same its own way."""
_HARNESS_VALUE = re.compile(r"\$\{?(T_BENCH_|TEST_DIR\b|ENV_|HOST_|CONTEXT_DIR\b|CPUS\b|MEMORY\b)")
"""A value the harness fills in (`TEST_DIR=${T_BENCH_TEST_DIR}`): termgym sets its own."""


@dataclass(frozen=True)
class ComposeService:
    """What the task's one service asks of its container, beyond the harness's template."""

    working_dir: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    """How the conversion differs: each setting termgym does not apply, and why."""


def _environment(value: object, task: str, name: str) -> dict[str, str]:
    if isinstance(value, dict):
        pairs = [(str(k), "" if v is None else str(v)) for k, v in value.items()]
    elif isinstance(value, list):
        pairs = [(str(e).partition("=")[0], str(e).partition("=")[2]) for e in value]
    else:
        raise ImportRefused(
            f"{task}: {name}: environment: expected a list of NAME=value or a mapping, "
            f"found {value!r}"
        )
    return dict(pairs)


def check_compose(path: Path, task: str) -> ComposeService:
    """Refuse a compose file with more than one service (until termgym runs them), and read
    the one service's settings.

    Raises:
        ImportRefused: several services, or a file that is not a compose file.
    """
    if not path.is_file():
        return ComposeService()
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ImportRefused(f"{task}: {path.name}: expected YAML, found: {exc}") from None
    services = data.get("services") if isinstance(data, dict) else None
    if not isinstance(services, dict) or not services:
        return ComposeService()
    if len(services) > 1:
        raise ImportRefused(
            f"{task}: {path.name} runs {len(services)} services ({', '.join(sorted(services))}): "
            "termgym runs one sandbox per episode; multi-service tasks are not supported yet"
        )
    ((name, service),) = services.items()
    if not isinstance(service, dict):
        return ComposeService()
    notes = []
    env = {}
    for key, value in _environment(service.get("environment", {}), task, path.name).items():
        if _HARNESS_VALUE.search(value):
            continue
        if "$" in value:
            notes.append(
                f"{path.name}: environment {key}={value}: a value from the host's environment, "
                "which never reaches a sandbox: not set"
            )
            continue
        env[key] = value
    working_dir = service.get("working_dir")
    if working_dir is not None and (not isinstance(working_dir, str) or "$" in working_dir):
        notes.append(f"{path.name}: working_dir {working_dir!r}: not a plain path, not applied")
        working_dir = None
    ignored = sorted(set(service) - _PLUMBING - {"environment", "working_dir"})
    if ignored:
        notes.append(
            f"{path.name}: service {name}'s {', '.join(ignored)} "
            f"{'is' if len(ignored) == 1 else 'are'} not applied: termgym starts the "
            "sandbox with the task's own limits"
        )
    return ComposeService(working_dir, env, tuple(notes))
