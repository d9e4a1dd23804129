"""Agents: the Agent protocol, the registry, and the bundled oracle, memorizer, replay and llm."""

from __future__ import annotations

from termgym._actions import REPORT_CONFLICT, SUBMIT, conflict_reason, ends_episode, report_conflict
from termgym.agents._base import Agent, EpisodeContext, Reference
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

register_agent("oracle", "termgym.agents._reference:OracleAgent")
register_agent("memorizer", "termgym.agents._reference:MemorizerAgent")
register_agent("cheater", "termgym.agents._reference:CheaterAgent")
register_agent("replay", "termgym.agents._replay:ReplayAgent")
register_agent("llm", "termgym.agents._llm:LLMAgent")

__all__ = [
    "ENTRY_POINT_GROUP",
    "REPORT_CONFLICT",
    "SUBMIT",
    "Agent",
    "AgentSpec",
    "EpisodeContext",
    "Reference",
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
