"""ChatEnv: an episode as an OpenAI-style conversation, a model's reply as the action.

Trust boundary: the messages are what the model is shown, so they hold only what an agent
may see: the rendered instruction, the outputs and screens of its own commands, and
protocol notes. The variant, rule values, verdicts and classes travel in the infos and in
`grading_metadata` for the trainer, never in a message; the end of an episode is announced
without its score.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from termgym._actions import ends_episode
from termgym.chat._budget import ObservationBudget
from termgym.chat._metadata import grading_metadata
from termgym.chat._parse import ParsedReply, parse_message, split_reasoning, tool_schemas
from termgym.chat._prompts import system_prompt as protocol_prompt
from termgym.errors import ActionError

Message = dict[str, Any]
"""An OpenAI-style chat message: {"role", "content", ...}."""

StepResult = tuple[list[Message], float, bool, bool, dict[str, Any]]

ENDED = "The episode is over: your work was handed in for checking."
NOT_RUN = "Not run: one action per turn, and only the first tool call of a reply runs."


class ChatEnv:
    """A TerminalEnv or MultiTaskEnv seen as a conversation.

    `reset()` returns the opening messages (the system prompt, then the instruction as the
    first user message). `step(reply)` takes the model's reply, as text or as an
    OpenAI-style assistant message (tool calls included), reads the action with the shared
    parser, runs it, and returns the new messages: a tool result for a tool call, a user
    message for a fenced block. A reply without an action is answered with an error
    message and uses a turn; the episode is stopped and graded when `max_turns` run out.

    Args:
        env: The environment (`termgym.make(...)` or a MultiTaskEnv).
        budget: How much of each output or screen the model is shown (default 8000
            characters); pass ObservationBudget(max_tokens=..., count_tokens=...) for tokens.
        system_prompt: The system message (`{max_steps}` is filled in); "" is termgym's
            protocol, None leaves it out.
        max_turns: Replies per episode, valid or not (default: the task's step budget).
        tools: Whether the model is offered `tools` (bash, keys, submit, report_conflict).
            False for a framework that sends text only: the protocol and the error messages
            then speak of fenced blocks and SUBMIT (and REPORT_CONFLICT lines) alone (tool
            calls written as `<tool_call>` text are read all the same).
    """

    def __init__(
        self,
        env: Any,
        *,
        budget: ObservationBudget | None = None,
        system_prompt: str | None = "",
        max_turns: int | None = None,
        tools: bool = True,
    ) -> None:
        if not hasattr(env, "attach_transcript"):  # Gymnasium's wrappers do not forward it
            env = env.unwrapped
        self.env = env
        self.budget = budget if budget is not None else ObservationBudget()
        self._system_prompt = system_prompt
        self.max_turns = max_turns
        self.offers_tools = tools
        self.messages: list[Message] = []
        self._at_step: dict[int, int] = {}
        self.turns = 0
        self.done = False
        self.last_info: dict[str, Any] = {}
        self.reward = 0.0

    @property
    def mode(self) -> str:
        """'command' or 'keys', from the environment's options."""
        return str(self.env.options.mode)

    @property
    def max_steps(self) -> int:
        """The current task's step budget."""
        return int(self.env.options.max_steps)

    @property
    def max_turns(self) -> int:
        """Replies allowed this episode (default: the task's step budget)."""
        return self._max_turns or self.max_steps

    @max_turns.setter
    def max_turns(self, value: int | None) -> None:
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            raise ValueError(
                f"max_turns: expected an int >= 1 (or None: the task's step budget), got {value!r}"
            )
        self._max_turns = value

    @property
    def in_progress(self) -> bool:
        """An episode was started and has not ended."""
        episode = getattr(self.env, "episode", None)
        if episode is None or not self.messages:
            return False
        return not self.done and not episode.finished

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The OpenAI `tools` to offer the model: bash, keys (keys mode), submit; [] when
        the adapter was made with tools=False."""
        return tool_schemas(self.mode) if self.offers_tools else []

    def metadata(self) -> dict[str, Any]:
        """The trainer's view of the episode so far (`grading_metadata` of the last info)."""
        return grading_metadata(self.last_info)

    # -- sync -------------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[list[Message], dict[str, Any]]:
        """Start an episode; returns the opening messages and the reset info."""
        obs, info = self.env.reset(seed=seed, options=options)
        return self._opened(obs, info)

    def step(self, reply: Any) -> StepResult:
        """Act on the model's reply; returns (new messages, reward, terminated, truncated, info)."""
        parsed = self._take(reply)
        if parsed.action is not None:
            try:
                result = self.env.step(parsed.action)
            except ActionError as exc:  # keystrokes the terminal has no key for: none sent
                parsed = _not_taken(parsed, exc)
            else:
                if not (result[2] or result[3]) and self.turns >= self.max_turns:
                    result = _out_of_turns(result, self.env.stop("turn limit"))
                return self._stepped(parsed, result)
        if self.turns >= self.max_turns:
            return self._stepped(parsed, self.env.stop("turn limit"))
        return self._refused(parsed)

    # -- async ------------------------------------------------------------------------

    async def areset(
        self, *, seed: int | None = None, options: Mapping[str, Any] | None = None
    ) -> tuple[list[Message], dict[str, Any]]:
        """`reset()` without blocking the event loop."""
        obs, info = await self.env.areset(seed=seed, options=options)
        return self._opened(obs, info)

    async def astep(self, reply: Any) -> StepResult:
        """`step()` without blocking the event loop."""
        parsed = self._take(reply)
        if parsed.action is not None:
            try:
                result = await self.env.astep(parsed.action)
            except ActionError as exc:
                parsed = _not_taken(parsed, exc)
            else:
                if not (result[2] or result[3]) and self.turns >= self.max_turns:
                    result = _out_of_turns(result, await self.env.astop("turn limit"))
                return self._stepped(parsed, result)
        if self.turns >= self.max_turns:
            return self._stepped(parsed, await self.env.astop("turn limit"))
        return self._refused(parsed)

    def stop(self, reason: str = "rollout ended") -> dict[str, Any] | None:
        """Grade an episode its framework ended early, as its final state stands (a
        truncation); returns the final info, or None when no episode is in progress."""
        if not self.in_progress:
            return None
        return self._stopped(self.env.stop(reason))

    async def astop(self, reason: str = "rollout ended") -> dict[str, Any] | None:
        """`stop()` without blocking the event loop."""
        if not self.in_progress:
            return None
        return self._stopped(await self.env.astop(reason))

    def close(self) -> None:
        """Close the environment."""
        self.env.close()

    async def aclose(self) -> None:
        """Close the environment without blocking the event loop."""
        await self.env.aclose()

    # -- the conversation ---------------------------------------------------------------

    def transcript(self) -> list[dict[str, Any]]:
        """The conversation as recording transcript entries (read by the trace audit and the
        ATIF export). An entry's step is the llm agent's: a reply's is the number its action
        takes (1 for the first action; a reply without one shares the next action's), an
        observation's the number of actions taken before it."""
        entries = []
        for message in self.messages:
            role = str(message.get("role"))
            content, reasoning = split_reasoning(message)
            if role == "assistant":
                content = "\n".join([content, *_call_texts(message)]).strip()
            step = self._at_step.get(id(message), 0)
            entries.append({"step": step, "role": role, "content": content, "reasoning": reasoning})
        return entries

    def _opened(self, obs: Mapping[str, Any], info: dict[str, Any]) -> tuple[list[Message], dict]:
        self.turns, self.done, self.reward, self.last_info = 0, False, 0.0, dict(info)
        self.messages, self._at_step = [], {}
        opening: list[Message] = []
        if self._system_prompt is not None:
            template = self._system_prompt or protocol_prompt(self.mode, tools=self.offers_tools)
            opening.append({"role": "system", "content": template.format(max_steps=self.max_steps)})
        ready = (
            "The terminal is ready. Send your first keystrokes."
            if self.mode == "keys"
            else "The shell is ready. Send your first command."
        )
        task = f"Task:\n{str(obs['instruction']).strip()}\n\n{ready}"
        opening.append({"role": "user", "content": task})
        self.messages.extend(opening)
        self.env.attach_transcript(self.transcript)
        return [dict(m) for m in opening], dict(info)

    def _take(self, reply: Any) -> ParsedReply:
        if self.done:
            raise RuntimeError("the episode is over; call reset() before step()")
        if not self.messages:
            raise RuntimeError("call reset() before step()")
        message = _as_message(reply)
        self.messages.append(message)
        self._at_step[id(message)] = self._steps() + 1
        self.turns += 1
        return parse_message(message, self.mode, tools=self.offers_tools)

    def _refused(self, parsed: ParsedReply) -> StepResult:
        text = "\n\n".join(part for part in (parsed.note, parsed.error) if part)
        left = self.max_turns - self.turns
        text += f"\n\n{left} {'turn' if left == 1 else 'turns'} left."
        new = self._answer(parsed, text)
        info: dict[str, Any] = {"step": self._steps(), "turn": self.turns, "action": None}
        info.update(task_id=self.env.task_id, parse_error=parsed.error)
        self.last_info = info
        return new, 0.0, False, False, dict(info)

    def _stepped(self, parsed: ParsedReply, result: tuple[Any, ...]) -> StepResult:
        obs, reward, terminated, truncated, info = result
        info = dict(info)
        info.setdefault("task_id", self.env.task_id)
        info.update(turn=self.turns, action=parsed.action, parse_error=parsed.error)
        self.last_info = info
        if terminated or truncated:
            self.done, self.reward = True, float(reward)
            ended = parsed.action is not None and ends_episode(parsed.action)
            text = ENDED if ended else self._render(obs, info) + "\n\n" + ENDED
            return self._answer(parsed, text), float(reward), terminated, truncated, info
        return self._answer(parsed, self._render(obs, info)), float(reward), False, False, info

    def _answer(self, parsed: ParsedReply, text: str) -> list[Message]:
        new: list[Message] = []
        if parsed.note and parsed.action is not None:
            text = f"{parsed.note}\n\n{text}"
        if parsed.tool_call_id is not None:
            new.append({"role": "tool", "tool_call_id": parsed.tool_call_id, "content": text})
        else:
            new.append({"role": "user", "content": text})
        new.extend(
            {"role": "tool", "tool_call_id": call_id, "content": NOT_RUN}
            for call_id in parsed.ignored_calls
        )
        self.messages.extend(new)
        self._at_step.update((id(m), self._steps()) for m in new)
        return [dict(m) for m in new]

    def _render(self, obs: Mapping[str, Any], info: Mapping[str, Any]) -> str:
        if self.mode == "keys":
            screen, cut = self.budget.fit(str(obs.get("screen", "")).rstrip())
            text = f"Screen:\n```\n{screen}\n```"
        else:
            output, cut = self.budget.fit(str(obs.get("output", "")))
            code = obs.get("exit_code", -1)
            status = "none (timed out or interrupted)" if code == -1 else str(code)
            text = f"Exit code: {status}\nOutput:\n```\n{output}\n```"
        left = self.max_turns - self.turns
        if 0 < left <= 5:
            text += f"\n\n{left} {'turn' if left == 1 else 'turns'} left; SUBMIT once done."
        return text

    def _stopped(self, result: tuple[Any, ...]) -> dict[str, Any]:
        info = {**result[4], "turn": self.turns, "action": None}
        info.setdefault("task_id", self.env.task_id)
        self.done, self.reward, self.last_info = True, float(result[1]), info
        return dict(info)

    def _steps(self) -> int:
        episode = getattr(self.env, "episode", None)
        return int(episode.steps) if episode is not None else 0


def _not_taken(parsed: ParsedReply, exc: ActionError) -> ParsedReply:
    """The reply as one without an action: the env refused it before taking any step (keys
    mode's `<C-1>`), which the model is told, as a reply with no action is. A model's bad
    reply is the model's turn, never an exception that ends the rollout."""
    return dataclasses.replace(parsed, action=None, error=f"Nothing was sent: {exc}")


def _out_of_turns(step: tuple[Any, ...], stop: tuple[Any, ...]) -> tuple[Any, ...]:
    """The last step's observation with the grading of the stop that follows it."""
    info = {**step[4], **stop[4]}
    return step[0], stop[1], False, True, info


def _as_message(reply: Any) -> Message:
    """An assistant message dict from a str, a dict, or an OpenAI message object."""
    if isinstance(reply, str):
        return {"role": "assistant", "content": reply}
    if hasattr(reply, "model_dump"):
        reply = reply.model_dump(exclude_none=True)
    if not isinstance(reply, Mapping):
        raise TypeError(
            "a reply is the model's text, an assistant message dict or an OpenAI message "
            f"object; got {type(reply).__name__}"
        )
    message = {k: v for k, v in reply.items() if v is not None}
    message["role"] = "assistant"
    message.setdefault("content", "")
    return message


def _call_texts(message: Mapping[str, Any]) -> list[str]:
    """Tool calls written out, so the audit reads what the model asked to run."""
    texts = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, Mapping) else None
        if isinstance(function, Mapping):
            arguments = function.get("arguments")
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments)
            texts.append(f"[tool call] {function.get('name')}({arguments})")
    return texts
