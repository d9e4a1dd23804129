"""Find tests that run the agent's code inside the test process itself.

In `clean` protection an imported task's pytest runs in-process in the verifier as root,
and only the programs the tests *start* run as the agent's user. A test that imports the
agent's module (`sys.path.append("/app"); from solution import f`, `spec_from_file_location`
+ `exec_module`, `runpy`), evaluates text the agent wrote (`eval`, `exec`), or unpickles a
file the agent left (`pickle.load`, `joblib.load`, `torch.load(weights_only=False)`, an
MLflow model) would run the agent's code as root inside the process that records the
verdict: it could forge the outcomes or read the hidden tests. Such tasks are imported as
`agent-user` (the whole script runs as the agent's user, the trust the original harness
gives it), with the line that decided it. The verifier also refuses, at run time, to
execute a file the agent owns inside a clean pytest (`termgym/verifier/imported.py`), for
what this scan cannot see.
"""

from __future__ import annotations

import re
from pathlib import Path

_LOADS = (
    (re.compile(r"\bspec_from_file_location\s*\("), "imports a module from a file path"),
    (re.compile(r"\bSource(?:less)?FileLoader\s*\("), "imports a module from a file path"),
    (re.compile(r"\bexec_module\s*\("), "executes a module it loaded"),
    (re.compile(r"\brunpy\.run_(?:path|module)\s*\("), "runs a module in-process"),
    (re.compile(r"\bimport_module\s*\("), "imports a module by name at run time"),
    (re.compile(r"(?<![\w.])__import__\s*\("), "imports a module by name at run time"),
    (re.compile(r"(?<![\w.])(?:exec|eval)\s*\("), "evaluates text as Python"),
    (re.compile(r"\b(?:c?pickle|dill|cloudpickle|joblib|shelve)\.(?:load|loads|open)\s*\("),
     "unpickles data (unpickling runs code)"),
    (re.compile(r"\bread_pickle\s*\("), "unpickles data (unpickling runs code)"),
    (re.compile(r"allow_pickle\s*=\s*True"), "unpickles data (unpickling runs code)"),
    (re.compile(r"weights_only\s*=\s*False"), "unpickles data (unpickling runs code)"),
    (re.compile(r"\bmlflow\.[\w.]*load_model\s*\("), "loads a pickled model"),
    (re.compile(r"\byaml\.(?:unsafe_load|load)\s*\([^)]*Loader\s*=\s*(?:yaml\.)?(?:Unsafe)?Loader\b"),
     "loads YAML with Python objects"),
)  # fmt: skip
"""What in a test file runs code (or text) the agent may have written, and how to say so."""

_SYS_PATH = re.compile(r"\bsys\.path\.(?:append|insert|extend)\s*\(([^\n]*)")
_OWN = re.compile(r"__file__|\$?TEST_DIR|[\"']/tests\b")
"""A sys.path entry that is the tests' own folder is not the agent's."""


_CHDIR = re.compile(r"^os\.chdir\s*\(([^\n]*)")
_IMPORT = re.compile(r"^(?:from\s+[\w.]+\s+import\b|import\s+\w)")
"""A module-level `os.chdir` into a folder of the agent's, then an import: `python -m pytest`
(the test scripts' usual line) puts the working folder on sys.path, so the import finds the
agent's module there (largest-eigenval: `os.chdir("/app")`, then `from eigen import ...`)."""


def _scan(text: str, name: str) -> str:
    changed_into = False
    for number, line in enumerate(text.splitlines(), 1):
        code = line.split("#", 1)[0]
        if not code.strip():
            continue
        moved = _CHDIR.search(code)
        if moved and not _OWN.search(moved.group(1)):
            changed_into = True
        elif changed_into and _IMPORT.search(code):
            return (
                f"{name} line {number} imports from the folder it changed into "
                f"(`{code.strip()[:100]}`): the agent's module would be imported into the "
                "test process"
            )
        path_change = _SYS_PATH.search(code)
        if path_change and not _OWN.search(path_change.group(1)):
            return (
                f"{name} line {number} puts a folder of the agent's on sys.path "
                f"(`{code.strip()[:100]}`): its modules would be imported into the test process"
            )
        for pattern, what in _LOADS:
            if pattern.search(code):
                return f"{name} line {number} {what} (`{code.strip()[:100]}`)"
    return ""


def in_process_code(tests: Path | None) -> str:
    """Why the tests would run the agent's code inside the test process ("" if they
    would not): the first line that does, in the tests' Python files."""
    if tests is None or not tests.is_dir():
        return ""
    for path in sorted(tests.rglob("*.py")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        why = _scan(text, path.relative_to(tests.parent).as_posix())
        if why:
            return why
    return ""
