"""Local stand-ins for registry base images: Ubuntu and Debian roots made by debootstrap.

Imported tasks name bases such as `ubuntu:24.04`, `python:3.13-slim-bookworm` or
Terminal-Bench's `ghcr.io/laude-institute/t-bench/python-3-13`. Where no registry answers,
`map_base` finds the local stand-in and `ensure_local_base` builds it once (debootstrap from
Ubuntu's or Debian's mirror over HTTP, `docker import`, then a small Dockerfile), tagged by
its recipe's hash: `termgym/tb-ubuntu-24.04:<hash>`. A stand-in keeps the release its tag
names (`-bookworm` is Debian bookworm), and a `python:X` stand-in is what python.org's
images are: that Debian release with CPython X compiled into /usr/local (its source, the
orig tarball of Debian's or Ubuntu's own package, fetched from their mirror and checked
against a pinned SHA-256). Never the shared `termgym/base:bookworm`.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from termgym.errors import ImageError
from termgym.images._build import (
    Log,
    _build,
    _image_or_none,
    _quiet,
    cache_dir,
    image_lock,
    import_rootfs,
)
from termgym.images._cachelock import clear, making, settle, staging_for
from termgym.images._engine import docker_client

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
class CPython:
    """A CPython release's source: the orig tarball of a Debian or Ubuntu package."""

    version: str
    url: str
    sha256: str


CPYTHONS: dict[str, CPython] = {
    "3.13": CPython(
        "3.13.5",
        f"{DEBIAN_MIRROR}/pool/main/p/python3.13/python3.13_3.13.5.orig.tar.xz",
        "93e583f243454e6e9e4588ca2c2662206ad961659863277afcdb96801647d640",
    ),
    "3.12": CPython(
        "3.12.3",
        f"{UBUNTU_MIRROR}/pool/main/p/python3.12/python3.12_3.12.3.orig.tar.xz",
        "56bfef1fdfc1221ce6720e43a661e3eb41785dd914ce99698d8c7896af4bdaa1",
    ),
    "3.11": CPython(
        "3.11.2",
        f"{DEBIAN_MIRROR}/pool/main/p/python3.11/python3.11_3.11.2.orig.tar.gz",
        "2411c74bda5bbcfcddaf4531f66d1adc73f247f529aee981b029513aefdbf849",
    ),
    "3.10": CPython(
        "3.10.12",
        f"{UBUNTU_MIRROR}/pool/main/p/python3.10/python3.10_3.10.12.orig.tar.xz",
        "afb74bf19130e7a47d10312c8f5e784f24e0527981eab68e20546cfb865830b8",
    ),
}
"""The CPython each `python:3.X` stand-in compiles (the releases of Debian trixie and bookworm
and of Ubuntu noble and jammy: their mirrors keep them; python.org is out of reach here)."""

DEBIAN_RELEASES = {"bullseye": "11", "bookworm": "12", "trixie": "13"}
PYTHON_DEFAULT_RELEASE = "trixie"
"""What python.org's `python:3.X[-slim]` images are built on when the tag names no release
(trixie since August 2025)."""

_FULL = ("build-essential", "git", "wget", "gnupg", "netbase", "openssh-client", "unzip",
         "xz-utils", "bzip2", "patch", "file", "pkg-config", "libssl-dev", "zlib1g-dev",
         "libffi-dev", "libsqlite3-dev", "libbz2-dev", "liblzma-dev", "libreadline-dev",
         "libxml2-dev", "libxslt1-dev", "libyaml-dev", "libjpeg-dev", "libpng-dev")  # fmt: skip
"""What a full `python:3.X` image (on buildpack-deps) adds to a slim one, as far as this
stand-in carries it: compilers, git, and the common -dev libraries."""


@dataclass(frozen=True)
class LocalBase:
    """A locally built stand-in for a family of registry images."""

    name: str
    distro: str  # "ubuntu" | "debian"
    suite: str
    cpython: CPython | None = None
    """CPython compiled into /usr/local, as python.org's images carry it."""
    full: bool = False
    """The full (buildpack-deps) flavour of a python image, not its -slim one."""

    @property
    def mirror(self) -> str:
        return UBUNTU_MIRROR if self.distro == "ubuntu" else DEBIAN_MIRROR

    @property
    def components(self) -> str:
        return "main,universe" if self.distro == "ubuntu" else "main"

    def recipe(self) -> str:
        data: dict[str, object] = {
            "name": self.name,
            "distro": self.distro,
            "suite": self.suite,
            "packages": sorted(_COMMON),
            "links": False,
            "pip_env": "",
            "dockerfile": _DOCKERFILE,
            "sources": self.sources(),
        }
        if self.cpython is not None:
            data["cpython"] = [self.cpython.version, self.cpython.url, self.cpython.sha256]
            data["cpython_build"] = _CPYTHON_BUILD
            data["full"] = sorted(_FULL) if self.full else []
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


def _python_bases() -> list[LocalBase]:
    out = []
    for minor, cpython in CPYTHONS.items():
        for release in DEBIAN_RELEASES:
            for full in (False, True):
                name = f"python-{minor}-{release}" + ("-full" if full else "")
                out.append(LocalBase(name, "debian", release, cpython, full))
    return out


BASES: dict[str, LocalBase] = {
    b.name: b
    for b in (
        LocalBase("ubuntu-24.04", "ubuntu", "noble"),
        LocalBase("ubuntu-22.04", "ubuntu", "jammy"),
        LocalBase("debian-11", "debian", "bullseye"),
        LocalBase("debian-12", "debian", "bookworm"),
        LocalBase("debian-13", "debian", "trixie"),
        *_python_bases(),
    )
}

_DOCKERFILE = """\
FROM {parent}
LABEL io.termgym.local-base="{name}"
ENV LANG=C.UTF-8 LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive PIP_BREAK_SYSTEM_PACKAGES=1{pip_env}
RUN {links}true
CMD ["bash"]
"""

_CPYTHON_BUILD = r"""
ENV PYTHON_VERSION={version}
RUN set -eux; \
    saved="$(apt-mark showmanual)"; \
    apt-get update; \
    apt-get install -y --no-install-recommends dpkg-dev gcc libc6-dev make xz-utils \
        libbz2-dev libffi-dev libgdbm-dev liblzma-dev libncurses-dev libreadline-dev \
        libsqlite3-dev libssl-dev uuid-dev zlib1g-dev; \
    curl -fsSL -o /tmp/python.tar '{url}'; \
    echo '{sha256}  /tmp/python.tar' | sha256sum -c -; \
    mkdir -p /usr/src/python; \
    tar -xf /tmp/python.tar -C /usr/src/python --strip-components=1; \
    rm /tmp/python.tar; \
    cd /usr/src/python; \
    ./configure --enable-loadable-sqlite-extensions --enable-shared --with-ensurepip=install \
        LDFLAGS=-Wl,-rpath=/usr/local/lib >/dev/null; \
    nice -n 10 make -j"$(nproc)" >/dev/null; \
    make install >/dev/null; \
    cd /; rm -rf /usr/src/python; \
    find /usr/local -depth \( \( -type d -a \( -name test -o -name tests -o -name idle_test \) \) \
        -o \( -type f -a \( -name '*.pyc' -o -name 'libpython*.a' \) \) \) -exec rm -rf '{{}}' +; \
    ldconfig; \
    apt-mark auto '.*' >/dev/null; apt-mark manual $saved >/dev/null; \
    find /usr/local -type f -executable -exec ldd '{{}}' ';' 2>/dev/null \
        | awk '/=>/ {{ so = $(NF-1); if (index(so, "/usr/local/") == 1) next; \
                     gsub("^/(usr/)?", "", so); print "*" so }}' \
        | sort -u | xargs -r dpkg-query --search 2>/dev/null | grep -v '^diversion ' \
        | cut -d: -f1 | tr ',' '\n' | tr -d ' ' | sort -u \
        | xargs -r apt-mark manual >/dev/null; \
    apt-get purge -y --auto-remove -o APT::AutoRemove::RecommendsImportant=false >/dev/null; \
    drop=; for p in gcc cpp make; do \
        if ! printf '%s\n' $saved | grep -qx "$p" && dpkg -s "$p" >/dev/null 2>&1; then \
            drop="$drop $p"; fi; \
    done; \
    [ -z "$drop" ] || apt-get purge -y --auto-remove \
        -o APT::AutoRemove::RecommendsImportant=false $drop >/dev/null; \
    rm -rf /var/lib/apt/lists/*; \
    for name in idle3 pip3 pydoc3 python3 python3-config; do \
        ln -sfT "$name" "/usr/local/bin/${{name%3}}"; \
    done; \
    /usr/local/bin/python --version; /usr/local/bin/pip --version
"""
"""python.org's recipe, in short: build dependencies in, CPython compiled into /usr/local
(shared, with pip), the build dependencies out again except the libraries it links."""

_FULL_STEP = (
    "RUN apt-get update && apt-get install -y --no-install-recommends {packages} "
    "&& rm -rf /var/lib/apt/lists/*\n"
)

_EXTRAS = "tmux, curl, less, procps, and python3 with pip and venv at /usr/bin"
"""What every stand-in carries that its original may lack (the verifier runs /usr/bin/python3)."""


@dataclass(frozen=True)
class BaseMapping:
    """What a registry base image becomes here.

    Attributes:
        requested: The image the task named.
        base: The local stand-in.
        note: How the stand-in differs from it ("" when only by `_EXTRAS`).
    """

    requested: str
    base: LocalBase
    note: str

    def describe(self) -> str:
        extra = f"; {self.note}" if self.note else ""
        return (
            f"{self.requested} -> {self.base.tag} ({self.base.distro} {self.base.suite} by "
            f"debootstrap{extra})"
        )

    def differences(self) -> str:
        """Every way the stand-in is not the image, in one sentence (for `approximate`)."""
        parts = [self.note] if self.note else []
        parts.append(f"it carries {_EXTRAS}, which {self.requested} may lack")
        return f"base image {self.requested} stands in as {self.base.name}: " + "; ".join(parts)


_REGISTRY = r"(?:docker\.io/)?(?:library/)?"
_DEBIAN_TAG = re.compile(
    _REGISTRY + r"debian(?::(?P<release>\d+|bullseye|bookworm|trixie|latest|stable)"
    r"(?P<point>\.\d+)*(?:-slim|-\d{8})*)?"
)
_UBUNTU_TAG = re.compile(_REGISTRY + r"ubuntu(?::(?P<release>24\.04|noble|latest|22\.04|jammy))?")
_PYTHON_TAG = re.compile(
    _REGISTRY + r"python:(?P<minor>3\.\d+)(?P<patch>\.\d+)?(?P<slim>-slim)?"
    r"(?:-(?P<release>bullseye|bookworm|trixie))?"
)
_DEBIAN_NUMBERS = {"11": "bullseye", "12": "bookworm", "13": "trixie", "latest": "trixie",
                   "stable": "trixie"}  # fmt: skip
TB_PYTHON = "ghcr.io/laude-institute/t-bench/python-3-13"
"""Terminal-Bench's python image: python:3.13-slim-bookworm with tmux, curl and asciinema."""


def _python(image: str, minor: str, patch: str, slim: bool, release: str) -> BaseMapping | None:
    cpython = CPYTHONS.get(minor)
    if cpython is None:
        return None
    name = f"python-{minor}-{release}" + ("" if slim else "-full")
    wanted = f"{minor}{patch}" if patch else f"the newest {minor}.x"
    note = (
        f"CPython {cpython.version} compiled into /usr/local as python.org's image has it "
        f"(that image carries {wanted}), without its PGO/LTO optimizations and tkinter"
    )
    if not slim:
        note += (
            "; the full image's buildpack-deps stand in as compilers, git and common -dev libraries"
        )
    return BaseMapping(image, BASES[name], note)


def map_base(image: str) -> BaseMapping | None:
    """The local stand-in for `image` (of the release its tag names), or None when termgym
    knows none."""
    ref = image.split("@")[0].strip()
    if re.fullmatch(r"ghcr\.io/laude-institute/t-bench/ubuntu-24-04(:.*)?", ref):
        return BaseMapping(image, BASES["ubuntu-24.04"], "")
    if re.fullmatch(re.escape(TB_PYTHON) + r"(:.*)?", ref):
        found = _python(image, "3.13", "", True, "bookworm")
        assert found is not None
        return BaseMapping(image, found.base, found.note + "; asciinema is not carried")
    if match := _UBUNTU_TAG.fullmatch(ref):
        jammy = match.group("release") in ("22.04", "jammy")
        return BaseMapping(image, BASES["ubuntu-22.04" if jammy else "ubuntu-24.04"], "")
    if match := _DEBIAN_TAG.fullmatch(ref):
        release = match.group("release") or "latest"
        suite = _DEBIAN_NUMBERS.get(release, release)
        if suite not in DEBIAN_RELEASES:
            return None
        return BaseMapping(image, BASES[f"debian-{DEBIAN_RELEASES[suite]}"], "")
    if match := _PYTHON_TAG.fullmatch(ref):
        release = match.group("release") or PYTHON_DEFAULT_RELEASE
        return _python(
            image, match.group("minor"), match.group("patch") or "", bool(match.group("slim")),
            release,
        )  # fmt: skip
    return None


def known_bases() -> list[str]:
    """The registry images map_base understands, for messages."""
    return [
        "ghcr.io/laude-institute/t-bench/ubuntu-24-04",
        TB_PYTHON,
        "ubuntu:24.04|22.04",
        "debian:11|12|13[-slim]",
        "python:3.10|3.11|3.12|3.13[-slim][-bullseye|-bookworm|-trixie]",
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
    client = docker_client(f"The stand-in {base.tag} (an imported task's FROM)")
    if _image_or_none(client, base.tag) is not None:
        return base.tag
    with making(image_lock(base.tag)):  # one build of it on this machine; the rest wait
        if _image_or_none(client, base.tag) is not None:
            log(f"{base.tag} was built meanwhile.")
            return base.tag
        rootfs_tag = f"termgym/tb-rootfs-{base.distro}-{base.suite}:{base.rootfs_recipe()}"
        with making(image_lock(rootfs_tag)):  # the stand-ins of one suite share it
            if _image_or_none(client, rootfs_tag) is None:
                rootfs = _debootstrap(base, log)
                import_rootfs(client, rootfs, rootfs_tag, log)
        dockerfile = stand_in_dockerfile(base, rootfs_tag)
        log(f"Building {base.tag} from {rootfs_tag} ...")
        _build(client, log, fileobj=io.BytesIO(dockerfile.encode()), tag=base.tag)
    return base.tag


def stand_in_dockerfile(base: LocalBase, rootfs_tag: str) -> str:
    """The Dockerfile that makes a stand-in from its debootstrap root."""
    if base.cpython is not None:
        # python.org's python3 is CPython in /usr/local (first on PATH, `python` and `pip`
        # links made by the build); Debian's python3 stays at /usr/bin for the verifier.
        text = _DOCKERFILE.format(parent=rootfs_tag, name=base.name, links="", pip_env="")
        steps = _CPYTHON_BUILD.format(
            version=base.cpython.version, url=base.cpython.url, sha256=base.cpython.sha256
        )
        if base.full:
            steps += _FULL_STEP.format(packages=" ".join(sorted(_FULL)))
        head, _, cmd = text.rpartition("CMD ")
        return head + steps.lstrip("\n") + "CMD " + cmd
    return _DOCKERFILE.format(parent=rootfs_tag, name=base.name, links="", pip_env="")


def _keyring(home: Path) -> Path:
    target = home / "ubuntu-archive-keyring.gpg"
    if target.is_file():
        return target
    home.mkdir(parents=True, exist_ok=True)
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
        partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
        shutil.copy(found, partial)
        partial.replace(target)  # whole, whoever else fetches it at the same time
    return target


def _debootstrap(base: LocalBase, log: Log) -> Path:
    """The debootstrap root of `base`'s suite, made once (under its lock, into a staging
    folder renamed into place: a build killed halfway leaves nothing in use, and its
    mounts are cleared by the next one)."""
    home = cache_dir() / "local-bases" / f"{base.distro}-{base.suite}-{base.rootfs_recipe()}"
    rootfs = home / "rootfs"
    if (home / ".complete").exists():
        return rootfs
    if shutil.which("debootstrap") is None:
        raise ImageError(
            f"Expected debootstrap to build {base.tag} (no registry image), found none on "
            "PATH: install it (`apt-get install debootstrap`)."
        )
    with making(home):
        if (home / ".complete").exists():
            return rootfs
        staging = staging_for(home)
        clear(staging)
        staging.mkdir(parents=True)
        try:
            _bootstrap_into(base, staging / "rootfs", home.parent, log)
            (staging / ".complete").write_text(base.rootfs_recipe())
            settle(staging, home)
        finally:
            clear(staging)  # failed or interrupted: its mounts and files go
    return rootfs


def _bootstrap_into(base: LocalBase, rootfs: Path, keyrings: Path, log: Log) -> None:
    argv = ["debootstrap", "--variant=minbase", f"--components={base.components}",
            "--include=" + ",".join(_COMMON)]  # fmt: skip
    script: list[str] = []
    if base.distro == "ubuntu":
        argv.append(f"--keyring={_keyring(keyrings)}")
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
