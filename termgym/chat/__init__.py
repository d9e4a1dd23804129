"""Chat and tool-call adapters: an episode as OpenAI-style messages, a reply as the action.

from termgym.chat import ChatEnv
chat = ChatEnv(termgym.make("fuel-planner", variant="contradicted"))
messages, info = chat.reset(seed=0)
new, reward, terminated, truncated, info = chat.step(reply)   # text or assistant message
"""

from __future__ import annotations

from termgym.chat._budget import ObservationBudget, TokenCounter, truncate_middle
from termgym.chat._env import ChatEnv, Message
from termgym.chat._metadata import grading_metadata
from termgym.chat._parse import (
    BASH_TOOL,
    KEYS_TOOL,
    KEYWORDS,
    NO_ACTION,
    NO_ACTION_TEXT,
    REPORT_CONFLICT_TOOL,
    SUBMIT_TOOL,
    TOOLS,
    Keyword,
    ParsedReply,
    Tool,
    no_action,
    parse_message,
    parse_reply,
    parse_text,
    split_reasoning,
    tool_schemas,
)
from termgym.chat._probe import (
    EPISODE_ENDED,
    PREFILL_STYLES,
    PREFILL_TARGETS,
    PREFILL_TEXT,
    PROBE_MODES,
    PROBE_QUESTION,
    ProbeMode,
    check_probe_options,
    continuation,
    prefill_request,
    prefill_text,
)
from termgym.chat._prompts import system_prompt

__all__ = [
    "EPISODE_ENDED",
    "PREFILL_STYLES",
    "PREFILL_TARGETS",
    "PREFILL_TEXT",
    "PROBE_MODES",
    "PROBE_QUESTION",
    "ProbeMode",
    "check_probe_options",
    "continuation",
    "prefill_request",
    "prefill_text",
    "BASH_TOOL",
    "KEYS_TOOL",
    "KEYWORDS",
    "NO_ACTION",
    "NO_ACTION_TEXT",
    "REPORT_CONFLICT_TOOL",
    "SUBMIT_TOOL",
    "TOOLS",
    "ChatEnv",
    "Keyword",
    "Message",
    "ObservationBudget",
    "ParsedReply",
    "TokenCounter",
    "Tool",
    "grading_metadata",
    "no_action",
    "parse_message",
    "parse_reply",
    "parse_text",
    "split_reasoning",
    "system_prompt",
    "tool_schemas",
    "truncate_middle",
]
