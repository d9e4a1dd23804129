"""Isolation: the host side's kernel plumbing that the sandboxes and the images stand on.

It holds what termgym does to the host's kernel for a sandbox, outside it: the shifted user
namespace and its ids (`UID_BASE`, `AGENT_UID`, `userns_fd`), mounts (`mount`,
`unmount_below`), the seccomp filters the sandboxes' processes run under (`strict_filter`,
`verifier_profile`), cgroups (`Cgroup`), disk limits (`DiskWatch`, `LayerDisk`), the firewall
rules that keep sandboxes off the host's addresses (`wall_bwrap`, `wall_docker`), a
verifier's hidden /proc (`hide_processes`) and signals reset to their defaults
(`default_signals`). The privileged code that runs inside a sandbox is `termgym/verifier/`.
It imports nothing of `termgym.images` or `termgym.sandbox`; both import it.
"""

from __future__ import annotations

from termgym.isolation import _signals
from termgym.isolation._cgroup import CGROUP_ROOT, Cgroup, remove_stale_cgroups
from termgym.isolation._disk import (
    DiskBound,
    DiskWatch,
    engine_quota,
    quota_option,
    refuses_quota,
    remember_quota,
    say_disk_limit,
    shared_watch,
    usage,
)
from termgym.isolation._hostwall import BRIDGE, bridge_for, say_once, wall_bwrap, wall_docker
from termgym.isolation._layerdisk import LayerDisk, remove_orphans
from termgym.isolation._mounts import (
    MNT_DETACH,
    MS_NODEV,
    MS_NOSUID,
    mount,
    mounts_below,
    unmount,
    unmount_below,
)
from termgym.isolation._procview import PROC_GID, first_child, hide_processes, host_gid
from termgym.isolation._seccomp import filter_fd as seccomp_filter_fd
from termgym.isolation._seccomp import (
    strict_filter,
    verifier_filter,
    verifier_profile,
    watch_filter,
)
from termgym.isolation._signals import RESERVED as RESERVED_SIGNALS
from termgym.isolation._signals import default_signals, reset_reserved
from termgym.isolation._userns import (
    AGENT_UID,
    ID_COUNT,
    UID_BASE,
    host_id,
    mapped,
    userns_fd,
)

SIGNALS_HELPER: str = _signals.__file__
"""The file that resets every signal to its default and execs its arguments, standard library
only: run as `python3 -I -S SIGNALS_HELPER PROGRAM [ARG...]`."""

__all__ = [
    "AGENT_UID",
    "BRIDGE",
    "CGROUP_ROOT",
    "ID_COUNT",
    "MNT_DETACH",
    "MS_NODEV",
    "MS_NOSUID",
    "PROC_GID",
    "RESERVED_SIGNALS",
    "SIGNALS_HELPER",
    "UID_BASE",
    "Cgroup",
    "DiskBound",
    "DiskWatch",
    "LayerDisk",
    "bridge_for",
    "default_signals",
    "engine_quota",
    "first_child",
    "hide_processes",
    "host_gid",
    "host_id",
    "mapped",
    "mount",
    "mounts_below",
    "quota_option",
    "refuses_quota",
    "remember_quota",
    "remove_orphans",
    "remove_stale_cgroups",
    "reset_reserved",
    "say_disk_limit",
    "say_once",
    "seccomp_filter_fd",
    "shared_watch",
    "strict_filter",
    "unmount",
    "unmount_below",
    "usage",
    "userns_fd",
    "verifier_filter",
    "verifier_profile",
    "wall_bwrap",
    "wall_docker",
    "watch_filter",
]
