"""The values a recording holds: episode header, one record per step, episode end."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any, Literal

from termgym._vocabulary import CLASSES as CLASSES  # re-exported; defined there once
from termgym._vocabulary import GRADER_ERROR as GRADER_ERROR
from termgym._vocabulary import INFRA_ERROR as INFRA_ERROR
from termgym._vocabulary import TERMINAL, EndClass
from termgym._vocabulary import EpisodeClass as EpisodeClass

SCHEMA_VERSION = 1
"""Version of the JSONL layout; bumped on any change a reader must know about."""

StepMode = Literal["command", "keys", "submit", "tool"]
STEP_MODES: tuple[str, ...] = ("command", "keys", "submit", "tool")
"""How a step acted; "tool" only for a step an agent reported (a tool call of its own that
is not a shell command: a file read or edit ...)."""

StepSource = Literal["termgym", "agent"]
STEP_SOURCES: tuple[StepSource, ...] = ("termgym", "agent")
"""Who says a step happened. "termgym": termgym ran it in the sandbox and saw its result (a
`step` line). "agent": the agent's own log says it ran it, inside one of termgym's steps (a
`reported` line, written at the episode's end from that log): shown for reading, never
graded, audited or replayed (docs/recording-format.md, "Steps the agent reported")."""


@dataclass(frozen=True)
class EpisodeHeader:
    """What an episode is: written once, as the first line of its JSONL file.

    Attributes:
        episode_id: Unique within the run; names the files (`<episode_id>.jsonl` / `.cast`).
        task: Task id (e.g. "fuel-planner").
        task_version: The task.yaml `version`.
        variant: "original", "contradicted", "withheld", "swapped", "sampled" or
            "impossible".
        rules_visible: Rule values as the agent could read them; a withheld rule is absent.
        rules_enforced: Rule values the hidden graders enforce in this episode.
        seed: The episode seed, or None.
        agent: Agent name.
        backend: Sandbox backend ("docker", "bwrap").
        versions: Versions of what ran (termgym, image digest, python ...).
        started: Unix time the episode started.
        cols: Terminal width of the recording.
        rows: Terminal height of the recording.
        run_id: The run this episode belongs to ("" when recorded alone).
        initial_output: Raw terminal bytes shown before the first step (the prompt);
            goes to the cast only.
        extra: Anything else worth keeping (JSON-able).
    """

    episode_id: str
    task: str
    task_version: int
    variant: str
    rules_visible: Mapping[str, Any]
    rules_enforced: Mapping[str, Any]
    seed: int | None
    agent: str
    backend: str
    versions: Mapping[str, str]
    started: float
    cols: int = TERMINAL.cols
    rows: int = TERMINAL.rows
    run_id: str = ""
    initial_output: bytes = b""
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StepRecord:
    """One action and what it produced.

    Attributes:
        index: 0-based step number within the episode.
        mode: "command" (a shell command), "keys" (raw keystrokes) or "submit".
        action: The action text as the agent gave it.
        output: Decoded output of the step (escape sequences removed by the sandbox).
        exit_code: The command's exit status; None for keystrokes, submit, or a timeout.
        duration: Wall seconds the step took in the sandbox.
        timed_out: The command overran its timeout.
        truncated: The output was cut at the sandbox's output limit.
        screen: The terminal screen after the step, as text (TerminalScreen.text()).
        raw: The raw terminal bytes of the step; written to the cast, not to the JSONL
            (always b"" when read back from a JSONL file).
        t: Seconds from the episode start to the start of the step.
        restarted: The sandbox shell had to be restarted during the step.
        source: "termgym" (termgym ran it) or "agent" (the agent's own log says it ran it;
            see STEP_SOURCES). An agent-reported step's `index` numbers it among the
            reported steps, its `t` is when the log says it ran (seconds from the episode's
            start), and its `duration` and `exit_code` are the log's, where it says (else
            0.0 and None).
        within: For an agent-reported step, the index of termgym's step during which it ran
            (the agent's own long command); None for termgym's steps.
    """

    index: int
    mode: str
    action: str
    output: str
    exit_code: int | None
    duration: float
    timed_out: bool = False
    truncated: bool = False
    screen: str = ""
    raw: bytes = b""
    t: float = 0.0
    restarted: bool = False
    source: StepSource = "termgym"
    within: int | None = None

    @property
    def at_step(self) -> int:
        """The index of termgym's step this is, or (reported by the agent) ran inside."""
        return self.within if self.source == "agent" and self.within is not None else self.index


@dataclass(frozen=True)
class EpisodeEnd:
    """How an episode ended: the last line of its JSONL file.

    Attributes:
        reward: Final reward (the grader score; 0 on infrastructure error).
        terminated: Ended by submit.
        truncated: Ended by the step or time limit (the state was still graded).
        verdicts: Shadow grading as written: rule-set name -> `Verdict.to_dict()` (older
            recordings: {"passed", "score", "details"}). Readers above the grading layer
            parse them once with `termgym.grading.GradeReport.from_wire`.
        episode_class: "adapted", "stale", "both", "neither", "grader-error" (the final
            state could not be graded: counted, scored 0), "error" (termgym's machinery
            failed: left out of the rates), or None (an original episode, graded). Written
            under the key "cls"; "class" and "shadow_class" are read too.
        error: Infrastructure error message (grader crash, sandbox died), or None.
        audit: Audit hits, each a mapping with at least "kind" and "message", and "step"
            (the step index it happened at) when known.
        extra: Anything else worth keeping (JSON-able).
        ended: Unix time the episode ended; filled in by the writer when None.
        conflict: The reason the agent gave when it reported that the task contradicts
            itself (REPORT_CONFLICT; "" when it gave none), or None when it did not report.
        tamper: The episode's tamper evidence as written (`TamperEvidence.to_dict()`: what
            it changed among the task's protected files, the toolchain and the system), or
            None (not read: older recordings, infrastructure errors). Readers above the
            task layer parse it with `termgym.tasks.TamperEvidence.from_dict`.
    """

    reward: float
    terminated: bool
    truncated: bool
    verdicts: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    episode_class: EndClass | None = None
    error: str | None = None
    audit: Sequence[Mapping[str, Any]] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)
    ended: float | None = None
    conflict: str | None = None
    tamper: Mapping[str, Any] | None = None


def json_default(value: Any) -> Any:
    """Turn the values json does not know (dataclasses, paths, sets, bytes) into JSON ones."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, tuple):
        return list(value)
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    return str(value)


def dumps_line(obj: Mapping[str, Any]) -> bytes:
    """One JSONL line (with its newline) as UTF-8 bytes; never raises on odd values."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=json_default)
    return text.encode("utf-8", "backslashreplace") + b"\n"


def header_line(header: EpisodeHeader) -> dict[str, Any]:
    """The JSON object of the header line."""
    return {
        "type": "header",
        "schema": SCHEMA_VERSION,
        "episode_id": header.episode_id,
        "task": header.task,
        "task_version": header.task_version,
        "variant": header.variant,
        "rules_visible": header.rules_visible,
        "rules_enforced": header.rules_enforced,
        "seed": header.seed,
        "agent": header.agent,
        "backend": header.backend,
        "versions": header.versions,
        "started": header.started,
        "cols": header.cols,
        "rows": header.rows,
        "run_id": header.run_id,
        "extra": header.extra,
    }


def step_line(step: StepRecord) -> dict[str, Any]:
    """The JSON object of a step line (without `raw`, which goes to the cast)."""
    return {
        "type": "step",
        "index": step.index,
        "mode": step.mode,
        "action": step.action,
        "output": step.output,
        "exit_code": step.exit_code,
        "duration": step.duration,
        "timed_out": step.timed_out,
        "truncated": step.truncated,
        "restarted": step.restarted,
        "t": step.t,
        "screen": step.screen,
    }


def reported_line(step: StepRecord) -> dict[str, Any]:
    """The JSON object of a step the agent reported (`source` "agent"): a line of its own
    type, so no reader takes it for a step termgym ran."""
    return {
        "type": "reported",
        "source": "agent",
        "index": step.index,
        "within": step.within,
        "mode": step.mode,
        "action": step.action,
        "output": step.output,
        "exit_code": step.exit_code,
        "duration": step.duration,
        "truncated": step.truncated,
        "t": step.t,
    }


def end_line(end: EpisodeEnd, ended: float, steps: int) -> dict[str, Any]:
    """The JSON object of the end line."""
    reward = end.reward
    if isinstance(reward, float) and not math.isfinite(reward):
        reward = 0.0
    return {
        "type": "end",
        "reward": reward,
        "terminated": end.terminated,
        "truncated": end.truncated,
        "verdicts": end.verdicts,
        "cls": end.episode_class,
        "error": end.error,
        "audit": list(end.audit),
        "extra": end.extra,
        "ended": ended,
        "steps": steps,
        "conflict": end.conflict,
        "tamper": end.tamper,
    }


def _fields(cls: type, data: Mapping[str, Any]) -> dict[str, Any]:
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in data.items() if k in names}


def header_from(data: Mapping[str, Any]) -> EpisodeHeader:
    """Build an EpisodeHeader from a header line (unknown keys ignored, missing ones defaulted)."""
    values: dict[str, Any] = {
        "episode_id": "",
        "task": "",
        "task_version": 0,
        "variant": "",
        "rules_visible": {},
        "rules_enforced": {},
        "seed": None,
        "agent": "",
        "backend": "",
        "versions": {},
        "started": 0.0,
    }
    values.update(_fields(EpisodeHeader, data))
    values.pop("initial_output", None)
    return EpisodeHeader(**values)


def step_from(data: Mapping[str, Any]) -> StepRecord:
    """Build a StepRecord from a step line (raw is b"": it lives in the cast) or a reported
    line: the line's type, never a field of it, says who ran it."""
    values: dict[str, Any] = {
        "index": -1,
        "mode": "command",
        "action": "",
        "output": "",
        "exit_code": None,
        "duration": 0.0,
    }
    values.update(_fields(StepRecord, data))
    values.pop("raw", None)
    reported = data.get("type") == "reported"
    values["source"] = "agent" if reported else "termgym"
    within = values.get("within")
    values["within"] = within if reported and isinstance(within, int) else None
    return StepRecord(**values)


END_CLASS_KEYS: tuple[str, ...] = ("cls", "class", "shadow_class")
"""Where an end line keeps the episode class: the wire key "cls", then the legacy ones."""


def end_from(data: Mapping[str, Any]) -> EpisodeEnd:
    """Build an EpisodeEnd from an end line (the class read from "cls", or a legacy key).

    Raises:
        ValueError: A field has the wrong shape (the message says which, what was expected
            and what was found); the verdicts themselves are parsed by `termgym.grading`.
    """
    values: dict[str, Any] = {"reward": 0.0, "terminated": False, "truncated": False}
    values.update(_fields(EpisodeEnd, data))
    values.pop("episode_class", None)
    values["episode_class"] = next(
        (data[key] for key in END_CLASS_KEYS if data.get(key) is not None), None
    )
    _expect(values["episode_class"], (str, type(None)), "cls", "a class name or null")
    _expect(values["reward"], (int, float), "reward", "a number")
    _expect(values.get("error"), (str, type(None)), "error", "text or null")
    verdicts = values.get("verdicts") or {}
    _expect(verdicts, Mapping, "verdicts", "a mapping of rule set -> verdict")
    for name, verdict in verdicts.items():
        _expect(verdict, Mapping, f"verdicts[{name!r}]", "a mapping with passed, score, rules")
    values["verdicts"] = verdicts
    audit = values.get("audit") or ()
    _expect(audit, (list, tuple), "audit", "a list of audit hits")
    values["audit"] = tuple(audit)
    _expect(values.get("extra", {}), Mapping, "extra", "a mapping")
    _expect(values.get("conflict"), (str, type(None)), "conflict", "the reported reason or null")
    _expect(values.get("tamper"), (Mapping, type(None)), "tamper", "a mapping or null")
    return EpisodeEnd(**values)


def _expect(value: Any, kinds: type | tuple[type, ...], name: str, expected: str) -> None:
    if isinstance(value, bool) and kinds == (int, float):
        kinds = ()  # true/false is not a number here
    if not isinstance(value, kinds):
        raise ValueError(f"{name}: expected {expected}, found {_shown(value)}")


def _shown(value: Any) -> str:
    text = json.dumps(value, default=repr)
    return f"{type(value).__name__} {text[:80]}{'...' if len(text) > 80 else ''}"
