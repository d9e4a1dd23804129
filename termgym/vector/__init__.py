"""Vector environments past one machine: `RayVectorEnv`, sub-environments as Ray actors."""

from __future__ import annotations

from termgym.vector._ray_vector import RayVectorEnv

__all__ = ["RayVectorEnv"]
