"""Sandboxes: where an agent's commands run, through one persistent shell."""

from __future__ import annotations

from termgym.sandbox._base import BASE_IMAGE, SANDBOX_LABEL, RunResult, Sandbox, SandboxConfig

__all__ = ["BASE_IMAGE", "SANDBOX_LABEL", "RunResult", "Sandbox", "SandboxConfig"]
