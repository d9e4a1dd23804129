"""The host's walks of a sandbox's root (`termgym.sandbox._fscopy`), which copy the agent's
work out and files in: every path resolves inside the root, whatever the agent's links say.

A link's target starting with "//" is the host's root to a lookup relative to a folder's
descriptor; pathlib keeps that "//" as one part of a path. Before the walks split paths
themselves, an agent's link to "//HOST-FOLDER" carried both walks onto the host: the copy
out read the host's files, the copy in wrote there (as root). And a walk that opens what
the agent's running processes may swap (live-state grading) must never wait on it.
"""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from termgym.errors import SandboxError
from termgym.sandbox import CopyLimits
from termgym.sandbox._fscopy import export_tree, import_tree


def _names_and_contents(archive: bytes) -> dict[str, bytes]:
    found = {}
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for member in tar:
            handle = tar.extractfile(member) if member.isfile() else None
            found[member.name] = handle.read() if handle is not None else b""
    return found


@pytest.mark.parametrize("slashes", ["/", "//", "///"])
def test_an_agents_link_is_followed_inside_the_root_however_many_slashes_begin_it(
    tmp_path: Path, slashes: str
) -> None:
    root, host = tmp_path / "root", tmp_path / "host"
    (root / "app").mkdir(parents=True)
    host.mkdir()
    (host / "tool").write_text("host only\n")
    (root / "app" / "out").symlink_to(slashes + str(host).lstrip("/"))

    out = io.BytesIO()
    export_tree(root, ["/app/out/tool"], out, budget=CopyLimits(bytes=1 << 20).budget())
    assert b"host only" not in out.getvalue()
    assert _names_and_contents(out.getvalue()) == {}  # inside the root the path is missing

    bundle = io.BytesIO()
    with tarfile.open(fileobj=bundle, mode="w") as tar:
        member = tarfile.TarInfo("app/out/planted")
        member.size = 4
        tar.addfile(member, io.BytesIO(b"mine"))
    bundle.seek(0)
    import_tree(root, bundle)
    assert sorted(p.name for p in host.iterdir()) == ["tool"]  # nothing written on the host
    inside = root / str(host).lstrip("/") / "planted"  # where the link points in the root
    assert inside.read_bytes() == b"mine"


def test_a_file_swapped_for_a_fifo_as_the_copy_looks_at_it_neither_holds_nor_travels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In live-state grading the agent's processes still run while its work is copied out:
    one that swaps a file for a fifo between the walk's look and its open would hold the
    open (and the grading) until something wrote to the fifo. Played here by a look that
    still sees the file the fifo replaced."""
    import os
    import stat
    import threading

    import termgym.sandbox._fscopy as fscopy

    root = tmp_path / "root"
    (root / "app").mkdir(parents=True)
    (root / "app" / "kept.txt").write_text("kept\n")
    os.mkfifo(root / "app" / "swapped")
    real = os.stat

    def looked(name: object, *args: object, **kwargs: object) -> os.stat_result:
        info = real(name, *args, **kwargs)  # type: ignore[arg-type]
        if name == "swapped":  # a regular file when looked at; a fifo by the open
            return os.stat_result((stat.S_IFREG | 0o644, *tuple(info)[1:]))
        return info

    monkeypatch.setattr(fscopy.os, "stat", looked)
    out = io.BytesIO()
    done = threading.Event()

    def copy() -> None:
        export_tree(root, ["/app"], out, budget=CopyLimits(bytes=1 << 20).budget())
        done.set()

    thread = threading.Thread(target=copy, daemon=True)
    thread.start()
    thread.join(timeout=30)
    if not done.is_set():  # let the hung open go before failing
        with open(root / "app" / "swapped", "wb"):
            pass
    assert done.is_set(), "the copy held on the fifo"
    assert _names_and_contents(out.getvalue()) == {"app": b"", "app/kept.txt": b"kept\n"}


def _archive(*members: tuple[str, bytes, str]) -> io.BytesIO:
    """A tar of (name, kind, content or link target): kind "dir", "file" or "sym"."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, kind, content in members:
            member = tarfile.TarInfo(name)
            if kind == "dir":
                member.type, member.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(member)
            elif kind == "sym":
                member.type, member.linkname = tarfile.SYMTYPE, content.decode()
                tar.addfile(member)
            else:
                member.size = len(content)
                tar.addfile(member, io.BytesIO(content))
    out.seek(0)
    return out


def test_a_folder_an_archive_replaces_is_walked_afresh_by_the_members_after_it(
    tmp_path: Path,
) -> None:
    """The unpacking holds the folders its members land in; a member that replaces one (a
    folder turned into a link) must send the members after it where a fresh walk would:
    through the new link, inside the root, not into the folder it removed."""
    root = tmp_path / "root"
    root.mkdir()
    import_tree(
        root,
        _archive(
            ("app/b", "dir", b""),
            ("app/b/first", "file", b"1"),
            ("app/b", "sym", b"../kept"),
            ("app/b/second", "file", b"2"),
            ("app/b/deeper/third", "file", b"3"),
        ),
    )
    assert (root / "app" / "b").is_symlink()
    assert (root / "kept" / "second").read_bytes() == b"2"
    assert (root / "kept" / "deeper" / "third").read_bytes() == b"3"
    assert sorted(p.name for p in (root / "kept").iterdir()) == ["deeper", "second"]


def test_a_folder_turned_into_a_file_stops_the_members_below_it(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    members = [("app/d", "dir", b""), ("app/d/f", "file", b"1"), ("app/d", "file", b"now a file")]
    with pytest.raises(SandboxError, match="app/d/g"):
        import_tree(root, _archive(*members, ("app/d/g", "file", b"2")))
    assert (root / "app" / "d").read_bytes() == b"now a file"


def test_an_archive_that_goes_back_to_folders_it_left_lands_whole(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    members = []
    for index in range(100):  # a hundred folders, each visited twice, far apart
        members.append((f"app/d{index}/f", "file", b"%d" % index))
    for index in range(100):
        members.append((f"app/d{index}/g", "file", b"again %d" % index))
    import_tree(root, _archive(*members))
    for index in range(100):
        assert (root / "app" / f"d{index}" / "f").read_bytes() == b"%d" % index
        assert (root / "app" / f"d{index}" / "g").read_bytes() == b"again %d" % index
