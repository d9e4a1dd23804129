"""GraderSpec: one hidden grader as task.yaml declares it (its kind's parameters included)."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator


class GraderSpec(BaseModel):
    """One hidden grader: its kind, its weight, and the parameters its kind takes."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str
    kind: str
    weight: float = Field(default=1.0, ge=0)
    timeout: float | None = Field(default=None, gt=0)

    @field_validator("name")
    @classmethod
    def _name(cls, name: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
            raise ValueError(f"expected letters, digits, '_', '.' or '-', found {name!r}")
        return name

    @property
    def params(self) -> dict[str, Any]:
        """The kind-specific parameters (everything besides name, kind, weight, timeout)."""
        return dict(self.model_extra or {})
