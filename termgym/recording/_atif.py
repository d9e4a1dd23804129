"""termgym episodes as ATIF trajectories, and ATIF trajectories as termgym episodes.

Export: one trajectory per recorded episode. The system and task messages the agent saw
open it; each action is an agent step whose tool call is the action (`bash` with a
command, `keys` with keystrokes, `submit`) and whose observation is what the sandbox
printed, with the model's reply, reasoning and token counts where the agent kept a
transcript (the llm agent, the chat adapter). Everything ATIF has no field for rides in
`extra["termgym"]`: at the root, the variant, the rule values shown (`rules_visible`) and
enforced, the seed, the reward, the class and the shadow verdicts of every rule set; on
each step, the action as the environment ran it (mode, exit code, duration, screen).

Import: a trajectory back as an episode recording (`<run>/episodes/<id>.jsonl` and
`.cast`) that `termgym tui` shows and the replay agent re-runs. termgym's own exports come
back whole; another producer's (Harbor's Terminus, or any agent with shell tool calls)
come back as the actions its tool calls name: a call with a `command` (or `cmd`) argument
is a command, one with `keystrokes` (Terminus) is keystrokes, a submit or
`mark_task_complete` call ends the episode. Such an episode is ungraded until replayed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from termgym.errors import RecordingError
from termgym.recording._atif_model import ATIF_VERSION, Trajectory
from termgym.recording._reader import EpisodeLog, read_episode, read_run
from termgym.recording._records import EpisodeEnd, EpisodeHeader, StepRecord
from termgym.recording._run_files import write_whole
from termgym.recording._writer import EpisodeWriter

EXTRA_KEY = "termgym"
"""The key of termgym's fields in every `extra` it writes."""
SUBMIT_CALLS = ("submit", "mark_task_complete", "task_complete", "finish", "submit_task")
"""Tool names that end an episode when imported."""
_AGENT_ROLES = ("assistant", "probe")
_TMUX_KEYS = {
    "Enter": "<Enter>", "Tab": "<Tab>", "Escape": "<Esc>", "BSpace": "<BS>", "Up": "<Up>",
    "Down": "<Down>", "Left": "<Left>", "Right": "<Right>",
}  # fmt: skip


def validate_atif(data: Any, where: str = "trajectory") -> Trajectory:
    """Read an ATIF document (a mapping) into the models, or raise saying what is wrong.

    Raises:
        RecordingError: `data` is not a valid ATIF trajectory; the message names each
            failing field by its path.
    """
    try:
        return Trajectory.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in error['loc']) or '<root>'}: {error['msg']}"
            for error in exc.errors()[:10]
        )
        raise RecordingError(f"{where}: not a valid ATIF trajectory: {problems}") from None


# -- export ---------------------------------------------------------------------------------


def episode_to_atif(log: EpisodeLog) -> dict[str, Any]:
    """The ATIF trajectory of a recorded episode, validated, as JSON-able data."""
    header = log.header
    if header is None:
        raise RecordingError(f"{log.path}: expected a header line, found none: nothing to export")
    transcript = list(log.end.extra.get("transcript") or []) if log.end else []
    steps = sorted(log.steps, key=lambda s: s.index)
    builder = _Builder(header, llm=any(e.get("role") == "assistant" for e in transcript))
    builder.opening(transcript)
    replies = _replies_by_step(transcript)
    for step in steps:
        *unused, acting = replies.pop(step.index + 1, [None])
        for entry in unused:
            builder.message(entry)  # replies without an action, kept as the model said them
        builder.action(step, acting)
    if log.end is not None and log.end.terminated:
        *unused, acting = replies.pop(len(steps) + 1, [None])
        for entry in unused:
            builder.message(entry)
        builder.submit(acting)
    for entry in transcript:
        if str(entry.get("role", "")).startswith("probe"):
            builder.message(entry)  # the disclosure probe, after the episode
    data = {
        "schema_version": ATIF_VERSION,
        "session_id": header.run_id or header.episode_id,
        "trajectory_id": header.episode_id,
        "agent": {
            "name": header.agent or "unknown",
            "version": str(header.versions.get("termgym", "unknown")),
            **({"model_name": builder.model} if builder.model else {}),
            "extra": {EXTRA_KEY: {"backend": header.backend, "mode": _mode(header)}},
        },
        "steps": builder.steps,
        "final_metrics": builder.final_metrics(),
        "extra": {EXTRA_KEY: _episode_extra(header, log.end)},
    }
    return validate_atif(data, str(log.path)).model_dump(mode="json", exclude_none=True)


def export_run(run_dir: str | Path, out: str | Path | None = None) -> list[Path]:
    """Write every recorded episode of a run as `<out>/<episode_id>.json` (default out:
    `<run_dir>/atif`); returns the files written. Episodes still running are left out."""
    run = read_run(run_dir)
    folder = Path(out) if out is not None else Path(run_dir) / "atif"
    folder.mkdir(parents=True, exist_ok=True)
    return [export_episode(log, folder) for log in run.episodes if log.end is not None]


def export_episode(log: EpisodeLog | str | Path, folder: str | Path) -> Path:
    """Write one episode's trajectory as `<folder>/<episode_id>.json`; returns its path."""
    if not isinstance(log, EpisodeLog):
        log = read_episode(log)
    path = Path(folder) / f"{log.episode_id}.json"
    # whole or not at all, and a lone surrogate of the agent's (an undecodable byte) written
    # as its JSON escape: a strict write stopped at it, and `termgym run --atif` with it
    return write_whole(path, json.dumps(episode_to_atif(log), indent=2, ensure_ascii=False) + "\n")


class _Builder:
    """Appends ATIF steps, numbering them, and sums the token counts."""

    def __init__(self, header: EpisodeHeader, *, llm: bool) -> None:
        self.header = header
        self.llm = llm
        """The agent kept a transcript of model replies (else: no step made an LLM call)."""
        self.steps: list[dict[str, Any]] = []
        self.model: str | None = None
        self.tokens = {"prompt": 0, "completion": 0, "counted": False}

    def add(self, source: str, message: str, **fields: Any) -> dict[str, Any]:
        step = {"step_id": len(self.steps) + 1, "source": source, "message": message}
        step.update({k: v for k, v in fields.items() if v is not None})
        self.steps.append(step)
        return step

    def opening(self, transcript: list[Mapping[str, Any]]) -> None:
        """The system prompt and the task message, as the agent saw them."""
        opening = [e for e in transcript if e.get("role") in ("system", "user")][:2]
        opening = [e for e in opening if int(e.get("step") or 0) == 0]
        if not any(e.get("role") == "user" for e in opening):
            instruction = str(self.header.extra.get("instruction", ""))
            opening.append({"role": "user", "content": f"Task:\n{instruction.strip()}"})
        for entry in opening:
            self.add(str(entry["role"]), str(entry.get("content") or ""))

    def message(self, entry: Mapping[str, Any]) -> None:
        """A reply without an action, a probe question or answer: kept as it was said."""
        role = str(entry.get("role"))
        if role in _AGENT_ROLES:
            self.add("agent", str(entry.get("content") or ""), **self._model_fields(entry),
                     extra={EXTRA_KEY: {"role": role}})  # fmt: skip
        else:
            self.add("user", str(entry.get("content") or ""), extra={EXTRA_KEY: {"role": role}})

    def action(self, step: StepRecord, reply: Mapping[str, Any] | None) -> None:
        call_id = _native_id(reply) or f"termgym-step-{step.index}"
        name, arguments = ("keys", {"keys": step.action}) if step.mode == "keys" else (
            "bash", {"command": step.action})  # fmt: skip
        result = {
            "source_call_id": call_id,
            "content": step.output if step.mode != "keys" else step.screen,
            "extra": {EXTRA_KEY: _step_extra(step)},
        }
        self.add(
            "agent",
            _reply_text(reply),
            timestamp=_iso(self.header.started + step.t),
            tool_calls=[{"tool_call_id": call_id, "function_name": name, "arguments": arguments}],
            observation={"results": [result]},
            **self._model_fields(reply),
            extra={EXTRA_KEY: {"step": step.index}},
        )

    def submit(self, reply: Mapping[str, Any] | None) -> None:
        call_id = _native_id(reply) or "termgym-submit"
        self.add(
            "agent",
            _reply_text(reply),
            tool_calls=[{"tool_call_id": call_id, "function_name": "submit", "arguments": {}}],
            **self._model_fields(reply),
        )

    def _model_fields(self, entry: Mapping[str, Any] | None) -> dict[str, Any]:
        """Reasoning and token counts of a model's reply; none for a step no model made."""
        if entry is None:
            return {} if self.llm else {"llm_call_count": 0}
        usage = entry.get("usage") if isinstance(entry.get("usage"), Mapping) else None
        metrics = None
        if usage:
            prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
            metrics = {"prompt_tokens": prompt, "completion_tokens": completion}
            self.tokens["prompt"] += int(prompt or 0)
            self.tokens["completion"] += int(completion or 0)
            self.tokens["counted"] = True
        reasoning = entry.get("reasoning")
        return {
            "reasoning_content": reasoning if isinstance(reasoning, str) and reasoning else None,
            "metrics": {k: v for k, v in metrics.items() if v is not None} if metrics else None,
        }

    def final_metrics(self) -> dict[str, Any]:
        totals: dict[str, Any] = {"total_steps": len(self.steps)}
        if self.tokens["counted"]:
            totals["total_prompt_tokens"] = self.tokens["prompt"]
            totals["total_completion_tokens"] = self.tokens["completion"]
        return totals


def _replies_by_step(transcript: list[Mapping[str, Any]]) -> dict[int, list[Any]]:
    """The model's replies by the number of the action they led to (a transcript's "step"):
    when several share one, the last made the action and the others had none."""
    replies: dict[int, list[Any]] = {}
    for entry in transcript:
        if entry.get("role") == "assistant":
            replies.setdefault(int(entry.get("step") or 0), []).append(entry)
    return replies


def _reply_text(reply: Mapping[str, Any] | None) -> str:
    """A reply's words, without the `[tool call] ...` lines the transcript adds."""
    if not reply:
        return ""
    lines = str(reply.get("content") or "").splitlines()
    return "\n".join(line for line in lines if not line.startswith("[tool call] ")).strip()


def _native_id(reply: Mapping[str, Any] | None) -> str | None:
    calls = (reply or {}).get("tool_calls") or []
    first = calls[0] if calls and isinstance(calls[0], Mapping) else {}
    return str(first["id"]) if first.get("id") else None


def _step_extra(step: StepRecord) -> dict[str, Any]:
    extra: dict[str, Any] = {
        "mode": step.mode,
        "action": step.action,
        "output": step.output,
        "exit_code": step.exit_code,
        "duration": step.duration,
        "t": step.t,
        "timed_out": step.timed_out,
        "truncated": step.truncated,
        "restarted": step.restarted,
    }
    if step.screen:
        extra["screen"] = step.screen
    return extra


def _episode_extra(header: EpisodeHeader, end: EpisodeEnd | None) -> dict[str, Any]:
    visible = {k: v for k, v in header.extra.items() if k != "instruction"}
    extra: dict[str, Any] = {
        "format": "termgym-atif/1",
        "episode_id": header.episode_id,
        "run_id": header.run_id,
        "task": header.task,
        "task_version": header.task_version,
        "variant": header.variant,
        "seed": header.seed,
        "rules_visible": _jsonable(header.rules_visible),
        "rules_enforced": _jsonable(header.rules_enforced),
        "instruction": header.extra.get("instruction"),
        "backend": header.backend,
        "versions": dict(header.versions),
        "started": header.started,
        "cols": header.cols,
        "rows": header.rows,
        "header_extra": _jsonable(visible),
    }
    if end is not None:
        extra.update(
            reward=end.reward,
            terminated=end.terminated,
            truncated=end.truncated,
            episode_class=end.episode_class,
            verdicts=_jsonable(end.verdicts),
            error=end.error,
            audit=_jsonable(end.audit),
            ended=end.ended,
            end_extra=_jsonable(dict(end.extra)),
            conflict=end.conflict,
            tamper=_jsonable(end.tamper) if end.tamper is not None else None,
        )
    return extra


def _mode(header: EpisodeHeader) -> str:
    return str(header.extra.get("mode") or "command")


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, tz=UTC).isoformat()


def _unix(value: Any, default: float) -> float:
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return default
    return default


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


# -- import ---------------------------------------------------------------------------------


def import_atif(
    paths: Iterable[str | Path],
    run_dir: str | Path,
    *,
    task: str | None = None,
    agent: str | None = None,
) -> list[Path]:
    """Write each ATIF file (or every *.json in a folder) as an episode of `run_dir`.

    Args:
        paths: ATIF files, or folders of them.
        run_dir: The run folder the episodes go to (created if missing).
        task: The task id of trajectories that do not name one (another producer's).
        agent: The agent name to record (default: the trajectory's agent).

    Raises:
        RecordingError: a file is not JSON or not a valid trajectory, or names no task and
            `task` was not given; the message names the file.
    """
    files: list[Path] = []
    for path in map(Path, paths):
        files.extend(sorted(path.glob("*.json")) if path.is_dir() else [path])
    written = []
    for file in files:
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise RecordingError(f"{file}: expected an ATIF JSON file: {exc}") from None
        trajectory = validate_atif(data, str(file))
        written.append(atif_to_episode(trajectory, run_dir, task=task, agent=agent, where=file))
    return written


def atif_to_episode(
    trajectory: Trajectory | Mapping[str, Any],
    run_dir: str | Path,
    *,
    task: str | None = None,
    agent: str | None = None,
    where: str | Path = "trajectory",
) -> Path:
    """Write one trajectory as an episode recording of `run_dir`; returns its JSONL path."""
    if not isinstance(trajectory, Trajectory):
        trajectory = validate_atif(trajectory, str(where))
    ours = dict((trajectory.extra or {}).get(EXTRA_KEY) or {})
    header = _header(trajectory, ours, task, agent, where)
    steps = list(_steps(trajectory, keys=_mode(header) == "keys"))
    end = _end(trajectory, ours, header, len(steps))
    # unsigned: its verdicts are the file's claims, not this machine's (reports say so)
    with EpisodeWriter(Path(run_dir), header, sign=False) as writer:
        for step in steps:
            writer.step(step)
        writer.end(end)
    return writer.jsonl_path


def _header(
    trajectory: Trajectory, ours: Mapping[str, Any], task: str | None, agent: str | None,
    where: str | Path,
) -> EpisodeHeader:  # fmt: skip
    task_id = ours.get("task") or task
    if not task_id:
        raise RecordingError(
            f"{where}: the trajectory names no termgym task (it was not exported by termgym); "
            "expected the task id to import it into (--task)"
        )
    name = trajectory.trajectory_id or trajectory.session_id or "atif"
    episode_id = re.sub(r"[^A-Za-z0-9._-]+", "-", str(ours.get("episode_id") or name)).strip(".")
    started = next((s.timestamp for s in trajectory.steps if s.timestamp), None)
    agent_extra = dict((trajectory.agent.extra or {}).get(EXTRA_KEY) or {})
    mode = agent_extra.get("mode") or ("keys" if _uses_keystrokes(trajectory) else "command")
    if ours:  # termgym's own export: the header's extra as it was
        extra = dict(ours.get("header_extra") or {})
        if ours.get("instruction") is not None:
            extra["instruction"] = ours["instruction"]
    else:
        extra = {"mode": mode, "instruction": _first_user(trajectory)}
    extra["imported_from"] = ATIF_VERSION if not ours else str(trajectory.schema_version)
    return EpisodeHeader(
        episode_id=episode_id or "atif",
        task=str(task_id),
        task_version=int(ours.get("task_version") or 1),
        variant=str(ours.get("variant") or "original"),
        rules_visible=dict(ours.get("rules_visible") or {}),
        rules_enforced=dict(ours.get("rules_enforced") or {}),
        seed=ours.get("seed"),
        agent=agent or trajectory.agent.name,
        backend=str(ours.get("backend") or agent_extra.get("backend") or "unknown"),
        versions=dict(ours.get("versions") or {"producer": trajectory.agent.version}),
        started=_unix(ours.get("started") or started, 0.0),
        cols=int(ours.get("cols") or 120),
        rows=int(ours.get("rows") or 40),
        run_id=str(ours.get("run_id") or ""),
        extra=extra,
    )


def _steps(trajectory: Trajectory, *, keys: bool) -> Iterable[StepRecord]:
    """The actions of the trajectory's agent steps, in order (submit calls end it)."""
    index = 0
    for step in trajectory.steps:
        results = {
            r.source_call_id: r for r in (step.observation.results if step.observation else [])
        }
        for call in step.tool_calls or ():
            if call.function_name in SUBMIT_CALLS:
                return
            action, mode = _action(call.function_name, call.arguments, keys)
            if action is None:
                continue
            result = results.get(call.tool_call_id) or results.get(None)
            ours = dict(((result.extra if result else None) or {}).get(EXTRA_KEY) or {})
            output = ours.get("output", _text(result.content) if result else "")
            yield StepRecord(
                index=index,
                mode=str(ours.get("mode") or mode),
                action=str(ours.get("action") or action),
                output=str(output or ""),
                exit_code=ours.get("exit_code"),
                duration=float(ours.get("duration") or 0.0),
                timed_out=bool(ours.get("timed_out")),
                truncated=bool(ours.get("truncated")),
                screen=str(ours.get("screen") or ""),
                t=float(ours.get("t") or 0.0),
                restarted=bool(ours.get("restarted")),
            )
            index += 1


def _action(name: str, arguments: Mapping[str, Any], keys: bool) -> tuple[str | None, str]:
    """A tool call as a termgym action: (action, mode), or (None, "") for another tool."""
    if name == "keys" and isinstance(arguments.get("keys"), str):
        return arguments["keys"], "keys"
    if isinstance(arguments.get("keystrokes"), str):
        return _keystrokes(arguments["keystrokes"]), "keys"
    command = arguments.get("command", arguments.get("cmd"))
    if isinstance(command, str) and command.strip():
        return (_keystrokes(command + "\n") if keys else command), ("keys" if keys else "command")
    return None, ""


def _keystrokes(text: str) -> str:
    """tmux send-keys text (Terminus) in termgym's key notation."""
    if text in _TMUX_KEYS:
        return _TMUX_KEYS[text]
    control = re.fullmatch(r"C-([a-z])", text)
    if control:
        return f"<C-{control.group(1)}>"
    out = text.replace("<", "<lt>")
    return out.replace("\r\n", "<Enter>").replace("\n", "<Enter>").replace("\t", "<Tab>")


def _uses_keystrokes(trajectory: Trajectory) -> bool:
    return any(
        "keystrokes" in call.arguments or call.function_name == "keys"
        for step in trajectory.steps
        for call in step.tool_calls or ()
    )


def _end(
    trajectory: Trajectory, ours: Mapping[str, Any], header: EpisodeHeader, steps: int
) -> EpisodeEnd:
    submitted = any(
        call.function_name in SUBMIT_CALLS for s in trajectory.steps for call in s.tool_calls or ()
    )
    if ours:  # termgym's own export: the end as it was, its transcript included
        extra = dict(ours.get("end_extra") or {})
    else:  # another producer's: its messages for the audit; ungraded here, until replayed
        extra = {"steps": steps, "transcript": _transcript(trajectory)}
    return EpisodeEnd(
        reward=float(ours.get("reward") or 0.0),
        terminated=bool(ours.get("terminated", submitted)),
        truncated=bool(ours.get("truncated", not submitted)),
        verdicts=dict(ours.get("verdicts") or {}),
        episode_class=ours.get("episode_class"),
        error=ours.get("error") if ours else "imported from ATIF: not graded here",
        audit=list(ours.get("audit") or []),
        extra=extra,
        ended=_unix(ours.get("ended"), header.started) if ours.get("ended") else None,
        conflict=ours.get("conflict") if isinstance(ours.get("conflict"), str) else None,
        tamper=ours.get("tamper") if isinstance(ours.get("tamper"), Mapping) else None,
    )


def _transcript(trajectory: Trajectory) -> list[dict[str, Any]]:
    """Another producer's messages as a termgym transcript (read by the trace audit)."""
    entries, actions = [], 0
    for step in trajectory.steps:
        role = {"agent": "assistant"}.get(step.source, step.source)
        calls = [c for c in step.tool_calls or () if c.function_name not in SUBMIT_CALLS]
        entries.append(
            {
                "step": actions + 1 if role == "assistant" else actions,
                "role": role,
                "content": _text(step.message),
                "reasoning": step.reasoning_content,
            }
        )
        actions += len(calls)
    return entries


def _first_user(trajectory: Trajectory) -> str:
    first = next((s for s in trajectory.steps if s.source == "user"), None)
    return _text(first.message).removeprefix("Task:\n") if first else ""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.text or "" for part in content if getattr(part, "type", "") == "text")
    return ""
