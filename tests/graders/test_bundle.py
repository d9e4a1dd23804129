"""What of the agent's work goes into a verifier (`termgym.grading._bundle.write_bundle`):
nothing below one of the work's symlinks, which would land wherever that symlink points in
the verifier, whatever name the symlink travels under."""

from __future__ import annotations

import io
import tarfile

from termgym.grading._bundle import GradingFolder, write_bundle


def _work(*members: tuple[str, bytes, str]) -> io.BytesIO:
    """A work archive as docker's export makes one: (name, type, link target) per member;
    a second name of any non-folder (a symlink's too) is a hard link to the first."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, kind, target in members:
            member = tarfile.TarInfo(name)
            member.type, member.linkname = kind, target
            data = b"planted\n" if kind == tarfile.REGTYPE else b""
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
    out.seek(0)
    return out


def _bundled(work: io.BytesIO) -> list[str]:
    bundle = io.BytesIO()
    folder = GradingFolder("/var/lib/termgym-verifier/" + "0" * 32)
    write_bundle(bundle, folder, work=work, task_graders=None, files={}, manifest={})  # type: ignore[arg-type]
    with tarfile.open(fileobj=io.BytesIO(bundle.getvalue())) as tar:
        return [m.name for m in tar if m.name.startswith("app")]


def test_nothing_below_a_hard_link_to_a_symlink_goes_into_the_verifier() -> None:
    """`ln -s /usr/local/bin /app/a; ln -P /app/a /app/out`, with /app/out/tool a declared
    state path: docker's archive stores app/out as a hard link to the symlink app/a, and the
    copy of app/out/tool, taken through it, would be unpacked through it again."""
    work = _work(
        ("app", tarfile.DIRTYPE, ""),
        ("app/a", tarfile.SYMTYPE, "/usr/local/bin"),
        ("app/out", tarfile.LNKTYPE, "app/a"),
        ("app/again", tarfile.LNKTYPE, "app/out"),  # a third name: a link to the link
        ("app/out/tool", tarfile.DIRTYPE, ""),
        ("app/out/tool/planted", tarfile.REGTYPE, ""),
        ("app/again/x", tarfile.REGTYPE, ""),
        ("app/kept", tarfile.REGTYPE, ""),
    )
    assert _bundled(work) == ["app", "app/a", "app/out", "app/again", "app/kept"]


def test_a_hard_link_to_what_was_left_out_is_left_out_too() -> None:
    """Unpacked, a hard link names whatever the verifier holds at its target's path: a file
    of the image's, root's, where the work's copy was left out below a symlink."""
    work = _work(
        ("app", tarfile.DIRTYPE, ""),
        ("app/out", tarfile.SYMTYPE, "/usr/bin"),
        ("app/out/python3", tarfile.REGTYPE, ""),
        ("app/copy", tarfile.LNKTYPE, "app/out/python3"),
        ("app/first", tarfile.REGTYPE, ""),
        ("app/second", tarfile.LNKTYPE, "app/first"),
    )
    assert _bundled(work) == ["app", "app/out", "app/first", "app/second"]
