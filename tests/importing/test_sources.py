"""Where foreign tasks come from: a git source cloned into the cache and checked by hash, the
bundled overlay collections (`--overlays tb2`), tasks left out for having no overlay, and an
agent-user overlay refused at check with the reason. No sandbox here."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from termgym.check import AGENT_USER_BLIND, blind_row
from termgym.errors import TaskError
from termgym.importing import (
    bundled_collections,
    import_tasks,
    overlay_folder,
    parse_source,
    resolve_source,
)
from termgym.tasks import load_task

FIXTURES = Path(__file__).parents[1] / "fixtures"
TB2 = FIXTURES / "tb2"


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str]:
    """A git repository holding the TB 2.0-format fixture tasks under tasks/; its commit."""
    folder = tmp_path / "upstream"
    shutil.copytree(TB2 / "tasks", folder / "tasks")
    _git(tmp_path, "init", "-q", str(folder))
    _git(folder, "add", "-A")
    _git(folder, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "tasks")
    return folder, _git(folder, "rev-parse", "HEAD")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TERMGYM_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_a_git_source_is_cloned_at_its_commit_and_checked(
    repo: tuple[Path, str], cache: Path
) -> None:
    folder, commit = repo
    source = f"git+file://{folder}@{commit}#subdirectory=tasks"
    found = resolve_source(source)
    assert sorted(p.name for p in found.iterdir()) == ["backup-rotation", "flagged-payments"]
    assert found.is_relative_to(cache)
    assert resolve_source(source) == found  # cached: the same checkout, checked again
    (found / "backup-rotation" / "instruction.md").write_text("edited")
    with pytest.raises(TaskError, match="changed"):
        resolve_source(source)


def test_a_commit_the_repository_lacks_is_an_error(repo: tuple[Path, str], cache: Path) -> None:
    folder, _ = repo
    with pytest.raises(TaskError, match="git"):
        resolve_source(f"git+file://{folder}@{'0' * 40}")


@pytest.mark.parametrize("revision", ["main", "v2.0", "abc1234"])
def test_only_a_full_commit_hash_names_a_git_source(revision: str) -> None:
    with pytest.raises(TaskError, match="full hash"):
        parse_source(f"git+https://example.com/tb.git@{revision}")
    assert parse_source("tasks/terminal-bench-2") is None


def test_import_takes_a_git_source_and_only_the_overlaid_tasks(
    repo: tuple[Path, str], cache: Path, tmp_path: Path
) -> None:
    folder, commit = repo
    overlays = tmp_path / "overlays"
    overlays.mkdir()
    shutil.copy(TB2 / "overlays" / "flagged-payments.yaml", overlays)
    report = import_tasks(
        [f"git+file://{folder}@{commit}#subdirectory=tasks"], tmp_path / "out", "harbor",
        overlays=overlays, overlaid_only=True,
    )  # fmt: skip
    assert [c.task_id for c in report.converted] == ["flagged-payments"]
    assert [p.name for p in report.skipped] == ["backup-rotation"]
    assert report.converted[0].overlay == "threshold_eur"


def test_the_tb2_collection_holds_only_overlays_proven_in_its_table() -> None:
    """Every bundled TB 2.0 overlay has its `termgym check` row, passed, in docs/tb2.md's
    measured table, and every task proven there is bundled."""
    assert overlay_folder("tb2") == bundled_collections()["tb2"]
    overlays = sorted(overlay_folder("tb2").glob("*.yaml"))
    for path in overlays:
        rules = yaml.safe_load(path.read_text())["rules"]
        assert rules and all(r["occurs"] for r in rules.values()), path.name
        assert path.read_text().startswith("# TB 2.0's "), f"{path.name}: say what it perturbs"
    table = (Path(__file__).parents[2] / "docs" / "tb2.md").read_text()
    proven = {
        cells[1].strip("` ")
        for line in table.splitlines()
        if line.startswith("| ") and len(cells := line.split("|")) > 4
        and cells[3].strip().startswith("ok (")
    }  # fmt: skip
    assert proven == {p.stem for p in overlays}


def test_an_unknown_collection_names_the_bundled_ones() -> None:
    with pytest.raises(TaskError, match="did you mean 'tb2'"):
        overlay_folder("tb3")


def test_an_agent_user_overlay_is_refused_with_the_reason(tmp_path: Path) -> None:
    """A test script the importer cannot read line by line runs, whole, as the agent's user:
    the rewritten tests in /tests are then the agent's to read."""
    source = tmp_path / "src" / "flagged-payments"
    shutil.copytree(TB2 / "tasks" / "flagged-payments", source)
    script = source / "tests" / "test.sh"
    script.write_text(
        script.read_text().replace("uvx \\", "cp /tests/test_outputs.py /app/\nuvx \\")
    )
    report = import_tasks(
        [source], tmp_path / "out", "harbor", overlays=TB2 / "overlays", overlaid_only=True
    )
    (done,) = report.converted
    assert done.protection == "agent-user"
    row = blind_row(load_task(done.folder), [])
    assert row is not None and row.ok is False
    assert row.why == AGENT_USER_BLIND.format(files="graders/tests/test_outputs.py")
    assert "can read the enforced values" in row.why
    clean = import_tasks([TB2 / "tasks"], tmp_path / "clean", "harbor", overlays=TB2 / "overlays")
    task = load_task(clean.converted[0].folder)
    assert blind_row(task, []) is None  # a clean task: decided by what the oracle's runs gave


def mixed_source(tmp_path: Path) -> Path:
    """A folder of one good task, one refused (its Dockerfile copies the tests in), one
    folder with a task.yaml alone and one with notes: two tasks and two folders of none."""
    source = tmp_path / "source"
    good = FIXTURES / "foreign" / "tb" / "tb-weight-limit"
    shutil.copytree(good, source / "tb-weight-limit")
    shutil.copytree(good, source / "tb-refused")
    with (source / "tb-refused" / "Dockerfile").open("a") as dockerfile:
        dockerfile.write("COPY tests /app/tests\n")
    (source / "only-yaml").mkdir()
    shutil.copy(good / "task.yaml", source / "only-yaml" / "task.yaml")
    (source / "notes").mkdir()
    (source / "notes" / "README").write_text("not a task\n")
    return source


def test_import_names_every_folder_it_passed_over_and_why(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from termgym.cli import main

    source = mixed_source(tmp_path)
    report = import_tasks([source], tmp_path / "out")
    assert [c.task_id for c in report.converted] == ["tb-weight-limit"]
    assert [f.name for f, _ in report.refused] == ["tb-refused"]
    passed = dict((f.name, why) for f, why in report.passed_over)
    assert set(passed) == {"only-yaml", "notes"}
    assert "task.yaml without run-tests.sh" in passed["only-yaml"]
    assert "holds none of task.toml" in passed["notes"]
    done = CliRunner().invoke(main, ["import", "tb", str(source), "--out", str(tmp_path / "o2")])
    assert done.exit_code == 0, done.output
    assert "1 imported, 1 refused, 2 folder(s) holding no task passed over" in done.output
    for name in ("only-yaml", "notes", "tb-refused"):
        assert name in done.output
