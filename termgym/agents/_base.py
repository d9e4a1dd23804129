"""The Agent protocol: what `termgym run` asks of anything that acts in an episode."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from termgym.images import LayerRecipe
from termgym.recording import AgentLog
from termgym.sandbox import GatewayMount


@dataclass(frozen=True)
class Reference:
    """What only reference agents (oracle, memorizer) may see: never given to a model.

    Attributes:
        oracle_script: The task's oracle solution (a shell script).
        memorized_script: The task's memorized solution (original values hard-coded).
        cheater_script: The task's cheater solution ("" when it declares none).
        conflict: On an impossible episode, what an honest agent reports (the stated and
            the enforced value, and where each is shown); "" on every other variant.
        withheld_rules: Rule values withheld from the visible task in this episode (JSON-able).
        workdir: The task's working directory inside the sandbox.
        rule_files: Workdir paths of the files that state the task's rules (what the task
            shows; `termgym.tasks.rule_files`): the oracle reads them before it acts.
    """

    oracle_script: str
    memorized_script: str
    withheld_rules: Mapping[str, Any] = field(default_factory=dict)
    workdir: str = "/app"
    rule_files: tuple[str, ...] = ()
    cheater_script: str = ""
    conflict: str = ""


@dataclass(frozen=True)
class EpisodeContext:
    """What an agent is told when an episode starts.

    Attributes:
        task_id: The task's id (never the variant).
        instruction: The rendered instruction, as the agent must read it.
        max_steps: The step budget; the episode is truncated past it.
        mode: "command" (an action is a shell command) or "keys" (raw keystrokes).
        episode_id: Id of the episode's recording.
        reference: Only for agents whose `privileged` is True (oracle, memorizer, replay).
        deadline: time.monotonic() at which the agent's time is up (the task's agent
            timeout, counted from its reset), or None: no limit is set. The runner ends the
            episode then whatever the agent is doing; an agent that runs work of its own
            (a process, a model route) ends it by then.
    """

    task_id: str
    instruction: str
    max_steps: int
    mode: str = "command"
    episode_id: str = ""
    reference: Reference | None = None
    deadline: float | None = None


@dataclass(frozen=True)
class AgentSandbox:
    """What an agent's episodes need of their sandbox beyond the task's own, declared by the
    agent as its `sandbox` attribute (an agent that declares none needs nothing more).

    Attributes:
        layer: A layer installed over the task's image (the agent's own program, from the
            registries), built once per task image before any episode (`layer_image`).
        harness: Folders the agent's harness writes in the sandbox (its logs): the
            agent's own places, left out of the tamper evidence as its work is.
        gateway: The model gateway an agent that runs inside the sandbox reaches there
            (`termgym.gateway.Gateway.mount`), the one address its sandbox reaches.
    """

    layer: LayerRecipe | None = None
    harness: tuple[str, ...] = ()
    gateway: GatewayMount | None = None


NO_NEEDS = AgentSandbox()


def agent_sandbox(agent: object) -> AgentSandbox:
    """The sandbox needs `agent` declares (its optional `sandbox` attribute), or none."""
    needs = getattr(agent, "sandbox", NO_NEEDS)
    return needs if isinstance(needs, AgentSandbox) else NO_NEEDS


def agent_log_of(agent: object) -> Callable[[], AgentLog | None] | None:
    """The agent's optional `agent_log` (its own account of an episode), or None."""
    found = getattr(agent, "agent_log", None)
    return found if callable(found) else None


def close_agent(agent: object) -> None:
    """Call the agent's optional `close()`: the end of what it started (safe twice)."""
    close = getattr(agent, "close", None)
    if callable(close):
        close()


@runtime_checkable
class Agent(Protocol):
    """Anything that turns observations into actions.

    `act` returns the next action: a shell command (command mode), keystrokes in the
    documented notation (keys mode), or SUBMIT to end the episode. `transcript` returns what
    the agent wrote besides its actions (model messages, reasoning) for the trace audit.
    An agent may also declare `sandbox: AgentSandbox`, what its episodes' sandboxes need
    (`agent_sandbox` reads it); have `agent_log()`, its own account of the episode (an ATIF
    trajectory its harness wrote, `termgym.recording.AgentLog`, or None), which the episode
    keeps as evidence for reading (`agent_log_of` reads it); and have `close()`, which ends
    what it started (a process, a model route) once the runner is done with it
    (`close_agent`).
    """

    name: str
    privileged: bool

    def reset(self, context: EpisodeContext) -> None:
        """Start a new episode."""

    def act(self, observation: Mapping[str, Any]) -> str:
        """Return the next action given the latest observation."""

    def transcript(self) -> list[dict[str, Any]]:
        """Messages the agent produced this episode: [{"step", "role", "content", "reasoning"}]."""
