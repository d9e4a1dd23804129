"""Every error termgym raises, rooted at TermgymError.

The tree:

    TermgymError
    ├── SandboxError                 a sandbox could not start, run or stop
    │   ├── BackendUnavailable       the backend's engine or tool is missing
    │   ├── UnknownBackend           no backend of that name
    │   └── SandboxCrashed           the sandbox died under a running command
    ├── ImageError                   an image could not be built or found
    ├── TaskError                    a task could not be found or loaded
    │   ├── TaskNotFound
    │   └── TaskSpecError            a task.yaml is malformed (file, field, expected)
    ├── GraderError                  a grader crashed or timed out: infrastructure, never a score
    │   └── UnknownGraderKind
    ├── RecordingError               a recording could not be written or read
    ├── ActionError                  an action is not valid for the environment
    └── AgentError                   an agent could not produce an action
        └── UnknownAgent             no agent registered under that name
"""

from __future__ import annotations


class TermgymError(Exception):
    """Root of every error termgym raises."""


class SandboxError(TermgymError):
    """A sandbox could not start, run a command, or stop."""


class BackendUnavailable(SandboxError):
    """The backend's engine or tool is not installed or does not answer."""


class UnknownBackend(SandboxError):
    """No sandbox backend is registered under that name."""


class SandboxCrashed(SandboxError):
    """The sandbox died (killed from outside, engine gone) while a command ran."""


class ImageError(TermgymError):
    """An image could not be built, imported or found."""


class TaskError(TermgymError):
    """A task could not be found or loaded."""


class TaskNotFound(TaskError):
    """No task is registered or stored under that id."""


class TaskSpecError(TaskError):
    """A task specification is malformed; the message names the file and the field."""


class GraderError(TermgymError):
    """A grader crashed or timed out: an infrastructure error, never a score of 0."""


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
