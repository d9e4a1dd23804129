"""docker-compose.yaml of an imported task: one service is fine, several are refused."""

from __future__ import annotations

from pathlib import Path

import yaml

from termgym.errors import ImportRefused


def check_compose(path: Path, task: str) -> None:
    """Refuse a compose file with more than one service (until termgym runs them).

    Raises:
        ImportRefused: several services, or a file that is not a compose file.
    """
    if not path.is_file():
        return
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ImportRefused(f"{task}: {path.name}: expected YAML, found: {exc}") from None
    services = data.get("services") if isinstance(data, dict) else None
    if not isinstance(services, dict) or not services:
        return
    if len(services) > 1:
        raise ImportRefused(
            f"{task}: {path.name} runs {len(services)} services ({', '.join(sorted(services))}): "
            "termgym runs one sandbox per episode; multi-service tasks are not supported yet"
        )
