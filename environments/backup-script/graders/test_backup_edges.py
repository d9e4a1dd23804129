"""Hidden checks (pool): retention an hour from the edge, odd names, rotation by name."""

from __future__ import annotations

import os
import re
import subprocess
import tarfile
import time
from pathlib import Path

APP = Path(os.environ.get("TERMGYM_WORKDIR", "/app"))
DAY, HOUR = 86400, 3600
NAME = re.compile(r"^backup-\d{8}-\d{6}\.tar\.gz$")


def run_backup(source: Path, dest: Path) -> None:
    env = dict(os.environ, SOURCE_DIR=str(source), BACKUP_DIR=str(dest))
    done = subprocess.run(
        ["bash", str(APP / "backup.sh")],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        cwd=source.parent,
    )
    assert done.returncode == 0, done.stderr[-500:]


def test_files_an_hour_inside_the_window_are_kept_and_an_hour_outside_are_not(tmp_path, rules):
    days = rules["retention_days"]
    now = time.time()
    ages = {}
    for k in range(1, 33):
        ages[f"in window/day {k} - early.txt"] = k * DAY - HOUR
        ages[f"in window/day {k} - late.txt"] = k * DAY + HOUR
    src = tmp_path / "source dir"
    for rel, age in ages.items():
        path = src / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rel)
        os.utime(path, (now - age, now - age))
    (src / "empty-dir").mkdir()
    dest = tmp_path / "archives"
    run_backup(src, dest)
    (archive,) = [p for p in dest.iterdir() if NAME.match(p.name)]
    with tarfile.open(archive) as tar:
        got = {m.name.removeprefix("./") for m in tar.getmembers() if m.isfile()}
        sample = next(m for m in tar.getmembers() if m.isfile())
        assert tar.extractfile(sample).read().decode() == sample.name.removeprefix("./")
    assert got == {rel for rel, age in ages.items() if age < days * DAY}


def test_rotation_goes_by_the_time_in_the_name_not_the_file_date(tmp_path, rules):
    src = tmp_path / "src"
    src.mkdir()
    (src / "x.txt").write_text("x")
    dest = tmp_path / "dest"
    dest.mkdir()
    names = [f"backup-2023{m:02d}15-120000.tar.gz" for m in range(1, 13)]
    names += [f"backup-2024{m:02d}15-120000.tar.gz" for m in range(1, 9)]
    for i, name in enumerate(names):
        (dest / name).write_bytes(b"x")
        age = (i + 1) * DAY  # newer names get older modification times
        os.utime(dest / name, (time.time() - age,) * 2)
    run_backup(src, dest)
    kept = sorted(p.name for p in dest.iterdir() if NAME.match(p.name))
    keep = rules["keep_count"]
    assert len(kept) == keep
    assert kept[:-1] == sorted(names)[len(names) - (keep - 1) :]
