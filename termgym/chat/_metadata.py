"""What an episode's end tells a trainer: variant, class and verdicts, flat and JSON-able.

This is for the trainer's logs (stale-rule rates, reward by variant), never for the model:
the chat adapter keeps it out of every message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from termgym._vocabulary import GRADER_ERROR, INFRA_ERROR
from termgym.tasks import TamperEvidence


def grading_metadata(info: Mapping[str, Any]) -> dict[str, Any]:
    """The final info of an episode reduced to JSON-able values.

    Keys: task_id, variant, class, reward (the episode's score, read from its own verdict:
    what the last step returned), passed (the episode's own rules; False for a grader
    error, scored 0 even when its own rule set graded and a shadow one did not),
    passed_original (the shadow verdict under the authored rules), verdicts ({rule set:
    {passed, score}}),
    rules_enforced, rules_changed (the enforced values differ from the authored ones, as
    the shadow verdict graded them: what `termgym.analysis` counts as shifted), stale,
    adapted, grader_error, infra_error (skip such episodes), error, episode_file,
    conflict_reported and conflict (the reason the agent gave with REPORT_CONFLICT),
    tampered and tamper_kinds (its tamper evidence: tests, toolchain, system). Values are
    None where the info has none (an episode not yet ended).
    """
    verdicts = {
        str(name): {"passed": _passed(v), "score": _score(v)}
        for name, v in dict(info.get("verdicts") or {}).items()
        if isinstance(v, Mapping)
    }
    variant = info.get("variant")
    cls = info.get("class")
    own = verdicts.get(str(variant)) if variant is not None else None
    original = verdicts.get("original")
    enforced = _jsonable(info.get("rules_enforced") or {})
    tamper = TamperEvidence.from_dict(info.get("tamper"))
    return {
        "task_id": info.get("task_id"),
        "variant": variant,
        "class": cls,
        "reward": _reward(info, own),
        # a grader error fails (reward 0), whatever its own rule set's verdict
        "passed": False if cls == GRADER_ERROR else (own["passed"] if own else None),
        "passed_original": original["passed"] if original else None,
        "verdicts": verdicts,
        "rules_enforced": enforced,
        "rules_changed": _rules_changed(info, enforced),
        "stale": cls == "stale",
        "adapted": cls == "adapted",
        "grader_error": cls == GRADER_ERROR,
        "infra_error": cls == INFRA_ERROR,
        "error": info.get("error"),
        "episode_file": info.get("episode_file"),
        "conflict_reported": info.get("conflict") is not None if "verdicts" in info else None,
        "conflict": info.get("conflict"),
        "tampered": tamper.tampered if tamper is not None else None,
        "tamper_kinds": list(tamper.kinds) if tamper is not None else [],
    }


def _reward(info: Mapping[str, Any], own: Mapping[str, Any] | None) -> float | None:
    """The score the environment paid: its own verdict's, 0 when it could not be graded."""
    if "verdicts" not in info:
        return None  # not an episode's final info
    if info.get("class") in (GRADER_ERROR, INFRA_ERROR) or own is None:
        return 0.0
    return own["score"] if own["score"] is not None else 0.0


def _rules_changed(info: Mapping[str, Any], enforced: Any) -> bool | None:
    """Whether the enforced values differ from those the original shadow verdict graded
    (None when the info holds no original verdict with its rules)."""
    original = dict(info.get("verdicts") or {}).get("original")
    rules = original.get("rules") if isinstance(original, Mapping) else None
    if not isinstance(rules, Mapping):
        return None
    return {k: v for k, v in _jsonable(rules).items() if k in enforced} != enforced


def _score(verdict: Mapping[str, Any]) -> float | None:
    """A verdict's score; None where a grader could not run (`known` False in an env's
    info, or None in a recording's)."""
    value = verdict.get("score")
    if verdict.get("known") is False or not isinstance(value, int | float):
        return None
    return float(value)


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _passed(verdict: Mapping[str, Any]) -> bool | None:
    value = verdict.get("passed")
    if verdict.get("known") is False or not isinstance(value, bool):
        return None
    return value
