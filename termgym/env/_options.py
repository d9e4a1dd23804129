"""What termgym.make, MultiTaskEnv, rollout and the adapters accept: `EnvOptions`, parsed once.

Every entry point that makes environments (`TerminalEnv`, `MultiTaskEnv`, `termgym.rollout`,
`termgym run`'s episodes, the adapters through these) parses its options here, once, into a
frozen `EnvOptions`; the env, the pool and grading below take its typed values and check
them no more. A bad option is refused with what was expected and what was found.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from numbers import Integral, Real
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    InstanceOf,
    ValidationError,
    field_validator,
    model_validator,
)

from termgym._vocabulary import did_you_mean
from termgym.agents import AgentSandbox
from termgym.recording import EpisodeHeader, Recorder
from termgym.sandbox import Backend, GatewayMount
from termgym.tasks import RuleDraw

MODES = ("command", "keys")
RENDER_MODES = ("ansi",)
WEAK_ISOLATION = ("pay", "withhold")
"""What a verdict graded with a defence of the verifier not holding may pay (docs/security.md)."""


class EnvOptions(BaseModel):
    """The options of a task's environment (TerminalEnv's keyword arguments but the task and
    its variant), checked once by `EnvOptions.parse`. See `TerminalEnv` for each one."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    backend: InstanceOf[Backend] | None = None
    """Checked already (`Backend.coerce`); None: the best available, chosen when the env is
    made (`chosen_backend`)."""
    mode: Literal["command", "keys"] = "command"
    max_steps: int | None = None
    step_timeout: float | None = None
    record_dir: Path | None = None
    agent: str = "unknown"
    shadow: bool = True
    render_mode: Literal["ansi"] | None = None
    pool_size: int = 1
    allow_local: bool = False
    run_id: str = ""
    runtime: str | None = None
    rule_draw: InstanceOf[RuleDraw] = RuleDraw()
    recorder: Callable[[EpisodeHeader], Recorder] | None = None
    weak_isolation: Literal["pay", "withhold"] = "pay"
    agent_sandbox: InstanceOf[AgentSandbox] = AgentSandbox()
    gateway: InstanceOf[GatewayMount] | None = None

    @classmethod
    def parse(cls, where: str = "", **options: Any) -> EnvOptions:
        """The options, checked: the one place an environment's options are.

        `where`: the entry point named in an unknown option's error ("MultiTaskEnv").

        Raises:
            TypeError: an option no environment takes (with a "did you mean").
            ValueError: an option's value is not of the kind expected (the message says
                which and what was found).
            UnknownBackend, SandboxError: the backend, or a runtime it cannot take.
        """
        names = tuple(cls.model_fields)
        unknown = sorted(set(options) - set(names))
        if unknown:
            raise TypeError(
                f"{where + ': ' if where else ''}unknown option(s) {unknown}; expected "
                f"TerminalEnv's: {', '.join(names)}.{did_you_mean(str(unknown[0]), names)}"
            )
        try:
            return cls(**options)
        except ValidationError as exc:
            raise _first(exc) from None

    def chosen_backend(self) -> Backend:
        """The backend the env's sandboxes run on: the one given, or the best available
        here, with the runtime checked against it."""
        return Backend.coerce(self.backend, self.runtime)

    @model_validator(mode="before")
    @classmethod
    def _backend_and_recording(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        record_dir, recorder = data.get("record_dir"), data.get("recorder")
        if recorder is not None and record_dir is not None:
            raise ValueError(
                "expected record_dir or recorder, not both: record_dir records each episode "
                "with an EpisodeWriter in that run folder, recorder makes each episode's own"
            )
        if data.get("backend") is not None:  # None: chosen when the env is made
            data = {**data, "backend": Backend.coerce(data["backend"], data.get("runtime"))}
        return data

    @field_validator("mode", mode="before")
    @classmethod
    def _mode(cls, value: Any) -> Any:
        if value not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {value!r}")
        return value

    @field_validator("render_mode", mode="before")
    @classmethod
    def _render_mode(cls, value: Any) -> Any:
        if value is not None and value not in RENDER_MODES:
            raise ValueError(
                f"render_mode must be None or one of {list(RENDER_MODES)} (the current "
                f"screen as text), got {value!r}"
            )
        return value

    @field_validator("weak_isolation", mode="before")
    @classmethod
    def _weak_isolation(cls, value: Any) -> Any:
        if value not in WEAK_ISOLATION:
            raise ValueError(
                f"weak_isolation must be one of {WEAK_ISOLATION}, got {value!r}: "
                "'pay' pays a verdict whose grading had a defence not holding (its info marks "
                "it), 'withhold' pays 0 for it"
            )
        return value

    @field_validator("max_steps", mode="before")
    @classmethod
    def _max_steps(cls, value: Any) -> Any:
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, Integral) or value < 1
        ):
            raise ValueError(
                f"max_steps: expected an int >= 1 (or None: the task's limit), found {value!r}"
            )
        return None if value is None else int(value)

    @field_validator("step_timeout", mode="before")
    @classmethod
    def _step_timeout(cls, value: Any) -> Any:
        if value is not None and (
            isinstance(value, bool)
            or not isinstance(value, Real)
            or not math.isfinite(value)
            or value <= 0
        ):
            raise ValueError(
                "step_timeout: expected a number of seconds > 0 (or None: the task's agent "
                f"timeout), found {value!r}"
            )
        return None if value is None else float(value)

    @field_validator("pool_size", mode="before")
    @classmethod
    def _pool_size(cls, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, Integral) or value < 0:
            raise ValueError(
                f"pool_size: expected an int >= 0 (0: a cold start each reset), found {value!r}"
            )
        return int(value)

    @field_validator("record_dir", mode="before")
    @classmethod
    def _record_dir(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, str | os.PathLike):
            raise ValueError(f"record_dir: expected a folder path (str or Path), found {value!r}")
        return value

    @field_validator("recorder", mode="before")
    @classmethod
    def _recorder(cls, value: Any) -> Any:
        if value is not None and not callable(value):
            raise ValueError(
                "recorder: expected a function of an episode's EpisodeHeader returning its "
                f"Recorder, found {value!r}"
            )
        return value

    @field_validator("runtime", mode="before")
    @classmethod
    def _runtime(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, str):
            raise ValueError(
                "runtime: expected a Docker runtime name (str, e.g. 'runsc') or None, "
                f"found {value!r}"
            )
        return value

    @field_validator("rule_draw", mode="before")
    @classmethod
    def _rule_draw(cls, value: Any) -> RuleDraw:
        return RuleDraw.coerce(value)

    @field_validator("agent_sandbox", mode="before")
    @classmethod
    def _agent_sandbox(cls, value: Any) -> Any:
        return AgentSandbox() if value is None else value

    @field_validator("gateway", mode="before")
    @classmethod
    def _gateway(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, GatewayMount):
            raise ValueError(
                "gateway: expected a termgym.sandbox.GatewayMount (a started Gateway's "
                f"`mount`) or None, found {value!r}"
            )
        return value


def _first(exc: ValidationError) -> Exception:
    """The first error of a validation, as the error its check raised (its own message), or
    one saying which option, what was expected and what was found."""
    error = exc.errors()[0]
    raised = error.get("ctx", {}).get("error")
    if isinstance(raised, Exception):
        return raised
    name = ".".join(str(part) for part in error["loc"]) or "options"
    return ValueError(f"{name}: {error['msg'].lower()}, found {error['input']!r}")
