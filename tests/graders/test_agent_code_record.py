"""The tests' interpreter's record of the agent's code (snapshot grading), in a real one.

Each case starts a fresh Python with the grading's two injected modules, a listing of what
the agent changed laid out the way the host lays it out, and real modules and bytecode on
disk; what the import ran and what was recorded are read back.
"""

from __future__ import annotations

import importlib.util
import json
import os
import py_compile
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from termgym.verifier import INJECTED

IMPORTER = textwrap.dedent(
    """
    import json, sys
    sys.path[:0] = [sys.argv[1], sys.argv[2]]
    import termgym_agentcode, termgym_snapshot as runtime
    sys.dont_write_bytecode = True
    termgym_agentcode.watch_agent_code(runtime.changed_files(sys.argv[3]), sys.argv[4])
    if len(sys.argv) > 5:  # something writes a module after the listing was laid out
        open(sys.argv[5], "w").write("WORD = 'written during grading'\\n")
    import greeting
    print(json.dumps(greeting.WORD))
    """
)


def _injected(tmp_path: Path) -> Path:
    folder = tmp_path / "injected"
    folder.mkdir()
    for name in ("termgym_agentcode.py", "termgym_snapshot.py"):  # as the verifier has them
        (folder / name).write_text(INJECTED[name].read_text())
    return folder


def _after_the_clock_moved_on(folder: Path) -> None:
    """Wait until the clock is past every status-change time in `folder` (timestamps are
    coarse: a file and the listing made in one tick would share one), as the host lays the
    listing out long after the agent's last write."""
    newest = max((p.stat().st_ctime for p in folder.rglob("*")), default=0.0)
    while time.time() <= newest + 0.02:
        time.sleep(0.005)


def _import(
    tmp_path: Path, site: Path, listed: list[Path], *late: Path, header: tuple[str, ...] = ()
) -> tuple[str, list]:
    _after_the_clock_moved_on(site)
    listing = tmp_path / "termgym_changed.txt"
    listing.write_text("".join(f"{line}\n" for line in (*header, *listed)))
    record = tmp_path / "agent-code.txt"
    done = subprocess.run(
        [sys.executable, "-c", IMPORTER, str(_injected(tmp_path)), str(site), str(listing),
         str(record), *map(str, late)],
        capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": ""},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    loaded = record.read_text().split() if record.exists() else []
    return json.loads(done.stdout), loaded


def _forged_bytecode(source: Path, body: str) -> Path:
    """Bytecode that claims to be `source`'s (its mtime and size in the header) but runs
    `body`: what a program of the agent's can leave in the cache beside a clean module."""
    forged = source.with_name("forged_src.py")
    forged.write_text(body.ljust(source.stat().st_size - 1) + "\n")
    stat = source.stat()
    os.utime(forged, (stat.st_atime, stat.st_mtime))
    cached = Path(importlib.util.cache_from_source(str(source)))
    py_compile.compile(str(forged), cfile=str(cached), doraise=True)
    forged.unlink()
    header = cached.read_bytes()
    assert int.from_bytes(header[8:12], "little") == int(stat.st_mtime)
    return cached


def test_the_agents_bytecode_beside_a_clean_module_is_not_loaded(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    source = site / "greeting.py"
    source.write_text("WORD = 'Hello'  # a module of the image's\n")
    cached = _forged_bytecode(source, "WORD = 'forged'")
    # without the record, Python would load the forged bytecode: the attack is real
    plain = subprocess.run(
        [sys.executable, "-c", "import greeting; print(greeting.WORD)"],
        capture_output=True, text=True, cwd=site, check=True,
    )  # fmt: skip
    assert plain.stdout.strip() == "forged"
    word, loaded = _import(tmp_path, site, [cached])
    assert word == "Hello"  # compiled from the clean source
    assert loaded == []  # nothing of the agent's ran, so nothing marks the verdict


def test_the_agents_module_is_recorded_with_its_bytecode_or_without(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    source = site / "greeting.py"
    source.write_text("WORD = 'Hi'\n")
    cached = Path(importlib.util.cache_from_source(str(source)))
    py_compile.compile(str(source), cfile=str(cached), doraise=True)
    word, loaded = _import(tmp_path, site, [source, cached])
    assert word == "Hi"
    assert str(source) in loaded


def test_a_module_written_after_the_listing_is_the_agents(tmp_path: Path) -> None:
    """A program the tests start writes a module the tests import later: it is in no
    listing, yet it is recorded (changed after the listing was laid out)."""
    site = tmp_path / "site"
    site.mkdir()
    word, loaded = _import(tmp_path, site, [], site / "greeting.py")
    assert word == "written during grading"
    assert loaded == [str(site / "greeting.py")]


def test_a_clean_module_is_not_recorded(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "greeting.py").write_text("WORD = 'Hello'\n")
    word, loaded = _import(tmp_path, site, [])
    assert (word, loaded) == ("Hello", [])


def test_a_listing_that_is_not_the_whole_of_it_counts_every_module_closed(tmp_path: Path) -> None:
    """200,000 empty files the agent made in a folder that sorts first would fill the
    host's bounded listing and push its own module out of it: the listing then says so, and
    every module counts as the agent's."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "greeting.py").write_text("WORD = 'Hello'  # not listed\n")
    word, loaded = _import(tmp_path, site, [], header=("everything",))
    assert word == "Hello" and str(site / "greeting.py") in loaded, loaded


def test_a_module_written_after_the_host_began_its_listing_is_the_agents(tmp_path: Path) -> None:
    """A live agent's processes still write while the host lists what changed and the
    verifier starts: what changed since the listing was begun counts, though it was written
    before the listing was laid out in the verifier."""
    site = tmp_path / "site"
    site.mkdir()
    began = time.time()
    _after_the_clock_moved_on(site)  # the host's clock moves on past `began`
    while time.time() <= began + 0.02:
        time.sleep(0.005)
    (site / "greeting.py").write_text("WORD = 'written while the host listed'\n")
    word, loaded = _import(tmp_path, site, [], header=(f"since {began!r}",))
    assert loaded == [str(site / "greeting.py")], (word, loaded)


def test_the_host_says_when_its_listing_is_not_the_whole_of_it(monkeypatch) -> None:  # noqa: ANN001
    import termgym.grading._runner as runner
    from termgym.sandbox import Change, Changes

    class Frozen:
        def snapshot_handle(self) -> str:
            return "handle"

    listed = Changes((Change("/0/1", "added", "file"),), total=1, exact=True)
    for changes, closed in ((listed, False), (Changes(listed.entries, 2, True), True),
                            (Changes(listed.entries, 1, False), True), (None, True)):  # fmt: skip
        monkeypatch.setattr(runner, "list_changes", lambda *a, _c=changes, **k: _c)
        before = time.time()
        handle, listing = runner._snapshot_of(Frozen())  # type: ignore[arg-type]
        lines = listing.decode().splitlines()
        assert handle == "handle" and lines[0].startswith("since ")
        assert before - 1 <= float(lines[0].split()[1]) <= time.time()
        assert ("everything" in lines) is closed, (changes, lines)
        assert ("/0/1" in lines) is (changes is not None)


def test_the_agents_package_behind_a_link_of_a_folder_is_recorded(tmp_path: Path) -> None:
    """The agent makes a folder of its own and links a package name of the site to it: the
    path the import takes (through the link) is in no listing and older than it, the file
    behind it is the agent's."""
    site, own = tmp_path / "site", tmp_path / "opt" / "evilpkg"
    site.mkdir()
    own.mkdir(parents=True)
    (own / "__init__.py").write_text("WORD = 'the agent s own package'\n")
    (site / "greeting").symlink_to(own)
    word, loaded = _import(tmp_path, site, [site / "greeting", own, own / "__init__.py"])
    assert word == "the agent s own package"
    assert str(own / "__init__.py") in loaded or str(site / "greeting" / "__init__.py") in loaded
