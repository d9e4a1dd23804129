"""Harbor's own interpreter: a Python >= 3.12 found on this machine, and a virtualenv that
termgym makes with it and installs Harbor into, once (cached by Harbor's version).

Harbor requires Python >= 3.12 and brings litellm, pydantic and a few dozen other pins;
termgym runs on the machine's python3 (3.11 on Debian bookworm). So Harbor never enters
termgym's interpreter: it runs in this virtualenv, as a program termgym talks to over a
pipe (`harbor_process.py`; docs/agents.md says why).
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from termgym.errors import AgentError
from termgym.images import cache_dir

HARBOR_VERSION = "0.26.0"
"""The Harbor release termgym's adapters are written and tested against."""

MIN_PYTHON = (3, 12)

Log = Callable[[str], None]


@dataclass(frozen=True)
class Interpreter:
    """A Python found on this machine: its path and (major, minor) version."""

    path: Path
    version: tuple[int, int]


def find_interpreter() -> Interpreter:
    """The newest Python >= 3.12 on this machine: $TERMGYM_HARBOR_PYTHON when set, else
    python3.N on PATH, else pyenv's versions ($PYENV_ROOT, `pyenv root`, ~/.pyenv).

    Raises:
        AgentError: none was found (it says where it looked and how to give one).
    """
    given = os.environ.get("TERMGYM_HARBOR_PYTHON")
    if given:
        named = _probe(Path(given))
        if named is None or named.version < MIN_PYTHON:
            raise AgentError(
                f"TERMGYM_HARBOR_PYTHON={given}: expected a Python >= 3.12 interpreter, "
                f"found {'none there' if named is None else _dotted(named.version)}"
            )
        return named
    candidates = list(_candidates())
    found = [
        probed
        for probed in (_probe(path) for path in candidates)
        if probed is not None and probed.version >= MIN_PYTHON
    ]
    if not found:
        raise AgentError(
            "Harbor's agents need a Python >= 3.12 interpreter (Harbor requires it) and "
            f"found none among {len(candidates)} looked at (python3.N on PATH, pyenv's "
            "versions); install one (pyenv install 3.12, or the distribution's python3.12) "
            "or name it with TERMGYM_HARBOR_PYTHON=/path/to/python3.12"
        )
    return max(found, key=lambda i: i.version)


def _candidates() -> Iterator[Path]:
    seen: set[Path] = set()
    for minor in range(20, MIN_PYTHON[1] - 1, -1):
        which = shutil.which(f"python3.{minor}")
        if which:
            seen.add(Path(which))
            yield Path(which)
    for root in _pyenv_roots():
        versions = root / "versions"
        if not versions.is_dir():
            continue
        for folder in sorted(versions.iterdir()):
            if re.fullmatch(r"3\.\d+(\.\d+)?", folder.name):
                path = folder / "bin" / "python3"
                if path.exists() and path not in seen:
                    seen.add(path)
                    yield path


def _pyenv_roots() -> Iterator[Path]:
    if os.environ.get("PYENV_ROOT"):
        yield Path(os.environ["PYENV_ROOT"])
    pyenv = shutil.which("pyenv")
    if pyenv:
        try:
            out = subprocess.run([pyenv, "root"], capture_output=True, text=True, timeout=10)
            if out.returncode == 0 and out.stdout.strip():
                yield Path(out.stdout.strip())
        except (OSError, subprocess.TimeoutExpired):
            pass
    yield Path.home() / ".pyenv"


def _probe(path: Path) -> Interpreter | None:
    try:
        out = subprocess.run(
            [str(path), "-c", "import sys; print(*sys.version_info[:2])"],
            capture_output=True, text=True, timeout=20,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    parts = out.stdout.split()
    if out.returncode != 0 or len(parts) != 2:
        return None
    return Interpreter(path, (int(parts[0]), int(parts[1])))


def _dotted(version: tuple[int, int]) -> str:
    return ".".join(map(str, version))


def venv_dir(interpreter: Interpreter, version: str = HARBOR_VERSION) -> Path:
    """Where the virtualenv of Harbor `version` made with `interpreter` lives."""
    return cache_dir() / "harbor" / f"harbor-{version}-py{_dotted(interpreter.version)}"


def installed_python(version: str = HARBOR_VERSION) -> Path | None:
    """The interpreter of a finished Harbor virtualenv (None: not made yet)."""
    root = cache_dir() / "harbor"
    if not root.is_dir():
        return None
    made = sorted(root.glob(f"harbor-{version}-py3.*/.complete"), reverse=True)
    return made[0].parent / "bin" / "python" if made else None


def ensure_harbor(version: str = HARBOR_VERSION, log: Log | None = None) -> Path:
    """The Python of a virtualenv holding Harbor `version`: made once (uv, or pip, installs
    Harbor and its dependencies from the package index: a minute or minutes), then found at
    once.

    Raises:
        AgentError: no interpreter >= 3.12, or the install failed (pip's last lines).
    """
    done = installed_python(version)
    if done is not None:
        return done
    interpreter = find_interpreter()
    target = venv_dir(interpreter, version)
    say = log or (lambda line: print(line, file=sys.stderr))
    with _locked(target):
        if (target / ".complete").exists():
            return target / "bin" / "python"
        shutil.rmtree(target, ignore_errors=True)
        say(
            f"termgym: installing Harbor {version} into a Python "
            f"{_dotted(interpreter.version)} virtualenv ({target}); once, a few minutes"
        )
        _run([str(interpreter.path), "-m", "venv", str(target)], "make the virtualenv")
        _install(target / "bin" / "python", f"harbor=={version}")
        (target / ".complete").write_text(f"{version}\n")
    return target / "bin" / "python"


def _install(python: Path, requirement: str) -> None:
    """pip-install `requirement` into the virtualenv of `python`: with uv where termgym's
    environment has it (it downloads and installs in parallel: 41 s for Harbor here, where
    pip took minutes), else, or if uv fails (an index only pip is told of), with pip."""
    uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
    if uv is not None:
        done = subprocess.run(
            [uv, "pip", "install", "--quiet", "--python", str(python), requirement],
            capture_output=True, text=True,
        )  # fmt: skip
        if done.returncode == 0:
            return
    pip = [str(python), "-m", "pip", "install", "--quiet"]
    _run([*pip, requirement], f"pip install {requirement}")


def _run(argv: list[str], what: str) -> None:
    out = subprocess.run(argv, capture_output=True, text=True)
    if out.returncode != 0:
        tail = "\n".join((out.stderr or out.stdout).strip().splitlines()[-8:])
        raise AgentError(f"Harbor's virtualenv: could not {what} (exit {out.returncode}):\n{tail}")


@contextmanager
def _locked(target: Path) -> Iterator[None]:
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
