"""Sandboxes: where an agent's commands run, through one persistent shell.

Backends (docker, bwrap, local) behind one `Sandbox` protocol and one registry
(`register_sandbox`, `make_sandbox`, entry-point group "termgym.sandboxes"). The images and
root filesystems they run are built by `termgym.images` (the layer below); its names
(`build_base`, `build_image`, `rootfs_for`, ...) are re-exported here, where users import them.
"""

from __future__ import annotations

from termgym._stopping import (
    Stopped,
    live_sandboxes,
    resume,
    started_sandboxes,
    stop_on_signals,
    stop_sandboxes,
    stopped_by,
    stopping,
)
from termgym._userns import AGENT_UID
from termgym.images import (
    BASE_IMAGE,
    RECIPE_LABEL,
    SANDBOX_LABEL,
    LayerRecipe,
    build_base,
    build_image,
    cache_dir,
    debootstrap_home,
    docker_answers,
    docker_client,
    engine_away,
    ensure_base_rootfs,
    ensure_local_base,
    is_local_base,
    known_bases,
    layer_image,
    map_base,
    recipe_hash,
    rootfs_for,
)
from termgym.sandbox._base import (
    DOCKER_DEFAULT_CAPS,
    GATEWAY_PORT,
    NO_BYTECODE,
    VERIFIER_CAPS,
    FileTree,
    GatewayMount,
    HoldsStandby,
    RunResult,
    Sandbox,
    SandboxConfig,
    StandbyProgram,
    StandbySpec,
)
from termgym.sandbox._bwrap import HOST_ENV, BwrapSandbox, collect_bwrap_garbage
from termgym.sandbox._changes import CHANGE_KINDS, Change, ChangeKind, Changes, list_changes
from termgym.sandbox._copylimits import HOST_COPY, CopyBudget, CopyLimits, HoleSpool
from termgym.sandbox._docker import collect_garbage
from termgym.sandbox._registry import (
    ENTRY_POINT_GROUP,
    SandboxSpec,
    bwrap_works,
    check_gateway,
    check_runtime,
    default_backend,
    make_sandbox,
    register_sandbox,
    registered_sandboxes,
    registry,
    sandbox_spec,
    unregister_sandbox,
)
from termgym.sandbox._seccomp import filter_fd as seccomp_filter_fd
from termgym.sandbox._seccomp import strict_filter, watch_filter
from termgym.sandbox._snapshot import CHANGED_LIMIT, SNAPSHOT_PATH
from termgym.sandbox._static import static_program
from termgym.sandbox._zygote import close_zygotes

__all__ = [
    "BASE_IMAGE",
    "DOCKER_DEFAULT_CAPS",
    "GATEWAY_PORT",
    "NO_BYTECODE",
    "HOST_COPY",
    "ENTRY_POINT_GROUP",
    "RECIPE_LABEL",
    "SANDBOX_LABEL",
    "VERIFIER_CAPS",
    "LayerRecipe",
    "layer_image",
    "SandboxSpec",
    "CopyBudget",
    "CopyLimits",
    "CHANGE_KINDS",
    "Change",
    "ChangeKind",
    "Changes",
    "FileTree",
    "GatewayMount",
    "HoldsStandby",
    "HoleSpool",
    "RunResult",
    "Sandbox",
    "SandboxConfig",
    "StandbyProgram",
    "StandbySpec",
    "build_base",
    "build_image",
    "bwrap_works",
    "check_gateway",
    "check_runtime",
    "cache_dir",
    "close_zygotes",
    "collect_garbage",
    "debootstrap_home",
    "default_backend",
    "list_changes",
    "ensure_base_rootfs",
    "make_sandbox",
    "recipe_hash",
    "register_sandbox",
    "registered_sandboxes",
    "registry",
    "rootfs_for",
    "sandbox_spec",
    "unregister_sandbox",
    "strict_filter",
    "watch_filter",
    "ensure_local_base",
    "is_local_base",
    "known_bases",
    "map_base",
    "collect_bwrap_garbage",
    "docker_answers",
    "AGENT_UID",
    "CHANGED_LIMIT",
    "SNAPSHOT_PATH",
    "HOST_ENV",
    "BwrapSandbox",
    "docker_client",
    "engine_away",
    "seccomp_filter_fd",
    "static_program",
    "Stopped",
    "live_sandboxes",
    "started_sandboxes",
    "resume",
    "stop_on_signals",
    "stop_sandboxes",
    "stopped_by",
    "stopping",
]
