"""The model gateway: the one address an agent's sandbox reaches, recording every model call.

A host-side HTTP server that forwards OpenAI chat completions and responses and Anthropic
messages (streamed or not) to one configured endpoint with the host's key, and records
every call for its episode, so the trace audit, the disclosure probe, the TUI's transcript
and the ATIF export work for any agent, whatever its own log format (docs/agents.md, "The
model gateway"; docs/security.md says what it guarantees per backend).

    with Gateway(Upstream("http://127.0.0.1:8000/v1", api_key=key), host=True) as gateway:
        env = TerminalEnv(task, gateway=gateway.mount)    # its sandboxes reach the gateway
        route = gateway.open_route(episode_id, record_to=calls_file(run_dir, episode_id))
        route.sandbox_env()   # OPENAI_BASE_URL, OPENAI_API_KEY=<the token>, ANTHROPIC_...
        ...
        route.probe()         # the disclosure question, after the agent is done
        route.transcript()    # what the agent's transcript() returns
        route.close()
"""

from __future__ import annotations

from termgym.gateway._apis import FORWARDED, api_of
from termgym.gateway._gateway import DEFAULT_PORT, Gateway
from termgym.gateway._route import Route
from termgym.gateway._transcript import transcript
from termgym.gateway._upstream import Upstream

__all__ = [
    "DEFAULT_PORT",
    "FORWARDED",
    "Gateway",
    "Route",
    "Upstream",
    "api_of",
    "transcript",
]
