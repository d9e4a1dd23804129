"""Images: build the base image and task images, and export root filesystems for bubblewrap."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from termgym.errors import BackendUnavailable, ImageBuildFailed, ImageError
from termgym.images._cachelock import clear, lock_name, making, settle, staging_for
from termgym.images._engine import docker_client
from termgym.images._labels import owner_labels
from termgym.isolation import ID_COUNT, UID_BASE, mapped

BASE_IMAGE = "termgym/base:bookworm"
"""The image tasks run in unless they name another (built by `termgym image build-base`)."""

SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
BASE_PACKAGES: tuple[str, ...] = (
    "bash", "coreutils", "procps", "tmux", "less", "ca-certificates",
    "python3", "python3-pytest", "git", "make", "sqlite3", "jq", "vim", "nano",
)  # fmt: skip
"""Installed on top of a minimal Debian; python3 brings the sqlite3 module, pytest runs graders,
vim and nano are there for the tasks that edit a file in an editor."""

RECIPE_LABEL = "io.termgym.recipe"

_BASE_DOCKERFILE = """\
FROM {parent}
LABEL {label}="{recipe}"
ENV LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=xterm-256color PYTHONDONTWRITEBYTECODE=1
WORKDIR /app
CMD ["bash"]
"""

_REGISTRY_PARENT_STEPS = """\
RUN apt-get update && apt-get install -y --no-install-recommends {packages} \\
    && rm -rf /var/lib/apt/lists/*
"""

Log = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def cache_dir() -> Path:
    """Folder for exported root filesystems, debootstrap output and bwrap episodes.

    TERMGYM_CACHE when set; as root, /var/cache/termgym (a bwrap sandbox's root is an
    unprivileged host uid, which must be able to reach its root filesystem: root's home is
    closed to it); otherwise ~/.cache/termgym.
    """
    root = os.environ.get("TERMGYM_CACHE")
    if root:
        return Path(root)
    if os.geteuid() == 0:
        return Path("/var/cache/termgym")
    return Path.home() / ".cache" / "termgym"


def recipe_hash() -> str:
    """A short hash of everything that decides the base image's content."""
    recipe = {
        "suite": SUITE,
        "mirror": MIRROR,
        "packages": sorted(BASE_PACKAGES),
        "dockerfile": _BASE_DOCKERFILE,
        "registry_steps": _REGISTRY_PARENT_STEPS,
    }
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:16]


def _image_or_none(client: Any, ref: str) -> Any:
    import docker.errors

    try:
        return client.images.get(ref)
    except docker.errors.ImageNotFound:
        return None


def build_base(*, force: bool = False, log: Log = _quiet) -> str:
    """Build `termgym/base:bookworm` unless an image of the same recipe is already tagged.

    Uses a registry's `debian:bookworm` when one can be pulled; otherwise makes a root
    filesystem with debootstrap from Debian's mirror and `docker import`s it.

    Returns:
        The image id.

    Raises:
        BackendUnavailable: no Docker engine answers (see `ensure_base_rootfs` for bwrap).
        ImageError: neither a registry nor debootstrap could provide Debian.
    """
    client = docker_client()
    recipe = recipe_hash()
    existing = _image_or_none(client, BASE_IMAGE)
    if existing is not None and not force and existing.labels.get(RECIPE_LABEL) == recipe:
        log(f"{BASE_IMAGE} is up to date (recipe {recipe}).")
        return str(existing.id)
    with making(image_lock(BASE_IMAGE)):
        existing = _image_or_none(client, BASE_IMAGE)
        if existing is not None and not force and existing.labels.get(RECIPE_LABEL) == recipe:
            log(f"{BASE_IMAGE} was built meanwhile (recipe {recipe}).")
            return str(existing.id)
        return _build_base(client, recipe, log)


def image_lock(tag: str) -> Path:
    """The lock under which the image `tag` is built (`_cachelock.making`): one build of a
    tag at a time on this machine, whichever process asks."""
    return cache_dir() / "locks" / lock_name(tag)


def _build_base(client: Any, recipe: str, log: Log) -> str:
    parent, steps = _parent_image(client, recipe, log)
    dockerfile = _BASE_DOCKERFILE.format(parent=parent, label=RECIPE_LABEL, recipe=recipe)
    if steps:
        dockerfile = dockerfile.replace("\nLABEL", "\n" + steps + "LABEL", 1)
    log(f"Building {BASE_IMAGE} from {parent} ...")
    _forget_rootfs(BASE_IMAGE)
    image = _build(client, log, fileobj=io.BytesIO(dockerfile.encode()), tag=BASE_IMAGE)
    log(f"Built {BASE_IMAGE} ({image.short_id}).")
    return str(image.id)


def _parent_image(client: Any, recipe: str, log: Log) -> tuple[str, str]:
    """Return (parent image, extra Dockerfile steps): a pulled debian, or an imported rootfs."""
    imported = f"termgym/base-rootfs:{recipe}"
    if _image_or_none(client, imported) is not None:
        return imported, ""
    try:
        client.images.pull("debian", tag=SUITE)
    except Exception as exc:
        log(f"No registry debian:{SUITE} ({type(exc).__name__}); using debootstrap instead.")
    else:
        packages = " ".join(sorted(set(BASE_PACKAGES)))
        return f"debian:{SUITE}", _REGISTRY_PARENT_STEPS.format(packages=packages)
    import_rootfs(client, ensure_base_rootfs(log=log), imported, log)
    return imported, ""


def import_rootfs(client: Any, rootfs: Path, tag: str, log: Log = _quiet) -> None:
    """`docker import` a root filesystem folder as the image `tag` (repository:name)."""
    log(f"Importing {rootfs} as {tag} ...")
    with tempfile.TemporaryDirectory(prefix="termgym-import-") as tmp:
        tarball = Path(tmp) / "rootfs.tar"
        done = subprocess.run(
            ["tar", "-C", str(rootfs), "--numeric-owner", "-cf", str(tarball), "."],
            capture_output=True,
            check=False,
        )
        if done.returncode != 0:
            raise ImageError(f"Could not pack {rootfs}: {done.stderr.decode(errors='replace')}")
        repository, _, name = tag.partition(":")
        client.api.import_image_from_file(str(tarball), repository=repository, tag=name)


def debootstrap_home() -> Path:
    """The folder debootstrap's base root filesystem of this recipe is made in."""
    return cache_dir() / "debootstrap" / recipe_hash()


def ensure_base_rootfs(*, log: Log = _quiet) -> Path:
    """Make (once) the base root filesystem with debootstrap, and return its folder.

    Raises:
        ImageError: debootstrap is missing, we are not root, or the mirror failed.
    """
    home = debootstrap_home()
    rootfs = home / "rootfs"
    if (home / ".complete").exists():
        return rootfs
    with making(home):
        if (home / ".complete").exists():
            return rootfs
        return _debootstrap(home, rootfs, log)


def _debootstrap(home: Path, rootfs: Path, log: Log) -> Path:
    if shutil.which("debootstrap") is None:
        raise ImageError(
            "Expected debootstrap to build the base root filesystem (no registry image could be "
            "pulled), found none on PATH: install it (`apt-get install debootstrap`)."
        )
    if os.geteuid() != 0:
        raise ImageError(
            "debootstrap must run as root to build the base root filesystem; found uid "
            f"{os.geteuid()}. Run `sudo termgym image build-base`, or use a machine whose "
            "Docker can pull debian:bookworm."
        )
    staging = staging_for(home)
    clear(staging)
    staging.mkdir(parents=True)
    log(f"debootstrap {SUITE} into {rootfs} (about a minute) ...")
    argv = [
        "debootstrap", "--variant=minbase", "--include=" + ",".join(BASE_PACKAGES),
        SUITE, str(staging / "rootfs"), MIRROR,
    ]  # fmt: skip
    try:
        done = subprocess.run(argv, capture_output=True, check=False)
        if done.returncode != 0:
            out = done.stdout.decode(errors="replace")[-2000:]
            tail = out + done.stderr.decode(errors="replace")
            raise ImageError(f"debootstrap failed (exit {done.returncode}):\n{tail[-3000:]}")
        _trim_rootfs(staging / "rootfs")
        (staging / ".complete").write_text(recipe_hash())
        settle(staging, home)
    finally:
        clear(staging)  # a failed or interrupted debootstrap: its mounts and files go
    return rootfs


def _trim_rootfs(rootfs: Path) -> None:
    for leftover in ("var/cache/apt/archives", "var/lib/apt/lists"):
        for entry in (rootfs / leftover).glob("*"):
            if entry.is_file():
                entry.unlink()
    (rootfs / "app").mkdir(exist_ok=True)


def build_image(context_dir: Path, tag: str, *, log: Log = _quiet) -> str:
    """Build a task image from the Dockerfile in `context_dir` (normally FROM the base image).

    Returns:
        The image id (docker's layer cache makes a rebuild take a second).

    Raises:
        ImageError: the Dockerfile is missing or the build failed; the message has the log tail.
    """
    context_dir = Path(context_dir)
    _forget_rootfs(tag)
    if not (context_dir / "Dockerfile").is_file():
        raise ImageError(f"Expected a Dockerfile in {context_dir}, found none.")
    client = docker_client(f"Building {tag} from its Dockerfile")
    with making(image_lock(tag)):  # a second build of the tag finds the first's layers
        image = _build(client, log, path=str(context_dir), tag=tag)
    return str(image.id)


_TRANSIENT = re.compile(
    r"Temporary failure (resolving|in name resolution)|Could not resolve|Name or service not "
    r"known|Network is unreachable|Connection (timed out|reset|refused)|Failed to fetch|"
    r"Read timed out|ReadTimeoutError|Max retries exceeded|TLS handshake timeout|i/o timeout|"
    r"50[234] (Service Unavailable|Bad Gateway|Gateway Time-?out)|Hash Sum mismatch|"
    r"no space left on device|failed to register layer|error creating overlay mount",
    re.IGNORECASE,
)
"""A failed build step whose log says the network, the mirror or the engine failed: the same
step may pass on another attempt."""


def build_failure(tag: str, message: str, tail: str) -> ImageError:
    """The error of a build whose step failed: ImageBuildFailed (deterministic, not retried)
    unless its log shows the network, a mirror or the engine failing (ImageError, retried)."""
    text = f"Building {tag} failed: {message}\n{tail[-3000:]}"
    if _TRANSIENT.search(f"{message}\n{tail}"):
        return ImageError(text)
    return ImageBuildFailed(text)


def _build(client: Any, log: Log, **kwargs: Any) -> Any:
    import docker.errors

    try:
        image, lines = client.images.build(rm=True, forcerm=True, pull=False, **kwargs)
    except docker.errors.BuildError as exc:
        tail = "".join(str(chunk.get("stream", chunk.get("error", ""))) for chunk in exc.build_log)
        raise build_failure(str(kwargs.get("tag")), exc.msg, tail) from exc
    except docker.errors.APIError as exc:
        raise ImageError(f"Building {kwargs.get('tag')} failed: {exc}") from exc
    for chunk in lines:
        text = str(chunk.get("stream", "")).strip()
        if text:
            log(text)
    return image


ROOTFS_TTL = 5.0
"""Seconds a process trusts its last look-up of an image's root filesystem: a bwrap start
asks the engine which image a tag names at most that often (an RL loop starts tens a
second); an image this process builds is looked up afresh."""
_rootfs_seen: dict[str, tuple[Path, float]] = {}


def rootfs_for(image: str, *, log: Log = _quiet) -> Path:
    """The root filesystem of `image` as a folder, for bubblewrap (exported once, then cached).

    With a Docker engine the image is `docker export`ed to the cache folder under its id;
    without one, only the base image is available, from debootstrap. The tag's image is
    looked up at most every ROOTFS_TTL seconds.

    Raises:
        ImageError: the image is unknown, or there is no engine to export a non-base image.
    """
    seen = _rootfs_seen.get(image)
    if seen is not None and time.monotonic() < seen[1] and seen[0].is_dir():
        return seen[0]
    found = _rootfs_for(image, log=log)
    _rootfs_seen[image] = (found, time.monotonic() + ROOTFS_TTL)
    return found


def _forget_rootfs(tag: str) -> None:
    _rootfs_seen.pop(tag, None)


def _rootfs_for(image: str, *, log: Log = _quiet) -> Path:
    try:
        client = docker_client(f"The root filesystem of {image} for bwrap")
    except BackendUnavailable as exc:
        if image == BASE_IMAGE:
            return shifted_rootfs(ensure_base_rootfs(log=log), log=log)
        raise ImageError(str(exc)) from exc
    found = _image_or_none(client, image)
    if found is None:
        if image == BASE_IMAGE:
            return shifted_rootfs(ensure_base_rootfs(log=log), log=log)
        raise ImageError(f"Expected image {image} to exist in the Docker engine; found none.")
    name = str(found.id).removeprefix("sha256:")[:16] + _shift_suffix()
    target = cache_dir() / "rootfs" / name
    if (target / ".complete").exists():
        return target / "root"
    with making(target):
        if (target / ".complete").exists():  # another thread made it meanwhile
            return target / "root"
        return _export(client, found, target, log)


def _shift_suffix() -> str:
    return f"-u{UID_BASE}" if mapped() else ""


def shifted_rootfs(rootfs: Path, *, log: Log = _quiet) -> Path:
    """`rootfs` as bwrap needs it: a copy owned by the shifted ids when termgym runs as root."""
    suffix = _shift_suffix()
    if not suffix:
        return rootfs
    target = rootfs.parent.parent / (rootfs.parent.name + suffix)
    if (target / ".complete").exists():
        return target / "root"
    with making(target):
        if (target / ".complete").exists():
            return target / "root"
        return _copy_shifted(rootfs, target, log)


def _copy_shifted(rootfs: Path, target: Path, log: Log) -> Path:
    log(f"Copying {rootfs} with shifted owners to {target} ...")
    staging = staging_for(target)
    clear(staging)
    staging.mkdir(parents=True)
    done = subprocess.run(
        ["cp", "-a", str(rootfs), str(staging / "root")], capture_output=True, check=False
    )
    if done.returncode != 0:
        raise ImageError(f"Could not copy {rootfs}: {done.stderr.decode(errors='replace')}")
    _shift_owners(staging / "root")
    (staging / ".complete").write_text(str(rootfs))
    return _settle(staging, target)


def _shift_owners(root: Path) -> None:
    """Add UID_BASE to every owner below `root` (setuid bits survive: they are set again)."""

    def shift(path: str, info: os.stat_result) -> None:
        if info.st_uid >= ID_COUNT and info.st_gid >= ID_COUNT:
            return  # already shifted (a second hard link)
        uid = info.st_uid + UID_BASE if info.st_uid < ID_COUNT else info.st_uid
        gid = info.st_gid + UID_BASE if info.st_gid < ID_COUNT else info.st_gid
        os.lchown(path, uid, gid)
        if not stat.S_ISLNK(info.st_mode) and info.st_mode & 0o6000:
            os.chmod(path, stat.S_IMODE(info.st_mode))

    shift(str(root), os.lstat(root))
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(folder, name)
            shift(path, os.lstat(path))
    os.chmod(root, 0o755)


def _settle(staging: Path, target: Path) -> Path:
    """Move a finished staging folder into place (under `making(target)`: a target there
    is one a killed process left half made)."""
    if (target / ".complete").exists():
        clear(staging)
        return target / "root"
    settle(staging, target)
    return target / "root"


def _export(client: Any, image: Any, target: Path, log: Log) -> Path:
    log(f"Exporting {image.tags or image.short_id} to {target} ...")
    staging = staging_for(target)
    clear(staging)
    (staging / "root").mkdir(parents=True)
    container = client.containers.create(
        image.id, command=["true"], network_mode="none", labels=owner_labels("export")
    )  # labelled: `termgym gc` removes it if this process is killed before it does
    try:
        tar = subprocess.Popen(
            [
                "tar",
                "-x",
                "--numeric-owner",
                "-C",
                str(staging / "root"),
                "--exclude=dev/*",
                "-f",
                "-",
            ],
            stdin=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert tar.stdin is not None
        for chunk in container.export(chunk_size=1 << 20):
            tar.stdin.write(chunk)
        tar.stdin.close()
        if tar.wait() != 0:
            problem = tar.stderr.read().decode() if tar.stderr else ""
            raise ImageError(f"Unpacking {image.short_id} failed: {problem}")
    finally:
        container.remove(force=True)
    if _shift_suffix():
        _shift_owners(staging / "root")
    (staging / ".complete").write_text(str(image.id))
    return _settle(staging, target)
