"""An imported task's Dockerfile: its bases mapped to local roots, a CA bundle for builds
behind TLS interception, the test script's installs moved to build time, and where its
COPY instructions put each file of the build context."""

from __future__ import annotations

import fnmatch
import posixpath
import re
import shlex
from dataclasses import dataclass

from termgym.errors import ImportRefused
from termgym.images import known_bases, map_base

CA_FILE = "termgym-ca.pem"
"""The CA bundle in the build context (the host's plus the user's)."""
CA_PATH = "/etc/termgym/ca-bundle.pem"
_CA_ENV = " ".join(
    f"{name}={CA_PATH}"
    for name in (
        "SSL_CERT_FILE",
        "REQUESTS_CA_BUNDLE",
        "PIP_CERT",
        "CURL_CA_BUNDLE",
        "GIT_SSL_CAINFO",
        "NODE_EXTRA_CA_CERTS",
        "npm_config_cafile",
    )
)
_CA_STEPS = (
    f"COPY {CA_FILE} {CA_PATH}\n"
    f"ENV {_CA_ENV} UV_NATIVE_TLS=1\n"
    "RUN mkdir -p /etc/apt/apt.conf.d && printf 'Acquire::https::CAInfo \"%s\";\\n' "
    f"{CA_PATH} > /etc/apt/apt.conf.d/99termgym-ca\n"
)


_UV_IMAGE = re.compile(r"(?:ghcr\.io/astral-sh/uv|(?:docker\.io/)?astral/uv):(\d+\.\d+\.\d+)")
"""astral's uv image (`/uv`, `/uvx`): made here from the same release's PyPI wheel."""
_UV_STAGE = (
    "FROM {base} AS {name}\n{ca}"
    "RUN python3 -m pip install --no-cache-dir --break-system-packages --target /opt/uv "
    "uv=={version} && cp /opt/uv/bin/uv /opt/uv/bin/uvx / && rm -rf /opt/uv\n"
)


@dataclass(frozen=True)
class Instruction:
    keyword: str
    args: str
    text: str


def parse(text: str) -> list[Instruction]:
    """Instructions with continuation lines joined (comments and blank lines kept as '#')."""
    out: list[Instruction] = []
    pending = ""
    for raw in text.splitlines():
        if not pending and (not raw.strip() or raw.lstrip().startswith("#")):
            out.append(Instruction("#", "", raw))
            continue
        if raw.rstrip().endswith("\\"):
            pending += raw + "\n"
            continue
        whole = pending + raw
        pending = ""
        parts = whole.strip().split(None, 1)
        out.append(Instruction(parts[0].upper(), parts[1] if len(parts) > 1 else "", whole))
    if pending:
        parts = pending.strip().split(None, 1)
        out.append(Instruction(parts[0].upper(), parts[1] if len(parts) > 1 else "", pending))
    return out


def _from_image(args: str) -> tuple[str, str]:
    """(image, rest) of a FROM's arguments (--platform dropped, `AS name` kept)."""
    words = [w for w in args.split() if not w.startswith("--platform")]
    return words[0], " ".join(words[1:])


@dataclass(frozen=True)
class Rewritten:
    """The Dockerfile as termgym builds it, and what was decided."""

    text: str
    bases: tuple[str, ...]
    mappings: tuple[str, ...]
    workdir: str
    differences: tuple[str, ...] = ()
    """How each stand-in differs from the base it replaces (for provenance.approximate)."""


def rewrite(
    text: str,
    task: str,
    *,
    registry: bool,
    apt: tuple[str, ...],
    pip: tuple[str, ...],
    with_ca: bool,
    apt_recommends: bool = True,
) -> Rewritten:
    """Map every FROM to a local base (unless `registry`), add the CA steps after each FROM,
    and append the moved installs to the final stage.

    Raises:
        ImportRefused: a base image no registry serves and termgym cannot stand in for.
    """
    stages: set[str] = set()
    args: dict[str, str] = {}
    lines: list[str] = []
    bases: list[str] = []
    mappings: list[str] = []
    differences: list[str] = []
    uv_stages: dict[str, str] = {}
    workdir = "/"
    user_root, user = True, "root"
    for ins in parse(text):
        if ins.keyword == "ARG" and "=" in ins.args and not bases:
            key, _, value = ins.args.partition("=")
            args[key.strip()] = value.strip().strip("\"'")
        if ins.keyword == "FROM":
            image, rest = _from_image(ins.args)
            image = re.sub(
                r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?",
                lambda m: args.get(m.group(1), m.group(0)),
                image,
            )
            if "$" in image:
                raise ImportRefused(
                    f"{task}: FROM {image}: expected a base image, found an unset ARG"
                )
            name = rest.split()[-1] if rest.lower().startswith("as ") else ""
            workdir, user_root = "/", True
            if image in stages or image == "scratch" or registry:
                target = image
            else:
                mapping = map_base(image)
                if mapping is None:
                    raise ImportRefused(
                        f"{task}: base image {image}: no image registry answers here and "
                        "termgym knows no local stand-in for it (known: "
                        f"{', '.join(known_bases())})"
                    )
                target = mapping.base.tag
                mappings.append(mapping.describe())
                differences.append(mapping.differences())
            bases.append(target)
            if name:
                stages.add(name)
            lines.append(f"FROM {target}" + (f" {rest}" if rest else ""))
            if with_ca and target not in stages and image != "scratch":
                lines.append(_CA_STEPS.rstrip("\n"))
            continue
        if ins.keyword in ("COPY", "ADD") and not registry:
            source = re.search(r"--from=(\S+)", ins.args)
            uv = _UV_IMAGE.fullmatch(source.group(1)) if source else None
            if source and uv:
                name = f"termgym-uv-{uv.group(1)}"
                uv_stages[name] = uv.group(1)
                lines.append(ins.text.replace(source.group(0), f"--from={name}", 1))
                continue
            if source and source.group(1) not in stages and not source.group(1).isdigit():
                raise ImportRefused(
                    f"{task}: {ins.keyword} --from={source.group(1)}: copies from an image "
                    "that cannot be pulled here (no image registry answers) and has no local "
                    "stand-in"
                )
        if ins.keyword == "WORKDIR":
            path = ins.args.strip().strip("\"'")
            workdir = path if path.startswith("/") else posixpath.join(workdir, path)
        if ins.keyword == "USER":
            user = ins.args.strip()
            user_root = user.split(":")[0] in ("root", "0")
        lines.append(ins.text)
    if not bases:
        raise ImportRefused(f"{task}: the Dockerfile has no FROM")
    if not user_root:
        differences.append(
            f"the Dockerfile's last USER is {user}: its harness ran the agent as that user; "
            "termgym runs the agent's shell as root (with Docker's default capabilities)"
        )
    if uv_stages:
        first = next(i for i, line in enumerate(lines) if line.startswith("FROM "))
        ca = _CA_STEPS if with_ca else ""
        made = [
            _UV_STAGE.format(base=bases[0], name=name, ca=ca, version=version)
            for name, version in uv_stages.items()
        ]
        lines[first:first] = [text.rstrip("\n") for text in made]
        mappings.extend(
            f"COPY --from=astral's uv:{version} image -> stage {name} (uv {version}'s /uv and "
            "/uvx from the same release's PyPI wheel)"
            for name, version in uv_stages.items()
        )
    tail = []
    if apt or pip:
        tail.append(
            "# termgym: the test script's installs, moved to build time (grading is offline)"
        )
        if not user_root:
            tail.append("USER root")
    if apt:
        names = " ".join(shlex.quote(a) for a in apt)
        # As the test script's own lines installed them (apt's Recommends included unless
        # they said otherwise: `apt-get install gcc` brings libc6-dev, which a test compiling
        # C needs).
        flags = "" if apt_recommends else "--no-install-recommends "
        tail.append(
            "RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "
            f"{flags}{names} && rm -rf /var/lib/apt/lists/*"
        )
    if pip:
        # Into the verifier's /usr/bin/python3 (a clean verifier runs the tests with it) and
        # into the python3 on the image's PATH (snapshot grading runs them with that one, as
        # the task's own script would: /usr/local/bin/python3 on python.org's images).
        names = " ".join(shlex.quote(p) for p in pip)
        tail.append(
            "RUN (/usr/bin/python3 -m pip --version >/dev/null 2>&1 || (apt-get update && "
            "DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "
            "python3-pip)) && export PIP_IGNORE_INSTALLED=1 && "
            "for py in $(printf '%s\\n' /usr/bin/python3 \"$(command -v python3)\" "
            "| awk '!seen[$0]++'); do "
            f'"$py" -m pip install --no-cache-dir --break-system-packages {names} || '
            f'"$py" -m pip install --no-cache-dir {names} || exit 1; done'
        )
    text_out = "\n".join(lines + tail) + "\n"
    return Rewritten(
        text_out,
        tuple(bases),
        tuple(dict.fromkeys(mappings)),
        workdir,
        tuple(dict.fromkeys(differences)),
    )


def copy_destinations(text: str) -> list[tuple[list[str], str, str]]:
    """(sources, destination, workdir at that point) of every COPY/ADD of the final stage
    that copies from the build context."""
    found: list[tuple[list[str], str, str]] = []
    workdir = "/"
    for ins in parse(text):
        if ins.keyword == "FROM":
            found, workdir = [], "/"
        elif ins.keyword == "WORKDIR":
            path = ins.args.strip().strip("\"'")
            workdir = path if path.startswith("/") else posixpath.join(workdir, path)
        elif ins.keyword in ("COPY", "ADD"):
            words = [w for w in _words(ins.args) if not w.startswith("--chown")]
            if any(w.startswith("--from") for w in words) or len(words) < 2:
                continue
            words = [w for w in words if not w.startswith("--")]
            found.append((words[:-1], words[-1], workdir))
    return found


def _words(args: str) -> list[str]:
    args = args.strip()
    if args.startswith("["):
        import json

        try:
            return [str(w) for w in json.loads(args)]
        except ValueError:
            pass
    try:
        return shlex.split(args)
    except ValueError:
        return args.split()


def destination(text: str, rel: str) -> str | None:
    """Where the final image holds the build-context file `rel` (the last COPY wins), or
    None when no COPY puts it in the image. A destination that is a folder already (the
    WORKDIR then, or one above it: `COPY test.py /app` after `WORKDIR /app`) receives the
    file inside it, as Docker copies it."""
    where = None
    for sources, dest, workdir in copy_destinations(text):
        dest_abs = posixpath.normpath(posixpath.join(workdir, dest))
        folder = dest.endswith("/") or _is_above(dest_abs, workdir)
        for src in sources:
            src = posixpath.normpath(src.lstrip("./") or ".") if src not in (".", "./") else "."
            if src == ".":
                where = posixpath.join(dest_abs, rel)
            elif rel == src or fnmatch.fnmatch(rel, src):
                into_dir = folder or len(sources) > 1
                where = posixpath.join(dest_abs, posixpath.basename(rel)) if into_dir else dest_abs
            elif rel.startswith(src.rstrip("/") + "/"):
                where = posixpath.join(dest_abs, rel[len(src.rstrip("/")) + 1 :])
    return where


def _is_above(path: str, workdir: str) -> bool:
    """Whether `path` is the folder `workdir` or one of the folders it is in."""
    workdir = posixpath.normpath(workdir)
    return path == workdir or path == "/" or workdir.startswith(path.rstrip("/") + "/")
