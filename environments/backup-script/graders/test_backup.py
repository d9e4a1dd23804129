"""Hidden checks: backup.sh archives by the configured window and keeps the configured count."""

from __future__ import annotations

import os
import re
import subprocess
import tarfile
import time
from pathlib import Path

APP = Path(os.environ.get("TERMGYM_WORKDIR", "/app"))
DAY = 86400
NAME = re.compile(r"^backup-\d{8}-\d{6}\.tar\.gz$")


def backup(source: Path, dest: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, SOURCE_DIR=str(source), BACKUP_DIR=str(dest))
    done = subprocess.run(
        ["bash", str(APP / "backup.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        cwd=APP,
    )
    assert done.returncode == 0, f"backup.sh exited {done.returncode}: {done.stderr[-500:]}"
    return done


def archive_members(path: Path) -> set[str]:
    with tarfile.open(path) as tar:
        return {m.name.removeprefix("./") for m in tar.getmembers() if m.isfile()}


def make_tree(source: Path, ages_in_days: dict[str, float]) -> None:
    now = time.time()
    for rel, age in ages_in_days.items():
        path = source / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{rel} aged {age} days\n")
        os.utime(path, (now - age * DAY, now - age * DAY))


def test_the_archive_holds_exactly_the_files_inside_the_retention_window(tmp_path, rules):
    ages = {f"d{k % 3}/sub/file-{k}.txt": k + 0.5 for k in range(36)}
    ages["top.log"] = 0.01
    make_tree(tmp_path / "src", ages)
    dest = tmp_path / "dest"
    backup(tmp_path / "src", dest)
    archives = [p for p in dest.iterdir() if NAME.match(p.name)]
    assert len(archives) == 1, (
        f"expected one new archive, found {sorted(p.name for p in dest.iterdir())}"
    )
    want = {rel for rel, age in ages.items() if age < rules["retention_days"]}
    assert archive_members(archives[0]) == want


def test_rotation_keeps_the_configured_number_of_newest_archives(tmp_path, rules):
    make_tree(tmp_path / "src", {"a.txt": 0.1})
    dest = tmp_path / "dest"
    dest.mkdir()
    old = [f"backup-202401{d:02d}-0300{d:02d}.tar.gz" for d in range(1, 21)]
    for i, name in enumerate(old):
        (dest / name).write_bytes(b"old archive")
        os.utime(dest / name, (time.time() - (30 - i) * DAY,) * 2)
    keepers = ["notes.txt", "backup-old.tar.gz", "backup-20240101-0300.tar.gz"]
    for name in keepers:
        (dest / name).write_text("not an archive of ours")
    done = backup(tmp_path / "src", dest)
    new = [p.name for p in dest.iterdir() if NAME.match(p.name) and p.name not in old]
    assert len(new) == 1, "expected one new archive"
    assert new[0] in done.stdout, "backup.sh should print the new archive's path"
    keep = rules["keep_count"]
    want = sorted([*old[len(old) - (keep - 1) :], new[0]]) if keep > 1 else [new[0]]
    assert sorted(p.name for p in dest.iterdir() if NAME.match(p.name)) == want
    for name in keepers:
        assert (dest / name).exists(), f"{name} is not a backup archive and must be left alone"


def test_the_script_was_run_on_the_configured_folders(rules):
    dest = APP / "backups"
    archives = (
        sorted(p for p in dest.glob("backup-*.tar.gz") if NAME.match(p.name))
        if dest.is_dir()
        else []
    )
    assert archives, "no archive in the configured BACKUP_DIR: backup.sh was never run"
    assert len(archives) <= rules["keep_count"]
    members = archive_members(archives[-1])
    assert {"reports/weekly.txt", "notes.md"} <= members
    assert not members & {"reports/2025-q4.txt", "photos/old-office.txt"}
