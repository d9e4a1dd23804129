"""A wheel carries the bundled tasks, so a non-editable install finds them."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_wheel_holds_every_bundled_task_file(tmp_path) -> None:
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    [wheel] = list(tmp_path.glob("termgym-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    source = ROOT / "environments"
    expected = {
        "termgym/_environments/" + p.relative_to(source).as_posix()
        for p in source.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert expected and expected <= names
    assert "termgym/_task_paths.py" in names
