"""Agents: the Agent protocol, the registry, and the bundled oracle, memorizer, cheater, replay,
noop and llm."""

from __future__ import annotations

from termgym._actions import REPORT_CONFLICT, SUBMIT, conflict_reason, ends_episode, report_conflict
from termgym.agents._base import (
    Agent,
    AgentSandbox,
    EpisodeContext,
    Reference,
    agent_log_of,
    agent_sandbox,
    close_agent,
)
from termgym.agents._registry import (
    ENTRY_POINT_GROUP,
    AgentSpec,
    agent_spec,
    check_agent,
    make_agent,
    register_agent,
    registered_agents,
    unregister_agent,
)
from termgym.agents.harbor import NAMES as HARBOR_NAMES

register_agent("oracle", "termgym.agents._reference:OracleAgent")
register_agent("memorizer", "termgym.agents._reference:MemorizerAgent")
register_agent("cheater", "termgym.agents._reference:CheaterAgent")
register_agent("replay", "termgym.agents._replay:ReplayAgent")
register_agent("noop", "termgym.agents._noop:NoopAgent")
register_agent("llm", "termgym.agents._llm:LLMAgent")
for _name in HARBOR_NAMES:  # Harbor's agents, run by Harbor's own code (docs/agents.md)
    register_agent(f"harbor:{_name}", "termgym.agents.harbor:HarborAgent", harbor=_name)

__all__ = [
    "ENTRY_POINT_GROUP",
    "REPORT_CONFLICT",
    "SUBMIT",
    "Agent",
    "AgentSandbox",
    "HARBOR_NAMES",
    "AgentSpec",
    "EpisodeContext",
    "Reference",
    "agent_log_of",
    "agent_sandbox",
    "close_agent",
    "agent_spec",
    "check_agent",
    "conflict_reason",
    "ends_episode",
    "report_conflict",
    "make_agent",
    "register_agent",
    "registered_agents",
    "unregister_agent",
]
