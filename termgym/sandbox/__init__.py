"""Sandboxes: where an agent's commands run, through one persistent shell."""

from __future__ import annotations

from termgym.sandbox._base import BASE_IMAGE, SANDBOX_LABEL, RunResult, Sandbox, SandboxConfig
from termgym.sandbox._docker import collect_garbage
from termgym.sandbox._registry import (
    BackendSpec,
    bwrap_works,
    default_backend,
    make_sandbox,
    register,
    registry,
    spec,
)

__all__ = [
    "BASE_IMAGE",
    "SANDBOX_LABEL",
    "BackendSpec",
    "RunResult",
    "Sandbox",
    "SandboxConfig",
    "bwrap_works",
    "collect_garbage",
    "default_backend",
    "make_sandbox",
    "register",
    "registry",
    "spec",
]
