"""A wheel carries the bundled tasks, so a non-editable install finds them, and installs one
import package only: termgym (graders/ and tui/ ship as termgym.graders and termgym.tui),
without the benchmarks (termgym/bench/ runs from a checkout)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project built as a wheel, once for the module, from a copy of the checkout: built in
    the checkout, it would also pack whatever an older build left in build/lib."""
    source = tmp_path_factory.mktemp("source") / "termgym"
    left_out = (".git", ".venv", "build", "*.egg-info", "__pycache__", ".*_cache", "runs")
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*left_out))
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-q", "-w", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    [found] = list(out.glob("termgym-*.whl"))
    return found


@pytest.mark.slow
def test_the_wheel_holds_every_bundled_task_file(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    source = ROOT / "environments"
    expected = {
        "termgym/_environments/" + p.relative_to(source).as_posix()
        for p in source.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert expected and expected <= names
    assert "termgym/_task_paths.py" in names
    assert "termgym/verifier/nest_launch.c" in names  # the host compiles it where it runs
    assert "termgym/sandbox/gateway_relay.c" in names  # so too the model gateway's relay


@pytest.mark.slow
def test_the_wheel_installs_one_import_package_holding_every_subpackage(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    # termgym_verifiers: verifiers 0.4 imports a plugin by a plain module name only (a dotted
    # id fails), so its one-file shim is the single other top-level name
    assert {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")} == {
        "termgym",
        "termgym_verifiers",
    }
    packages = {
        "termgym/" + p.parent.relative_to(ROOT / "termgym").as_posix() + "/__init__.py"
        for p in (ROOT / "termgym").rglob("__init__.py")
        if p.parent != ROOT / "termgym" and p.parent != ROOT / "termgym" / "bench"
    }
    packages |= {"termgym/graders/__init__.py", "termgym/tui/__init__.py"}
    assert packages <= set(names), sorted(packages - set(names))
    # the benchmarks run from a checkout only (they read its examples/, tests/ and docs/)
    assert not [n for n in names if n.startswith("termgym/bench/")]
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "termgym.graders.pytest_kind:PytestGrader" in text and "= graders." not in text
