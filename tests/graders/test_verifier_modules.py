"""The verifier's modules import one another by the names they have in a verifier
(`termgym_nest`, `termgym_kernel` ...), so each import must find the host's file there, and
never a file of the agent's of the same name.

In a grading folder every module the runner's files import is there beside them. In snapshot
grading the tests' interpreter reads the agent's site-packages before the grading folder:
a termgym module it imports that is not pinned to the folder (`termgym_snapshot.PINNED`)
would be the agent's `termgym_kernel.py`, say, run as root in the tests' process. In a
zygote, each module comes on its stdin before the module that imports it.
"""

from __future__ import annotations

import ast
from pathlib import Path

from termgym.grading._bundle import SUPPORT
from termgym.verifier import INJECTED, SNAPSHOT, ZYGOTE_MODULES

FILES = {name.removesuffix(".py"): path for name, path in INJECTED.items()}
"""Each verifier module's name there and its file here."""


def _imports(path: Path) -> set[str]:
    """The termgym modules `path` imports anywhere (a function's own imports too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name.partition(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module.partition(".")[0])
    return {name for name in found if name.startswith("termgym_")}


def _closure(names: set[str]) -> set[str]:
    """`names` and every termgym module they import, and those import, ..."""
    seen, todo = set(names), list(names)
    while todo:
        for name in _imports(FILES[todo.pop()]) - seen:
            seen.add(name)
            todo.append(name)
    return seen


def _pinned() -> set[str]:
    for node in ast.parse(SNAPSHOT.read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "PINNED":
            return set(ast.literal_eval(node.value))
    raise AssertionError(f"expected PINNED in {SNAPSHOT}")


def test_every_module_a_verifier_module_imports_is_one_the_host_injects() -> None:
    imported = set().union(*(_imports(path) for path in FILES.values()))
    assert imported <= set(FILES) | set(ZYGOTE_MODULES), imported - set(FILES)


def test_every_module_the_runners_files_import_is_in_every_grading_folder() -> None:
    folder = {name.removesuffix(".py") for name in SUPPORT}
    assert _closure(folder) == folder


def test_every_termgym_module_the_tests_import_on_a_snapshot_is_pinned_to_the_folder() -> None:
    pinned = _pinned()
    termgyms = {name for name in pinned if name.startswith("termgym_")}
    assert _closure(termgyms) - pinned == set()


def test_a_zygote_gets_each_module_before_the_module_that_imports_it() -> None:
    names = list(ZYGOTE_MODULES)
    for index, (name, path) in enumerate(ZYGOTE_MODULES.items()):
        assert _imports(path) <= set(names[:index]), name
