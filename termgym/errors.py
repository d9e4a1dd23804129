"""Every error termgym raises, rooted at TermgymError.

The tree:

    TermgymError
    ├── InfrastructureError          the machinery failed: retried, left out of every rate
    │   ├── ImageError               an image could not be built or found
    │   │   └── ImageBuildFailed     a step of the Dockerfile failed: the same every time,
    │   │                            so never retried
    │   ├── BackendUnavailable *     the backend's engine or tool is missing
    │   ├── SandboxStartError *      a sandbox could not be started
    │   ├── EngineError *            the engine failed or missed a deadline on its own calls
    │   ├── GatewayError             the model gateway could not start or serve
    │   └── ClusterError             Ray is missing, unreachable, or no node holds sandboxes
    ├── SandboxError                 a sandbox could not start, run or stop
    │   ├── BackendUnavailable *
    │   ├── SandboxStartError *
    │   ├── EngineError *
    │   ├── UnknownBackend           no backend of that name
    │   ├── SandboxCrashed           the sandbox died under a running command
    │   │   └── DiskLimitExceeded    the agent wrote past the episode's disk limit
    │   └── ArchiveTooLarge          the agent's work to copy passed the size limit
    ├── TaskError                    a task could not be found or loaded
    │   ├── TaskNotFound
    │   ├── TaskSpecError            a task.yaml is malformed (file, field, expected)
    │   └── ImportRefused            a Terminal-Bench or Harbor task cannot run here (why)
    ├── GraderError                  the final state could not be graded (a grader crashed,
    │   │                            hung or left no valid report): the agent's failure,
    │   │                            scored 0 with class "grader-error" and counted
    │   └── UnknownGraderKind
    ├── RecordingError               a recording could not be written or read
    ├── ActionError                  an action is not valid for the environment
    └── AgentError                   an agent could not produce an action
        └── UnknownAgent             no agent registered under that name

(* under both parents.) Grading sorts every failure into one of two kinds: an
InfrastructureError when termgym's own machinery failed (engine down, image missing, a clean
sandbox that would not start), or a GraderError when grading the agent's final state failed.
"""

from __future__ import annotations


class TermgymError(Exception):
    """Root of every error termgym raises."""


class InfrastructureError(TermgymError):
    """termgym's machinery failed (not the agent): retried by runs, left out of every rate."""


class SandboxError(TermgymError):
    """A sandbox could not start, run a command, or stop."""


class ClusterError(InfrastructureError):
    """Ray is not installed or not reachable, or no node of the cluster holds sandboxes."""


class BackendUnavailable(SandboxError, InfrastructureError):
    """The backend's engine or tool is not installed or does not answer."""


class SandboxStartError(SandboxError, InfrastructureError):
    """A sandbox could not be started (from a clean image: nothing of an agent's is involved)."""


class EngineError(SandboxError, InfrastructureError):
    """The engine failed a call, or missed the host-side deadline of one."""


class GatewayError(InfrastructureError):
    """The model gateway (termgym.gateway) could not start or serve."""


class UnknownBackend(SandboxError):
    """No sandbox backend is registered under that name."""


class SandboxCrashed(SandboxError):
    """The sandbox died (killed from outside, engine gone) while a command ran."""


class DiskLimitExceeded(SandboxCrashed):
    """The agent wrote past the episode's disk limit; its sandbox was stopped."""


class ArchiveTooLarge(SandboxError):
    """The files to copy out of a sandbox passed the size limit (the agent's work)."""


class ImageError(InfrastructureError):
    """An image could not be built, imported or found."""


class ImageBuildFailed(ImageError):
    """A step of the image's own Dockerfile failed (not the engine or the network): the same
    again on every attempt, so runs do not retry it."""


class TaskError(TermgymError):
    """A task could not be found or loaded."""


class TaskNotFound(TaskError):
    """No task is registered or stored under that id."""


class TaskSpecError(TaskError):
    """A task specification is malformed; the message names the file and the field."""


class ImportRefused(TaskError):
    """A Terminal-Bench or Harbor task cannot run here; the message says why."""


class GraderError(TermgymError):
    """The final state could not be graded: the agent's failure, scored 0 ("grader-error").

    Grading runs in a clean sandbox with clean tools, so what breaks it is the agent's work
    (a program that hangs, floods or crashes the graders) or a broken task, which
    `termgym check` finds. `report` holds the partial GradeReport when one was made.
    """

    report: object | None = None


class UnknownGraderKind(GraderError):
    """No grader kind is registered under that name."""


class RecordingError(TermgymError):
    """A recording could not be written or read."""


class ActionError(TermgymError):
    """An action is not valid: not a str, or a keys-mode name that does not exist."""


class AgentError(TermgymError):
    """An agent could not produce an action."""


class UnknownAgent(AgentError):
    """No agent is registered under that name."""
