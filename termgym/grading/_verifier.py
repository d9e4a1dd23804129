"""Where verifiers come from: a pool of warm ones, or a cold start per grading."""

from __future__ import annotations

import dataclasses
from typing import Protocol, runtime_checkable

from termgym.sandbox import NO_BYTECODE, Sandbox, SandboxConfig, StandbySpec, make_sandbox


@runtime_checkable
class SandboxSource(Protocol):
    """Hands out started sandboxes and takes them back (termgym.env's SandboxPool is one)."""

    def acquire(self, config: SandboxConfig) -> Sandbox:
        """A started sandbox for `config`."""

    def release(self, sandbox: Sandbox) -> None:
        """Done with `sandbox`: close it (possibly in the background)."""


class ColdStarts:
    """A SandboxSource that starts a fresh sandbox per acquire and closes it on release."""

    def __init__(self, backend: str, *, allow_local: bool = False) -> None:
        self.backend = backend
        self.allow_local = allow_local

    def acquire(self, config: SandboxConfig) -> Sandbox:
        sandbox = make_sandbox(self.backend, config, allow_local=self.allow_local)
        try:
            sandbox.start()
        except BaseException:
            sandbox.close()
            raise
        return sandbox

    def release(self, sandbox: Sandbox) -> None:
        sandbox.close()


def verifier_config(
    agent: SandboxConfig,
    *,
    network_of: str = "",
    standby: StandbySpec | None = None,
    snapshot_of: str = "",
) -> SandboxConfig:
    """The verifier of an agent's sandbox: the same clean image and limits, no shell, no
    network of its own (only the agent's, for live-state grading), the standby runner
    where the backend keeps one, of the agent's environment only termgym's bytecode
    convention (`NO_BYTECODE`), never the agent's model gateway, and the agent's final
    filesystem for snapshot grading (whose nests map root: SETFCAP, which the kernel asks
    of whoever maps it). Its disk is
    twice the agent's: room for the work (at most the agent's limit) and as much again for
    grading, so work that kept to its limit always fits."""
    labels = {**agent.labels, "io.termgym.role": "verifier"}
    return dataclasses.replace(
        agent, role="verifier", network=False, network_of=network_of, labels=labels,
        env={k: v for k, v in agent.env.items() if k in NO_BYTECODE},
        interactive=False, standby=standby, snapshot_of=snapshot_of, disk_mb=agent.disk_mb * 2,
        capabilities=("SETFCAP",) if snapshot_of else (), gateway=None,
    )  # fmt: skip
