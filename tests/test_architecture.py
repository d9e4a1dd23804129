"""The layers contract (.importlinter) holds for this checkout, names every top-level module,
and breaks on each kind of violation it exists to catch."""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = ROOT / ".importlinter"
SOURCES = ("termgym", "graders", "tui")


def _lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` with the checkout's contract, over the packages under `tree`."""
    command = Path(sys.executable).with_name("lint-imports")
    return subprocess.run(
        [str(command), str(CONTRACT), "--no-cache"],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=240,
        env={"PATH": str(command.parent), "PYTHONPATH": str(tree), "NO_COLOR": "1"},
    )


def _copy_sources(target: Path) -> Path:
    """The checkout's Python sources (termgym/, graders/, tui/) copied under `target`."""
    for name in SOURCES:
        shutil.copytree(ROOT / name, target / name, ignore=_not_python)
    return target


def _not_python(folder: str, names: list[str]) -> list[str]:
    return [n for n in names if not n.endswith(".py") and not (Path(folder) / n).is_dir()]


def _layers() -> list[str]:
    parser = configparser.ConfigParser()
    parser.read(CONTRACT)
    layers = parser["importlinter:contract:layers"]["layers"]
    return [name.strip() for line in layers.splitlines() for name in line.split("|") if name]


def _contract_name(kind: str) -> str:
    parser = configparser.ConfigParser()
    parser.read(CONTRACT)
    return " ".join(parser[f"importlinter:contract:{kind}"]["name"].split())


def test_the_contract_holds_for_this_checkout() -> None:
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_every_module_and_package_of_termgym_is_in_a_layer() -> None:
    """A new package or root module must be placed in the layers before it can be imported."""
    named = set(_layers())
    found = {
        f"termgym.{path.stem}"
        for path in (ROOT / "termgym").iterdir()
        if (path.suffix == ".py" and path.stem != "__init__")
        or (path.is_dir() and (path / "__init__.py").is_file())
    }
    assert found - named == set(), "place these in .importlinter's layers"
    assert {"graders", "tui"} <= named


VIOLATIONS = {
    # A lower layer importing a higher one, inside a function (a local import counts).
    "layers": (
        "termgym/sandbox/_shell.py",
        "\n\ndef _upward() -> None:\n    from termgym.run import Runner  # noqa: F401\n",
        "termgym.sandbox is not allowed to import termgym.run",
    ),
    # A cycle between two modules of one package (_runner imports _jobs).
    "acyclic": (
        "termgym/run/_jobs.py",
        "\n\ndef _back() -> None:\n    from termgym.run._runner import Runner  # noqa: F401\n",
        "No cycles are allowed in termgym.run",
    ),
    # Another package's private module, whose name the package exports.
    "private": (
        "termgym/env/_spaces.py",
        "\nfrom termgym.grading._verdict import Verdict  # noqa: E402, F401\n",
        "termgym.env._spaces -> termgym.grading._verdict",
    ),
    # The facade, from inside the package.
    "facade": (
        "termgym/run/_jobs.py",
        "\nimport termgym  # noqa: E402, F401\n",
        "termgym.run._jobs -> termgym",
    ),
}


@pytest.mark.parametrize("kind", sorted(VIOLATIONS))
def test_the_contract_breaks_on_a_deliberate_violation(kind: str, tmp_path: Path) -> None:
    module, added, reported = VIOLATIONS[kind]
    _assert_breaks(tmp_path, module, added, kind, reported)


def _assert_breaks(tmp_path: Path, module: str, added: str, kind: str, reported: str) -> None:
    """Append `added` to `module` in a copy of the sources: contract `kind` must break,
    naming `reported`."""
    tree = _copy_sources(tmp_path)
    with (tree / module).open("a") as handle:
        handle.write(added)
    result = _lint_imports(tree)
    report = " ".join(result.stdout.split())
    assert result.returncode != 0, result.stdout
    assert f"{_contract_name(kind)} BROKEN" in report, result.stdout
    assert reported in report, result.stdout


VERIFIER_VIOLATIONS = {
    # Host code importing a verifier module (it reads them as files, to inject them).
    "host imports verifier code": (
        "termgym/grading/_bundle.py",
        "\nimport termgym.verifier.agentexec  # noqa: E402, F401\n",
        "verifier",
        "termgym.grading._bundle -> termgym.verifier.agentexec",
    ),
    # Verifier code importing termgym (none of it is installed in a verifier).
    "verifier imports termgym": (
        "termgym/verifier/nest.py",
        "\n\ndef _host() -> None:\n    from termgym.sandbox import AGENT_UID  # noqa: F401\n",
        "layers",
        "termgym.verifier is not allowed to import termgym.sandbox",
    ),
}


@pytest.mark.parametrize("case", sorted(VERIFIER_VIOLATIONS))
def test_the_verifier_code_and_the_host_code_never_import_each_other(
    case: str, tmp_path: Path
) -> None:
    module, added, kind, reported = VERIFIER_VIOLATIONS[case]
    _assert_breaks(tmp_path, module, added, kind, reported)
