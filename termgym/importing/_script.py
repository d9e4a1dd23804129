"""Read a test script line by line: what moves to build time, what may run as root in the
verifier, and what makes the script run as the agent's user.

Terminal-Bench's and Harbor's test scripts are bash, run as root where the agent worked.
termgym runs them in the clean verifier, where nothing of the agent's may run as root
(docs/security.md). So every line is classified:

- install: apt-get, pip, `uv add`, `uv pip install` (also behind `sudo`, `env` or
  `VAR=x`, as in `DEBIAN_FRONTEND=noninteractive apt-get install -y expect`): moved to
  the image build (grading runs offline); uv's installer, `uv init`, `source
  $HOME/.local/bin/env` are dropped (pytest runs from the image's python3 instead of a uv
  project).
- pytest: `pytest`, `python -m pytest`, `uv run [--with X] pytest`, `uvx [-w X] pytest`
  (Harbor's template; its `-w` packages install at build time), and Terminal-Bench's shared
  run-uv-pytest.sh: rewritten to `$TERMGYM_PYTEST`, an in-process pytest whose tests'
  programs run as the agent's user and whose outcomes are recorded where only root writes.
- plain shell: comments (a `#` that starts a word outside quotes ends the command: a
  comment is never read as one), cd, export, set, echo/printf, assignments, if/then/else/fi on
  `[ ... ]` tests, exit, mkdir, writing a reward to /logs/verifier: kept, run as root.
- anything else may run the agent's programs: then the script keeps its lines but runs,
  whole, as the agent's user (`protection: agent-user`).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from termgym.errors import ImportRefused

_NETWORK = re.compile(r"\b(git\s+clone|wget\s|curl\s|pip\s+download|npm\s+install|go\s+get)")
_LOCAL = re.compile(r"localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1\]")
_UV_INSTALLER = re.compile(r"^(curl|wget)\b.*astral\.sh/uv.*\|\s*(ba)?sh\b")
_DROP = (
    re.compile(r"^(source|\.)\s+\"?\$HOME/\.local/bin/env\"?$"),
    re.compile(r"^(source|\.)\s+\"?\$HOME/\.cargo/env\"?$"),
    re.compile(r"^uv\s+(init|sync)\b.*$"),
    re.compile(r"^(source|\.)\s+\"?\$TEST_DIR\"?/setup-uv-pytest\.sh$"),
)
_VENV = re.compile(r"^(uv\s+venv|python3?\s+-m\s+venv)(\s[^;&|`$()]*)?$")
_VENV_VALUED = ("--python", "-p", "--prompt", "--index-url", "--cache-dir")
_ACTIVATE = re.compile(r"^(?:source|\.)\s+\"?([^\s;&|`$()\"]+)/bin/activate\"?$")
_PIP_VALUED = ("-i", "--index-url", "--extra-index-url", "-f", "--find-links", "-c",
               "--constraint", "--python", "-p", "--target", "-t", "--prefix")  # fmt: skip
"""Install options that take a value (the value is not a package)."""
_ENV_PREFIX = r"(?:sudo\s+)?(?:env\s+)?(?:[A-Za-z_][A-Za-z0-9_]*=\S*\s+)*"
"""`sudo`, `env` and `VAR=x` before a command (`DEBIAN_FRONTEND=noninteractive apt-get ...`)."""
_APT = re.compile(rf"^{_ENV_PREFIX}apt(-get)?\s+(?:-\S+\s+)*(update|install)\b(.*)$")
_PIP = re.compile(
    rf"^{_ENV_PREFIX}(uv\s+add|uv\s+pip\s+install|pip3?\s+install|python3?\s+-m\s+pip\s+install)"
    r"\s+(.*)$"
)
_PYTEST = re.compile(
    r"^((?:uv\s+run|uvx)\s+(?:--?[\w-]+(?:[\s=]+[^-\s]\S*)?\s+)*)?(python3?\s+-m\s+)?"
    r"pytest(?=\s|$)"
)
_BEYOND_PYTEST = re.compile(r"[;&|`<>\n]|\$\(")
"""On a pytest line, what would run something beside pytest (another command, a pipe, a
substitution, a redirection): such a line is no pytest line of a clean script."""
_LOADS_CODE = r"(?!(?:LD_\w*|BASH_ENV|ENV|PATH|PYTHON\w*|PERL5\w*|NODE_OPTIONS)=)"
"""Variables that make what runs next load other code (the loader's preload, a shell's
start file, the programs found, Python's and Perl's start-up): set in a clean script, they
would load the agent's code into what runs as root. Their assignments are not safe lines."""
_RUN_UV_PYTEST = re.compile(r"^(bash\s+|sh\s+)?\"?\$TEST_DIR\"?/run-uv-pytest\.sh$")
_SAFE = (
    re.compile(r"^#.*$"),
    re.compile(r"^set\s+[-+][a-zA-Z]+(\s+\w+)?(\s+[-+][a-zA-Z]+)*$"),
    re.compile(r"^cd\s+[^;&|`$()]*$|^cd\s+\"?\$(TEST_DIR|HOME)\"?$"),
    re.compile(rf"^export\s+{_LOADS_CODE}[A-Za-z_][A-Za-z0-9_]*=[^;&|`()]*$"),
    re.compile(rf"^{_LOADS_CODE}[A-Za-z_][A-Za-z0-9_]*=(\$\?|[^;&|`()$]*)$"),
    re.compile(r"^(echo|printf)\b[^;&|`()]*$"),
    re.compile(r"^(if|elif)\s+\[\[?\s[^;&|`()]*\]\]?(\s*&&\s*\[\[?\s[^;&|`()]*\]\]?)*\s*;\s*then$"),
    re.compile(r"^(then|else|fi)$"),
    re.compile(r"^exit(\s+(\d+|\"?\$[A-Za-z_?][A-Za-z0-9_]*\"?))?$"),
    re.compile(r"^mkdir\s+(-p\s+)?[^;&|`()$]*$|^mkdir\s+-p\s+\"?\$TEST_DIR\"?$"),
)


@dataclass(frozen=True)
class ScriptPlan:
    """What a test script becomes.

    Attributes:
        script: The script as the verifier runs it (installs removed, pytest rewritten).
        apt: Debian packages its installs named (installed at build time).
        apt_recommends: Whether apt-get installs them with their Recommends, as the script's
            own lines did (apt's default; False when every install line said
            --no-install-recommends). gcc's Recommends are libc6-dev: a test that compiles C
            needs them.
        pip: Python packages its installs named (installed at build time).
        protection: clean | agent-user.
        why: The first line that made it agent-user.
        notes: What was moved or dropped, for the provenance.
    """

    script: str
    apt: tuple[str, ...] = ()
    apt_recommends: bool = True
    pip: tuple[str, ...] = ()
    protection: str = "clean"
    why: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(line number, text) with backslash continuations joined."""
    out: list[tuple[int, str]] = []
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        if not pending:
            start = number
        if raw.rstrip().endswith("\\"):
            pending += raw.rstrip()[:-1] + " "
            continue
        out.append((start, pending + raw))
        pending = ""
    if pending:
        out.append((start, pending))
    return out


def _code(line: str) -> str:
    """`line` without its comment: from a `#` that starts a word outside quotes ("" for a
    comment line)."""
    quote = ""
    escaped = False
    for index, char in enumerate(line):
        if escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (index == 0 or line[index - 1] in " \t;&|("):
            return line[:index].rstrip()
    return line


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command, comments=True)
    except ValueError:
        return command.split()


def _venv_folder(args: str) -> str:
    """The folder `uv venv ARGS` / `python -m venv ARGS` creates (`.venv` when none given)."""
    words = _words(args)
    positional = []
    skip = False
    for word in words:
        if skip:
            skip = False
        elif word in _VENV_VALUED:
            skip = True
        elif not word.startswith("-"):
            positional.append(word)
    return (positional[0] if positional else ".venv").removeprefix("./").rstrip("/")


def _packages(args: str) -> list[str]:
    """The requirements an install line names: options and their values left out."""
    names = []
    skip = False
    for word in _words(args):
        if skip:
            skip = False
            continue
        if word in _PIP_VALUED:
            skip = True
            continue
        if word.startswith("-") or word in ("install", "update", "&&"):
            continue
        if re.match(r"^\d*[<>]", word):  # a redirection (`> /dev/null`, `2>&1`) is no package
            skip = word in ("<", ">", ">>", "1>", "2>", "&>", "1>>", "2>>")  # the target follows
            continue
        names.append(word)
    return names


def plan_script(text: str, task: str, name: str) -> ScriptPlan:
    """Classify every line of a test script (see the module docstring).

    Raises:
        ImportRefused: the script fetches from the network at test time in a way that
            cannot move to build time (grading runs offline).
    """
    apt: list[str] = []
    apt_lines: list[bool] = []  # per install line: did it say --no-install-recommends
    pip: list[str] = []
    notes: list[str] = []
    out: list[str] = []
    why = ""
    heredoc: str | None = None
    venvs = {".venv"}  # made by a dropped `uv venv NAME`: activating one is dropped too
    for number, line in _logical_lines(text):
        stripped = line.strip()
        if heredoc is not None:
            out.append(line)
            if stripped == heredoc:
                heredoc = None
            continue
        if number == 1 and stripped.startswith("#!"):
            out.append(line)
            continue
        marker = re.search(r"<<-?\s*['\"]?([A-Za-z_][A-Za-z0-9_]*)['\"]?", _code(stripped))
        if marker:
            heredoc = marker.group(1)
        code = _code(stripped)
        if not code:  # blank, or a comment: never a command
            out.append(line)
            continue
        if _UV_INSTALLER.match(code):
            notes.append(
                f"{name} line {number}: uv's installer dropped (pytest runs from the "
                "image's python3, installed at build time)"
            )
            continue
        venv = _VENV.match(code)
        if venv:
            venvs.add(_venv_folder(venv.group(2) or ""))
            notes.append(
                f"{name} line {number}: `{code}` dropped (the tests' packages are "
                "installed into the image's python3 at build time)"
            )
            continue
        activate = _ACTIVATE.match(code)
        if activate and activate.group(1).removeprefix("./").rstrip("/") in venvs:
            notes.append(f"{name} line {number}: `{code}` dropped (its venv was dropped)")
            continue
        if any(p.match(code) for p in _DROP):
            notes.append(f"{name} line {number}: `{code}` dropped (no uv project needed)")
            if "setup-uv-pytest" in code:
                pip.append("pytest")
            continue
        parts = [p.strip() for p in re.split(r"&&|;", code) if p.strip()]
        if parts and all(_APT.match(p) or _PIP.match(p) for p in parts):
            for part in parts:
                apt_match, pip_match = _APT.match(part), _PIP.match(part)
                if apt_match and apt_match.group(2) == "install":
                    apt.extend(_packages(apt_match.group(3)))
                    apt_lines.append("--no-install-recommends" in part)
                elif pip_match:
                    pip.extend(_packages(pip_match.group(2)))
            index = re.search(r"(--index-url|--extra-index-url|-i|--find-links|-f)[\s=]", code)
            notes.append(
                f"{name} line {number}: `{code}` moved to build time"
                + (f" (its {index.group(1)} dropped: packages come from PyPI)" if index else "")
            )
            continue
        if _RUN_UV_PYTEST.match(code):
            out.append(line.replace(code, '$TERMGYM_PYTEST "$TEST_DIR/test_outputs.py" -rA'))
            pip.append("pytest")
            continue
        pytest_match = _PYTEST.match(code)
        if pytest_match:
            indent = line[: len(line) - len(line.lstrip())]
            rest = code[pytest_match.end() :]
            out.append(f"{indent}$TERMGYM_PYTEST{rest}")
            with_pkgs = re.findall(r"(?:--with|-w)[\s=]+(\S+)", pytest_match.group(1) or "")
            pip.extend(["pytest", *with_pkgs])
            if _BEYOND_PYTEST.search(rest) and not why:  # `pytest ... && bash /app/x.sh`:
                # what follows pytest on its line would run as root, unread
                why = f"{name} line {number}: `{code[:120]}`"
            continue
        if _NETWORK.search(code) and not _LOCAL.search(code) and not heredoc:
            raise ImportRefused(
                f"{task}: {name} line {number} reaches the network at test time "
                f"(`{code[:120]}`): grading runs offline and this step cannot move to "
                "build time"
            )
        out.append(line)
        if not any(p.match(code) for p in _SAFE) and not why:
            why = f"{name} line {number}: `{code[:120]}`"
    # A script it writes (a heredoc, an echo into a file) may fetch when run; comments do not.
    kept = "\n".join(_code(line.strip()) for line in out)
    hit = _NETWORK.search(kept)
    if hit and why and not _LOCAL.search(kept):
        raise ImportRefused(
            f"{task}: {name} reaches the network at test time (`{hit.group(0).strip()}` in a "
            "script it writes): grading runs offline"
        )
    return ScriptPlan(
        script="\n".join(out) + "\n",
        apt=tuple(dict.fromkeys(apt)),
        apt_recommends=not (apt_lines and all(apt_lines)),
        pip=tuple(dict.fromkeys(pip)),
        protection="agent-user" if why else "clean",
        why=why,
        notes=tuple(notes),
    )
