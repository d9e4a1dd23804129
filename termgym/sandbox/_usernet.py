"""A bwrap sandbox's own network: a network namespace with outbound access through slirp4netns.

A task with `limits.network: true` gets a network namespace made for its sandbox (owned by
the sandbox's user namespace, so its root's capabilities, if it keeps any, hold there and
nowhere else), which every process of the sandbox enters, and a user-mode network stack,
slirp4netns, that gives it a tap device with the address 10.0.2.100, a gateway and a DNS
forwarder at RESOLVER. Outbound connections leave from the host as slirp4netns's own
sockets; `--disable-host-loopback` refuses the one way slirp offers to the host's loopback
(the gateway 10.0.2.2), so a service bound to the host's 127.0.0.1 is out of reach. The
sandbox's /etc/resolv.conf names RESOLVER.

slirp4netns parses every packet the agent sends, so it runs with the sandbox root's host
uid (it enters the sandbox's user namespace first), in a mount namespace of its own
(`--enable-sandbox`) with its seccomp filter. To make its tap device it opens
/dev/net/tun, which many machines keep to root (mode 0600): it is given a device node of
its own uid, bound at /dev/net/tun in a mount namespace made for it alone.
"""

from __future__ import annotations

import contextlib
import os
import select
import shlex
import shutil
import stat
import subprocess
import time
from pathlib import Path

from termgym.errors import BackendUnavailable, SandboxStartError
from termgym.sandbox._spawn import Launch, spawn

RESOLVER = "10.0.2.3"
"""slirp4netns's DNS forwarder, as seen from the sandbox."""

MTU = 65520
TUN = (10, 200)
"""/dev/net/tun's device numbers."""


def resolv_conf() -> str:
    """The sandbox's /etc/resolv.conf."""
    return f"nameserver {RESOLVER}\n"


class UserNet:
    """One sandbox's network namespace (held by a sleeping process) and its slirp4netns."""

    def __init__(self, userns: str, folder: Path, owner: int, *, timeout: float = 10.0) -> None:
        """Make the namespace inside the user namespace `userns` (a file naming it), and
        start slirp4netns in it as `owner` (that namespace's root on the host).

        Raises:
            BackendUnavailable: slirp4netns (or unshare, nsenter) is not installed.
            SandboxStartError: the namespace or its network could not be made in time.
        """
        self.holder: subprocess.Popen[bytes] | None = None
        self.slirp: subprocess.Popen[bytes] | None = None
        self._exit_writer = -1
        tools = {name: shutil.which(name, path=os.defpath + ":/usr/sbin:/sbin") for name in
                 ("slirp4netns", "unshare", "nsenter", "mount")}  # fmt: skip
        missing = [name for name, found in tools.items() if found is None]
        if missing:
            raise BackendUnavailable(
                f"Expected {', '.join(missing)} on this machine to give a bwrap sandbox a "
                "network of its own (`apt-get install slirp4netns`, or `make system`); "
                "found none."
            )
        deadline = time.monotonic() + timeout
        try:
            # `cat` on a pipe only this process holds: it ends with this process
            self.holder = spawn(
                [tools["unshare"], "--net", "--", "cat"],  # type: ignore[list-item]
                launch=Launch(userns=userns), stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            self.path = f"/proc/{self.holder.pid}/ns/net"
            self._wait_for_namespace(deadline)
            self._start_slirp(tools, userns, _tun_node(folder, owner), deadline)
        except BaseException:
            self.close()
            raise

    def _wait_for_namespace(self, deadline: float) -> None:
        assert self.holder is not None
        mine = os.readlink("/proc/self/ns/net")
        while True:
            with contextlib.suppress(OSError):
                if os.readlink(self.path) != mine:
                    return
            if self.holder.poll() is not None or time.monotonic() > deadline:
                raise SandboxStartError("Could not make a network namespace for the sandbox.")
            time.sleep(0.002)

    def _start_slirp(
        self, tools: dict[str, str | None], userns: str, node: Path, deadline: float
    ) -> None:
        ready, signal_fd = os.pipe()
        exit_fd, self._exit_writer = os.pipe()  # slirp4netns ends when it closes: with us
        try:
            inner = [
                tools["nsenter"], f"--user={userns}", "--", tools["slirp4netns"], "--configure",
                f"--mtu={MTU}", "--disable-host-loopback", "--enable-sandbox",
                "--enable-seccomp", f"--ready-fd={signal_fd}", f"--exit-fd={exit_fd}",
                "--netns-type=path", self.path,
                "tap0",
            ]  # fmt: skip
            script = (
                f"{shlex.quote(str(tools['mount']))} --bind {shlex.quote(str(node))} "
                f"/dev/net/tun && exec {shlex.join(str(a) for a in inner)}"
            )
            self.slirp = spawn(
                [tools["unshare"], "--mount", "--propagation", "private", "--", "sh", "-c",  # type: ignore[list-item]
                 script],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                pass_fds=(signal_fd, exit_fd),
            )  # fmt: skip
            os.close(signal_fd)
            signal_fd = -1
            left = max(0.0, deadline - time.monotonic())
            readable, _, _ = select.select([ready], [], [], left)
            got = os.read(ready, 1) if readable else b""
        finally:
            os.close(ready)
            os.close(exit_fd)
            if signal_fd >= 0:
                os.close(signal_fd)
        if got != b"1":
            output = b""
            if self.slirp.poll() is not None and self.slirp.stdout is not None:
                output = self.slirp.stdout.read()
            raise SandboxStartError(
                "slirp4netns did not bring up the sandbox's network: "
                + (output.decode(errors="replace").strip()[-400:] or "no answer in time")
            )
        if self.slirp.stdout is not None:  # nothing reads it from here on
            self.slirp.stdout.close()

    def alive(self) -> bool:
        """True while the namespace and its network stack both run."""
        return all(p is not None and p.poll() is None for p in (self.holder, self.slirp))

    def close(self) -> None:
        """Stop slirp4netns and let the namespace go (idempotent)."""
        if self._exit_writer >= 0:
            os.close(self._exit_writer)
            self._exit_writer = -1
        if self.holder is not None and self.holder.stdin is not None:
            with contextlib.suppress(OSError):
                self.holder.stdin.close()
        for process in (self.slirp, self.holder):
            if process is not None and process.poll() is None:
                with contextlib.suppress(OSError):
                    os.killpg(process.pid, 9)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=5)


def _tun_node(folder: Path, owner: int) -> Path:
    """A /dev/net/tun node that host uid `owner` may open (made once in `folder`)."""
    node = folder / f"tun-{owner}"
    try:
        info = os.stat(node, follow_symlinks=False)
    except FileNotFoundError:
        folder.mkdir(parents=True, exist_ok=True)
        made = folder / f".tun-{owner}-{os.getpid()}"
        with contextlib.suppress(FileNotFoundError):
            made.unlink()
        os.mknod(made, 0o600 | stat.S_IFCHR, os.makedev(*TUN))
        os.chown(made, owner, owner)
        os.replace(made, node)
        return node
    if not stat.S_ISCHR(info.st_mode) or os.major(info.st_rdev) != TUN[0] or info.st_uid != owner:
        raise SandboxStartError(f"Expected {node} to be a tun device node of uid {owner}.")
    return node
