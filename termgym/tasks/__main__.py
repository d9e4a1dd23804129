"""`python -m termgym.tasks validate [FOLDER...]`: load task folders and report what is wrong."""

from __future__ import annotations

import sys
from pathlib import Path

from termgym.errors import TermgymError
from termgym.tasks._loader import load_task
from termgym.tasks._registry import task_dirs


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "validate":
        print("usage: python -m termgym.tasks validate [TASK_FOLDER...]", file=sys.stderr)
        return 2
    folders = [Path(a) for a in argv[1:]] or list(task_dirs().values())
    failed = 0
    for folder in folders:
        try:
            task = load_task(folder)
        except TermgymError as exc:
            failed += 1
            print(f"FAIL {folder}\n  {exc}")
        else:
            print(f"ok   {task.id} ({', '.join(task.spec.variants)})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
