"""Links in a foreign task folder: each must stay inside the part of the folder it is in.

A task folder comes from a third party. Its build context, tests and solution are copied
into the converted task, read to rewrite them, and laid out in every verifier; a link among
them that leads out of the folder (to /etc/shadow, to the user's ~/.ssh) would carry a file
of this machine into the task: into the image the agent works in, into the tests. So import
refuses such a task, naming the link, before it reads any file of it; and links that stay
inside are copied as links, never followed (termgym.importing._convert).

The tests and the solution are copied apart from the rest (to graders/tests, into the
oracle), so a link there must stay inside `tests/` or `solution/` themselves; every other
link must stay inside the task folder (a Terminal-Bench task's build context is the folder
itself; a Harbor task's is `environment/`, which is held to the same rule).
"""

from __future__ import annotations

import os
from pathlib import Path

from termgym.errors import ImportRefused

APART = ("tests", "solution", "environment")
"""Parts of a task folder copied on their own: their links must stay inside them."""


def refuse_outside_links(folder: Path) -> None:
    """Refuse `folder` if a link in it leads outside the part of it the link is in.

    Raises:
        ImportRefused: naming the first such link and where it leads.
    """
    root = Path(os.path.realpath(folder))
    for base, dirs, files in os.walk(folder, followlinks=False):
        for name in sorted(dirs + files):
            path = Path(base) / name
            if not path.is_symlink():
                continue
            rel = path.relative_to(folder)
            part = rel.parts[0] if len(rel.parts) > 1 and rel.parts[0] in APART else ""
            boundary = root / part if part else root
            target = Path(os.path.realpath(path))
            if target != boundary and boundary not in target.parents:
                where = f"the task's {part}/ folder" if part else "the task folder"
                raise ImportRefused(
                    f"{folder}: {rel} is a link to {os.readlink(path)!r} ({target}), outside "
                    f"{where}: expected every file of a task inside it (a link out would carry "
                    "a file of this machine into the task)"
                )
