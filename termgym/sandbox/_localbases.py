"""Local stand-ins for registry base images: Ubuntu and Debian roots made by debootstrap.

Imported tasks name bases such as `ubuntu:24.04` or Terminal-Bench's
`ghcr.io/laude-institute/t-bench/python-3-13`. Where no registry answers, `map_base` finds
the local stand-in and `ensure_local_base` builds it once (debootstrap from Ubuntu's or
Debian's mirror over HTTP, `docker import`, then a small Dockerfile), tagged by its recipe's
hash: `termgym/tb-ubuntu-24.04:<hash>`. Never the shared `termgym/base:bookworm`.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
import subprocess
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from termgym.errors import ImageError
from termgym.sandbox._engine import docker_client
from termgym.sandbox._images import Log, _build, _image_or_none, _quiet, cache_dir, import_rootfs

UBUNTU_MIRROR = "http://archive.ubuntu.com/ubuntu"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
UBUNTU_KEYRING_DEB = "pool/main/u/ubuntu-keyring/ubuntu-keyring_2023.11.28.1_all.deb"
UBUNTU_KEYRING_SHA256 = "36de43b15853ccae0028e9a767613770c704833f82586f28eb262f0311adb8a8"
"""Ubuntu's archive keyring, fetched over HTTP and checked against this pinned hash (the
Release files debootstrap reads are then checked with it)."""

_COMMON = ("bash", "coreutils", "ca-certificates", "procps", "less", "tmux", "curl", "python3",
           "python3-pip", "python3-venv")  # fmt: skip
"""What every stand-in carries: Terminal-Bench's images have tmux and curl; python3 and pip
are what the verifier's runner and the moved test installs need."""


@dataclass(frozen=True)
class LocalBase:
    """A locally built stand-in for a family of registry images."""

    name: str
    distro: str  # "ubuntu" | "debian"
    suite: str
    python_links: bool = False
    """`python` and `pip` on PATH as in python.org's images (python3, pip3 links)."""

    @property
    def mirror(self) -> str:
        return UBUNTU_MIRROR if self.distro == "ubuntu" else DEBIAN_MIRROR

    @property
    def components(self) -> str:
        return "main,universe" if self.distro == "ubuntu" else "main"

    def recipe(self) -> str:
        data = {
            "name": self.name,
            "distro": self.distro,
            "suite": self.suite,
            "packages": sorted(_COMMON),
            "links": self.python_links,
            "pip_env": "PIP_IGNORE_INSTALLED=1" if self.python_links else "",
            "dockerfile": _DOCKERFILE,
            "sources": self.sources(),
        }
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:12]

    def rootfs_recipe(self) -> str:
        """What decides the debootstrap root (shared by the stand-ins of one suite)."""
        data = [self.distro, self.suite, sorted(_COMMON), self.sources()]
        return hashlib.sha256(json.dumps(data).encode()).hexdigest()[:12]

    @property
    def tag(self) -> str:
        return f"termgym/tb-{self.name}:{self.recipe()}"

    def sources(self) -> str:
        if self.distro == "ubuntu":
            parts = "main universe"
            return "".join(
                f"deb {UBUNTU_MIRROR} {s} {parts}\n"
                for s in (self.suite, f"{self.suite}-updates", f"{self.suite}-security")
            )
        return (
            f"deb {DEBIAN_MIRROR} {self.suite} main\n"
            f"deb {DEBIAN_MIRROR} {self.suite}-updates main\n"
            f"deb http://deb.debian.org/debian-security {self.suite}-security main\n"
        )


BASES: dict[str, LocalBase] = {
    b.name: b
    for b in (
        LocalBase("ubuntu-24.04", "ubuntu", "noble"),
        LocalBase("ubuntu-22.04", "ubuntu", "jammy"),
        LocalBase("debian-12", "debian", "bookworm"),
        LocalBase("debian-13", "debian", "trixie"),
        LocalBase("python-3.13", "debian", "trixie", python_links=True),
        LocalBase("python-3.12", "ubuntu", "noble", python_links=True),
        LocalBase("python-3.11", "debian", "bookworm", python_links=True),
        LocalBase("python-3.10", "ubuntu", "jammy", python_links=True),
    )
}

_DOCKERFILE = """\
FROM {parent}
LABEL io.termgym.local-base="{name}"
ENV LANG=C.UTF-8 LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive PIP_BREAK_SYSTEM_PACKAGES=1{pip_env}
RUN {links}true
CMD ["bash"]
"""

_RULES: tuple[tuple[str, str, str], ...] = (
    (r"ghcr\.io/laude-institute/t-bench/ubuntu-24-04(:.*)?", "ubuntu-24.04", ""),
    (r"ghcr\.io/laude-institute/t-bench/python-3-13(:.*)?", "python-3.13", ""),
    (r"(docker\.io/)?(library/)?ubuntu(:(24\.04|noble|latest))?", "ubuntu-24.04", ""),
    (r"(docker\.io/)?(library/)?ubuntu:(22\.04|jammy)", "ubuntu-22.04", ""),
    (r"(docker\.io/)?(library/)?debian:(12|bookworm)([-.].*)?", "debian-12", ""),
    (r"(docker\.io/)?(library/)?debian(:(13|trixie|latest|stable)([-.].*)?)?", "debian-13", ""),
    (
        r"(docker\.io/)?(library/)?python:3\.13([.\d]*)(-slim)?(-bookworm|-trixie)?",
        "python-3.13",
        "python.org's 3.13 becomes Debian trixie's python3 (3.13)",
    ),
    (
        r"(docker\.io/)?(library/)?python:3\.12([.\d]*)(-slim)?(-bookworm|-trixie)?",
        "python-3.12",
        "python.org's 3.12 on Debian becomes Ubuntu 24.04's python3 (3.12)",
    ),
    (
        r"(docker\.io/)?(library/)?python:3\.11([.\d]*)(-slim)?(-bookworm)?",
        "python-3.11",
        "python.org's 3.11 becomes Debian bookworm's python3 (3.11)",
    ),
    (
        r"(docker\.io/)?(library/)?python:3\.10([.\d]*)(-slim)?(-bookworm|-bullseye)?",
        "python-3.10",
        "python.org's 3.10 on Debian becomes Ubuntu 22.04's python3 (3.10)",
    ),
)


@dataclass(frozen=True)
class BaseMapping:
    """What a registry base image becomes here."""

    requested: str
    base: LocalBase
    note: str

    def describe(self) -> str:
        extra = f"; {self.note}" if self.note else ""
        return (
            f"{self.requested} -> {self.base.tag} ({self.base.distro} {self.base.suite} by "
            f"debootstrap{extra})"
        )


def map_base(image: str) -> BaseMapping | None:
    """The local stand-in for `image`, or None when termgym knows none."""
    ref = image.split("@")[0].strip()
    for pattern, name, note in _RULES:
        if re.fullmatch(pattern, ref):
            return BaseMapping(image, BASES[name], note)
    return None


def known_bases() -> list[str]:
    """The registry images map_base understands, for messages."""
    return [
        "ghcr.io/laude-institute/t-bench/ubuntu-24-04",
        "ghcr.io/laude-institute/t-bench/python-3-13",
        "ubuntu:24.04",
        "ubuntu:22.04",
        "debian:12|13",
        "python:3.10|3.11|3.12|3.13[-slim][-bookworm|-trixie]",
    ]


def is_local_base(tag: str) -> LocalBase | None:
    """The LocalBase whose tag this is (a Dockerfile's FROM written by the importer)."""
    for base in BASES.values():
        if base.tag == tag:
            return base
    return None


def ensure_local_base(base: LocalBase, *, log: Log = _quiet) -> str:
    """Build `base` unless its tag exists; returns the tag.

    Raises:
        ImageError: debootstrap is missing or failed, or the keyring did not match.
    """
    client = docker_client()
    if _image_or_none(client, base.tag) is not None:
        return base.tag
    rootfs_tag = f"termgym/tb-rootfs-{base.distro}-{base.suite}:{base.rootfs_recipe()}"
    if _image_or_none(client, rootfs_tag) is None:
        rootfs = _debootstrap(base, log)
        import_rootfs(client, rootfs, rootfs_tag, log)
    dockerfile = stand_in_dockerfile(base, rootfs_tag)
    log(f"Building {base.tag} from {rootfs_tag} ...")
    _build(client, log, fileobj=io.BytesIO(dockerfile.encode()), tag=base.tag)
    return base.tag


def stand_in_dockerfile(base: LocalBase, rootfs_tag: str) -> str:
    """The Dockerfile that makes a stand-in from its debootstrap root."""
    links = (
        "ln -sf /usr/bin/python3 /usr/local/bin/python && ln -sf /usr/bin/pip3 "
        "/usr/local/bin/pip && "
        if base.python_links
        else ""
    )
    # python.org's images hold no distribution-installed packages for pip to upgrade; Debian's
    # python3 does (packaging, typing_extensions), which pip cannot uninstall: install anew.
    pip_env = " PIP_IGNORE_INSTALLED=1" if base.python_links else ""
    return _DOCKERFILE.format(parent=rootfs_tag, name=base.name, links=links, pip_env=pip_env)


def _keyring(home: Path) -> Path:
    target = home / "ubuntu-archive-keyring.gpg"
    if target.is_file():
        return target
    url = f"{UBUNTU_MIRROR}/{UBUNTU_KEYRING_DEB}"
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            data = response.read()
    except OSError as exc:
        raise ImageError(f"Could not fetch Ubuntu's keyring from {url}: {exc}") from exc
    digest = hashlib.sha256(data).hexdigest()
    if digest != UBUNTU_KEYRING_SHA256:
        raise ImageError(
            f"Ubuntu's keyring package from {url}: expected SHA-256 {UBUNTU_KEYRING_SHA256}, "
            f"found {digest}"
        )
    with tempfile.TemporaryDirectory(prefix="termgym-keyring-") as tmp:
        deb = Path(tmp) / "keyring.deb"
        deb.write_bytes(data)
        done = subprocess.run(["dpkg-deb", "-x", str(deb), tmp], capture_output=True, check=False)
        found = Path(tmp) / "usr/share/keyrings/ubuntu-archive-keyring.gpg"
        if done.returncode != 0 or not found.is_file():
            raise ImageError(f"Could not unpack Ubuntu's keyring: {done.stderr.decode()[-500:]}")
        shutil.copy(found, target)
    return target


def _debootstrap(base: LocalBase, log: Log) -> Path:
    home = cache_dir() / "local-bases" / f"{base.distro}-{base.suite}-{base.rootfs_recipe()}"
    rootfs = home / "rootfs"
    if (home / ".complete").exists():
        return rootfs
    if shutil.which("debootstrap") is None:
        raise ImageError(
            f"Expected debootstrap to build {base.tag} (no registry image), found none on "
            "PATH: install it (`apt-get install debootstrap`)."
        )
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    argv = ["debootstrap", "--variant=minbase", f"--components={base.components}",
            "--include=" + ",".join(_COMMON)]  # fmt: skip
    script: list[str] = []
    if base.distro == "ubuntu":
        argv.append(f"--keyring={_keyring(home.parent)}")
        script = ["/usr/share/debootstrap/scripts/gutsy"]
    argv += [base.suite, str(rootfs), base.mirror, *script]
    log(f"debootstrap {base.distro} {base.suite} into {rootfs} (a few minutes) ...")
    done = subprocess.run(argv, capture_output=True, check=False)
    if done.returncode != 0:
        tail = done.stdout.decode(errors="replace")[-2000:] + done.stderr.decode(errors="replace")
        raise ImageError(f"debootstrap {base.suite} failed (exit {done.returncode}):\n{tail}")
    (rootfs / "etc/apt/sources.list").write_text(base.sources())
    for leftover in ("var/cache/apt/archives", "var/lib/apt/lists"):
        for entry in (rootfs / leftover).glob("*"):
            if entry.is_file():
                entry.unlink()
    (home / ".complete").write_text(base.rootfs_recipe())
    return rootfs
