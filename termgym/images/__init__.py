"""Images: the image factory behind `termgym image`, below the sandboxes that run its images.

It builds termgym's base image (debootstrap, `build_base`), task images (`build_image`),
local stand-ins for registry bases (Ubuntu and Debian by debootstrap, CPython built from
its source: `map_base`, `ensure_local_base`) and agent layers (`LayerRecipe`,
`layer_image`), and exports root filesystems for bubblewrap (`rootfs_for`). It owns what
they share: termgym's cache folder (`cache_dir`) and the entries several processes make in it
at once (`making`), the Docker engine connection (`docker_client`, `docker_answers`,
`engine_away`) and the labels on every container termgym starts (`owner_labels`). It
imports nothing of `termgym.sandbox`; the sandboxes import it.
"""

from __future__ import annotations

from termgym.images._build import (
    BASE_IMAGE,
    RECIPE_LABEL,
    build_base,
    build_image,
    cache_dir,
    debootstrap_home,
    ensure_base_rootfs,
    recipe_hash,
    rootfs_for,
)
from termgym.images._cachelock import making
from termgym.images._engine import (
    HOW_TO_START_DOCKER,
    docker_answers,
    docker_client,
    engine_address,
    engine_away,
    forget_clients,
)
from termgym.images._labels import (
    OWNER_HOST_LABEL,
    OWNER_PID_LABEL,
    ROLE_LABEL,
    SANDBOX_LABEL,
    owner_labels,
)
from termgym.images._layers import LayerRecipe, layer_image
from termgym.images._localbases import ensure_local_base, is_local_base, known_bases, map_base

__all__ = [
    "BASE_IMAGE",
    "HOW_TO_START_DOCKER",
    "OWNER_HOST_LABEL",
    "OWNER_PID_LABEL",
    "RECIPE_LABEL",
    "ROLE_LABEL",
    "SANDBOX_LABEL",
    "LayerRecipe",
    "build_base",
    "build_image",
    "cache_dir",
    "debootstrap_home",
    "docker_answers",
    "docker_client",
    "engine_address",
    "engine_away",
    "ensure_base_rootfs",
    "ensure_local_base",
    "forget_clients",
    "is_local_base",
    "known_bases",
    "layer_image",
    "making",
    "map_base",
    "owner_labels",
    "recipe_hash",
    "rootfs_for",
]
