"""The agent registry: names mapped to lazily imported factories, plus entry-point plugins."""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Callable, Mapping
from typing import Any

from termgym._registry import Entry, Registry
from termgym._vocabulary import did_you_mean
from termgym.agents._base import Agent
from termgym.errors import AgentError, UnknownAgent

ENTRY_POINT_GROUP = "termgym.agents"
"""Third-party packages register agents under this entry-point group: name = "module:factory"."""

registry: Registry[Callable[..., Agent]] = Registry(
    "agent",
    ENTRY_POINT_GROUP,
    UnknownAgent,
    miss="no agent named {name!r}; expected one of {listed}.{hint}",
)
AgentSpec = Entry
"""A registered agent: `name`, `target` ("module:factory" or the factory) and `options` (the
default options, overridden by those given to `make_agent`)."""


def register_agent(
    name: str, entry_point: str | Callable[..., Agent], **kwargs: Any
) -> Entry[Callable[..., Agent]]:
    """Register an agent factory under `name` (replacing any agent of that name)."""
    return registry.register(name, entry_point, options=kwargs)


def unregister_agent(name: str) -> None:
    """Remove an agent from the registry (no error if absent)."""
    registry.unregister(name)


def registered_agents() -> list[str]:
    """Names of every registered agent, plugins included, sorted."""
    return registry.names()


def agent_spec(name: str) -> Entry[Callable[..., Agent]]:
    """The entry registered under `name`; UnknownAgent with a suggestion on a miss."""
    return registry.entry(name)


def check_agent(name: str, **options: Any) -> None:
    """Check what `make_agent(name, **options)` checks before it builds the agent: the name,
    the factory's import, the option names and the values given as strings, without
    building one (a run checks its agent once, before any episode starts).

    Raises:
        UnknownAgent: no agent of that name (with a "did you mean").
        AgentError: the factory does not import, takes no such option, or a value does not
            convert to the type it declares.
    """
    _factory_and_options(name, options)


def make_agent(name: str, **options: Any) -> Agent:
    """Build the agent registered under `name` with `options` (over the spec's defaults)."""
    spec = agent_spec(name)
    factory, merged = _factory_and_options(name, options)
    agent = factory(**merged)
    if not isinstance(agent, Agent):
        raise AgentError(
            f"agent {name!r}: factory {spec.target!r} returned {type(agent).__name__}, "
            "expected an object with name, privileged, reset(), act() and transcript()"
        )
    return agent


def _factory_and_options(
    name: str, options: dict[str, Any]
) -> tuple[Callable[..., Agent], dict[str, Any]]:
    """The factory registered under `name` and the options it is called with (the spec's
    defaults under `options`, strings converted), checked."""
    spec = agent_spec(name)
    try:
        factory = spec.load("agent")
    except ValueError as exc:
        raise AgentError(str(exc)) from exc
    merged = {**spec.options, **options}
    _check_options(name, factory, merged)
    return factory, coerce_options(name, factory, merged)


def _check_options(name: str, factory: Callable[..., Any], options: dict[str, Any]) -> None:
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        accepted = [n for n, p in params.items() if p.kind is not inspect.Parameter.VAR_POSITIONAL]
        for option in options:
            if option not in accepted:
                raise AgentError(
                    f"agent {name!r} takes no option {option!r}; expected one of {accepted}."
                    + did_you_mean(option, accepted)
                )
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    missing = [
        n
        for n, p in params.items()
        if p.kind in named and p.default is inspect.Parameter.empty and n not in options
    ]
    if missing:
        raise AgentError(
            f"agent {name!r} needs the option(s) {missing}; expected each as "
            f"--agent-opt {missing[0]}=VALUE (termgym run) or make_agent({name!r}, "
            f"{missing[0]}=...)"
        )


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def coerce_options(
    name: str, factory: Callable[..., Any], options: dict[str, Any]
) -> dict[str, Any]:
    """Convert string option values (from the command line) to the types the factory declares.

    bool takes true/false/yes/no/1/0, int and float their literals, a mapping or list JSON,
    and "none" gives None where None is allowed. Non-string values pass through.
    """
    target = factory.__init__ if inspect.isclass(factory) else factory  # type: ignore[misc]
    try:
        hints = typing.get_type_hints(target)
    except Exception:  # unresolvable annotations: leave the values as they are
        return options
    out = dict(options)
    for key, value in options.items():
        hint = hints.get(key)
        if not isinstance(value, str) or hint is None:
            continue
        out[key] = _coerce(name, key, value, hint)
    return out


def _coerce(agent: str, key: str, value: str, hint: Any) -> Any:
    args = typing.get_args(hint)
    kinds = [a for a in args if a is not type(None)] if args else [hint]
    if type(None) in args and value.strip().lower() in ("none", "null"):
        return None
    if str in kinds:
        return value
    for kind in kinds:
        origin = typing.get_origin(kind) or kind
        try:
            if origin is bool:
                lowered = value.strip().lower()
                if lowered in _TRUE | _FALSE:
                    return lowered in _TRUE
                raise ValueError(value)
            if origin is int:
                return int(value)
            if origin is float:
                return float(value)
            if isinstance(origin, type) and issubclass(origin, Mapping | list):
                return json.loads(value)
        except (ValueError, TypeError):
            continue
    expected = " or ".join(getattr(k, "__name__", str(k)) for k in kinds)
    raise AgentError(f"agent {agent!r} option {key!r}: expected {expected}, found {value!r}")
