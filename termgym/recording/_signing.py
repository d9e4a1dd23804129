"""Which recordings this machine wrote: an HMAC under a key that never leaves it.

A recording is a JSONL file anyone can write: a run folder copied from elsewhere, an
episode imported from ATIF (another producer's, or termgym's own export edited to claim a
pass), a file edited by hand. Reports count an episode as graded only when its recording
proves it was written here, by termgym's writer: `EpisodeWriter` keeps an HMAC-SHA256 of
every line it writes under this machine's recording key and ends the file with it, on a
`signature` line (`signature_line`). The key is made once, at random, in the user's data
folder (`TERMGYM_RECORDING_KEY` names another file), readable by the user alone; no sandbox
sees it (neither backend binds the host's home into one), so no agent can sign.

`provenance(data)` says what a file's bytes are: `signed` (here, unchanged), `unsigned`
(no signature: imported, written before recordings were signed, or still being written),
`altered` (signed here, changed since) or `elsewhere` (signed under another machine's key).
What a signature proves is where the file was written, by termgym's writer, and that it is
unchanged: not which verifier graded it (the writer is termgym's own code, called by a run
or by a program of the user's on this machine).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import tempfile
from pathlib import Path
from typing import Literal

Provenance = Literal["signed", "unsigned", "altered", "elsewhere"]
PROVENANCES: tuple[Provenance, ...] = ("signed", "unsigned", "altered", "elsewhere")
SIGNATURE = "signature"
"""The `type` of a recording's last line, which signs every byte before it."""
KEY_ENV = "TERMGYM_RECORDING_KEY"
"""A file holding this machine's recording key, in place of the default one."""

_keys: dict[Path, bytes] = {}


def key_path() -> Path:
    """Where this machine's recording key is (made on first use)."""
    named = os.environ.get(KEY_ENV)
    if named:
        return Path(named)
    home = os.path.expanduser("~")
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share")
    return Path(data) / "termgym" / "recording.key"


def _fallback() -> Path:
    """The key's place when the user's data folder cannot be written (a read-only home)."""
    return Path(tempfile.gettempdir()) / f"termgym-{os.getuid()}" / "recording.key"


def recording_key() -> bytes:
    """This machine's recording key: 32 random bytes, made on first use (mode 0600)."""
    path = key_path()
    if path in _keys:
        return _keys[path]
    for where in (path, _fallback()):
        try:
            key = _load_or_make(where)
        except OSError:
            continue
        _keys[path] = key
        return key
    raise OSError(f"expected to read or make a recording key at {path} or {_fallback()}")


def _load_or_make(path: Path) -> bytes:
    try:
        data = path.read_bytes()
        if len(data) >= 32:
            return data
    except FileNotFoundError:
        pass
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = os.urandom(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # made meanwhile by another process: that one is the key
        return path.read_bytes()
    with os.fdopen(fd, "wb") as handle:
        handle.write(key)
    return key


def key_id(key: bytes) -> str:
    """Names a key without telling it (so a file signed elsewhere says so)."""
    return hashlib.sha256(b"termgym recording key\0" + key).hexdigest()[:16]


def new_mac() -> hmac.HMAC:
    """An HMAC to feed a recording's bytes to, line by line, as they are written."""
    return hmac.new(recording_key(), digestmod=hashlib.sha256)


def signature_line(mac: hmac.HMAC) -> bytes:
    """The last line of a recording whose bytes so far `mac` was fed."""
    line = {"type": SIGNATURE, "key": key_id(recording_key()), "hmac": mac.hexdigest()}
    return json.dumps(line, separators=(",", ":")).encode("ascii") + b"\n"


def provenance(data: bytes) -> Provenance:
    """What a recording's bytes prove (module docstring)."""
    body = data[:-1] if data.endswith(b"\n") else data
    cut = body.rfind(b"\n") + 1
    last = body[cut:]
    if not last.startswith(b'{"type":"' + SIGNATURE.encode() + b'"'):
        return "unsigned"
    try:
        line = json.loads(last)
        signed, mac = str(line["key"]), str(line["hmac"])
    except (ValueError, KeyError, TypeError):
        return "unsigned"
    key = recording_key()
    if signed != key_id(key):
        return "elsewhere"
    expected = hmac.new(key, data[:cut], hashlib.sha256).hexdigest()
    return "signed" if hmac.compare_digest(expected, mac) else "altered"


def signed_here(data: bytes) -> bytes:
    """A recording's bytes signed with this machine's key in place of any signature they
    had: for recordings this machine's own runs wrote elsewhere (a Ray worker's episodes,
    shipped home to the driver), which the driver vouches for as its run's."""
    body = data if data.endswith(b"\n") or not data else data + b"\n"
    last = body[body.rfind(b"\n", 0, len(body) - 1) + 1 :]
    if last.startswith(b'{"type":"' + SIGNATURE.encode() + b'"'):
        body = body[: len(body) - len(last)]
    mac = new_mac()
    mac.update(body)
    return body + signature_line(mac)


WHY_UNVERIFIED: dict[Provenance, str] = {
    "unsigned": "not written by a run on this machine (no signature)",
    "altered": "changed after it was written (its signature does not match)",
    "elsewhere": "written on another machine (signed under another key)",
}
"""Why an episode whose recording proves nothing is not counted as graded."""
