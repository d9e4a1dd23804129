"""A hostile task folder: links that lead out of it carry no file of this machine into a task.

A third party's Terminal-Bench or Harbor task is copied into the converted task (its build
context, tests and solution) and laid out in every verifier. A link in it to a file of the
host (here a secret in a folder beside the task, standing for ~/.ssh or /etc/shadow) was
followed by the copy: the secret became part of the task, in the image the agent works in
or in the tests (before: imported as `clean`, the secret's text in the converted task).
Import now refuses such a task, naming the link; links that stay inside are kept as links.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from termgym.importing import import_tasks

FOREIGN = Path(__file__).parents[1] / "fixtures" / "foreign"
TB = FOREIGN / "tb" / "tb-weight-limit"
HARBOR = FOREIGN / "harbor" / "harbor-top-words"
SECRET = "the host's secret: do not copy\n"


def _hostile(tmp_path: Path, source: Path, link: str) -> tuple[Path, Path]:
    """A copy of `source` with `link` (a path inside it) a link to a secret outside it."""
    secret = tmp_path / "host" / "id_rsa"
    secret.parent.mkdir()
    secret.write_text(SECRET)
    task = tmp_path / "tasks" / source.name
    shutil.copytree(source, task)
    where = task / link
    where.parent.mkdir(parents=True, exist_ok=True)
    if where.exists():
        where.unlink()
    os.symlink(os.path.relpath(secret, where.parent), where)
    return task, secret


def _nothing_of(secret: Path, out: Path) -> None:
    for path in out.rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert SECRET not in path.read_text(errors="replace"), path


@pytest.mark.parametrize(
    ("source", "link"),
    [
        (TB, "tests/fixture_data.txt"),  # the tests: laid out in every verifier
        (TB, "parcels.csv"),  # the build context: COPY'd into the image
        (TB, "solution.sh"),  # the oracle
        (HARBOR, "tests/data.txt"),
        (HARBOR, "environment/notes.txt"),
        (HARBOR, "solution/helper.txt"),
    ],
    ids=lambda value: value if isinstance(value, str) else value.name,
)
def test_a_link_out_of_the_task_folder_refuses_the_task_naming_it(
    tmp_path: Path, source: Path, link: str
) -> None:
    task, secret = _hostile(tmp_path, source, link)
    out = tmp_path / "out"
    report = import_tasks([task], out)
    assert not report.converted, report
    ((folder, why),) = report.refused
    assert folder == task
    assert link in why and "outside" in why, why
    _nothing_of(secret, out)


def test_a_link_out_of_the_tests_to_elsewhere_in_the_task_is_refused_too(tmp_path: Path) -> None:
    """The tests are copied apart (to graders/tests): a link of theirs to the folder's other
    files would lead nowhere, or somewhere else, once copied."""
    task = tmp_path / TB.name
    shutil.copytree(TB, task)
    os.symlink("../task.yaml", task / "tests" / "spec.yaml")
    report = import_tasks([task], tmp_path / "out")
    ((_, why),) = report.refused
    assert "tests/spec.yaml" in why and "tests/ folder" in why, why


def test_links_that_stay_inside_are_copied_as_links(tmp_path: Path) -> None:
    task = tmp_path / TB.name
    shutil.copytree(TB, task)
    (task / "tests" / "data").mkdir()
    (task / "tests" / "data" / "words.txt").write_text("alpha\n")
    os.symlink("data/words.txt", task / "tests" / "words.txt")
    report = import_tasks([task], tmp_path / "out")
    (done,) = report.converted
    copied = done.folder / "graders" / "tests" / "words.txt"
    assert copied.is_symlink() and os.readlink(copied) == "data/words.txt"
    assert copied.read_text() == "alpha\n"
