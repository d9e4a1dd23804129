"""ATIF, the Agent Trajectory Interchange Format (Harbor's RFC 0001, v1.0 to v1.8), as models.

Written from the specification: a trajectory is an agent, a list of steps numbered from 1
(system, user or agent), agent steps with tool calls and the observations that answer them,
per-step and final metrics, and `extra` objects for what the format leaves to the producer.
Unknown fields are refused, as the reference validator refuses them, so a file these models
accept is one Harbor's viewer and the tools that read ATIF can read.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

ATIF_VERSIONS: tuple[str, ...] = tuple(f"ATIF-v1.{n}" for n in range(9))
"""The versions read; termgym writes `ATIF_VERSION`."""
ATIF_VERSION = "ATIF-v1.7"
"""The version termgym writes (observation-result `extra` and `llm_call_count` are v1.7)."""

StepSource = Literal["system", "user", "agent"]
_AGENT_ONLY = ("model_name", "reasoning_effort", "reasoning_content", "tool_calls", "metrics")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ContentPart(_Model):
    """A part of a multimodal message (v1.6): text, or an image or audio by reference."""

    type: Literal["text", "image", "audio"]
    text: str | None = None
    source: dict[str, Any] | None = None


class ToolCall(_Model):
    """One action of an agent step: a function name and its arguments."""

    tool_call_id: str
    function_name: str
    arguments: dict[str, Any]
    extra: dict[str, Any] | None = None


class SubagentTrajectoryRef(_Model):
    """Where a delegated subagent's trajectory is (a file, or one embedded by id)."""

    session_id: str | None = None
    trajectory_id: str | None = None
    trajectory_path: str | None = None
    extra: dict[str, Any] | None = None


class ObservationResult(_Model):
    """One result: the answer to a tool call (`source_call_id`), or to an action without one."""

    source_call_id: str | None = None
    content: str | list[ContentPart] | None = None
    subagent_trajectory_ref: list[SubagentTrajectoryRef] | None = None
    extra: dict[str, Any] | None = None


class Observation(_Model):
    """What the environment answered to a step's actions."""

    results: list[ObservationResult]


class Metrics(_Model):
    """One LLM call's tokens and cost."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    cost_usd: float | None = None
    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    extra: dict[str, Any] | None = None


class FinalMetrics(_Model):
    """The trajectory's totals."""

    total_prompt_tokens: int | None = None
    total_completion_tokens: int | None = None
    total_cached_tokens: int | None = None
    total_cost_usd: float | None = None
    total_steps: int | None = Field(default=None, ge=0)
    extra: dict[str, Any] | None = None


class Agent(_Model):
    """The agent system: name, version, default model and the tools it was given."""

    name: str
    version: str
    model_name: str | None = None
    tool_definitions: list[dict[str, Any]] | None = None
    extra: dict[str, Any] | None = None


class Step(_Model):
    """One turn: a system message, a user message, or an agent turn (reply, actions,
    observation)."""

    step_id: int = Field(ge=1)
    timestamp: str | None = None
    source: StepSource
    model_name: str | None = None
    reasoning_effort: str | float | None = None
    message: str | list[ContentPart]
    reasoning_content: str | None = None
    tool_calls: list[ToolCall] | None = None
    observation: Observation | None = None
    metrics: Metrics | None = None
    is_copied_context: bool | None = None
    llm_call_count: int | None = Field(default=None, ge=0)
    extra: dict[str, Any] | None = None

    @field_validator("timestamp")
    @classmethod
    def _iso_8601(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError as exc:
                raise ValueError(f"timestamp: expected ISO 8601, got {value!r}") from exc
        return value

    @model_validator(mode="after")
    def _fields_of_its_source(self) -> Step:
        if self.source != "agent":
            for name in _AGENT_ONLY:
                if getattr(self, name) is not None:
                    raise ValueError(f"{name}: only an agent step has it (source {self.source!r})")
        if self.llm_call_count == 0 and (self.metrics or self.reasoning_content):
            raise ValueError("llm_call_count 0 (no LLM call): expected no metrics or reasoning")
        if self.observation is not None:
            calls = {call.tool_call_id for call in self.tool_calls or ()}
            for result in self.observation.results:
                if result.source_call_id is not None and result.source_call_id not in calls:
                    raise ValueError(
                        f"observation answers source_call_id {result.source_call_id!r}, "
                        f"which is not a tool call of step {self.step_id}"
                    )
        return self


class Trajectory(_Model):
    """A whole run of an agent: its steps in order, numbered 1, 2, 3 ..."""

    schema_version: Literal[ATIF_VERSIONS] = ATIF_VERSION  # type: ignore[valid-type]
    session_id: str | None = None
    trajectory_id: str | None = None
    agent: Agent
    steps: list[Step] = Field(min_length=1)
    notes: str | None = None
    final_metrics: FinalMetrics | None = None
    continued_trajectory_ref: str | None = None
    extra: dict[str, Any] | None = None
    subagent_trajectories: list[Trajectory] | None = None

    @model_validator(mode="after")
    def _numbered_steps(self) -> Trajectory:
        for index, step in enumerate(self.steps, start=1):
            if step.step_id != index:
                raise ValueError(
                    f"steps[{index - 1}].step_id: expected {index}, got {step.step_id}"
                )
        ids = [sub.trajectory_id for sub in self.subagent_trajectories or ()]
        if None in ids or len(set(ids)) != len(ids):
            raise ValueError("subagent_trajectories: each needs its own trajectory_id")
        return self
