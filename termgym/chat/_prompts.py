"""The protocol a model is told: one system prompt per mode, with or without tools offered.

A model that was offered tools (bash, keys, submit) is told it may call them; a model that
was not (a framework that sends text only) is told about fenced blocks and SUBMIT only.
Either way the parser reads every form (`termgym.chat._parse`).
"""

from __future__ import annotations

_COMMAND_TOOLS = """\
You are working in a Linux terminal to complete a task.

Run one shell command per turn: call the bash tool, or end your reply with exactly one \
fenced code block:

```bash
<a shell command; it may span several lines>
```

It runs in a persistent bash shell (the working directory and variables carry over), and \
you are shown its exit code and output. Use non-interactive commands only: no editors, \
pagers or prompts. When the task is complete, call the submit tool or reply with the single \
word SUBMIT; your work is then checked and the episode ends. If the task contradicts itself \
so that it cannot be done as stated, call the report_conflict tool (or reply with a line \
REPORT_CONFLICT: <what contradicts what>) instead. You have at most {max_steps} commands.
"""

_COMMAND_TEXT = """\
You are working in a Linux terminal to complete a task.

Each turn, think briefly if you like, then end your reply with exactly one fenced code block:

```bash
<a shell command; it may span several lines>
```

It runs in a persistent bash shell (the working directory and variables carry over), and \
you are shown its exit code and output. Use non-interactive commands only: no editors, \
pagers or prompts. When the task is complete, reply with the single word SUBMIT and no code \
block; your work is then checked and the episode ends. If the task contradicts itself so that \
it cannot be done as stated, reply with a line REPORT_CONFLICT: <what contradicts what> \
instead. You have at most {max_steps} commands.
"""

_KEYS_NOTATION = (
    "plain characters, <Enter>, <Tab>, <Esc>, <BS>, <Up>, <Down>, <Left>, <Right>, <C-c> "
    'for Ctrl+c, <M-x> for Alt+x, <lt> for a literal "<"'
)

_KEYS_TOOLS = f"""\
You are typing into a Linux terminal to complete a task.

Each turn, send keystrokes with the keys tool ({_KEYS_NOTATION}), or type a command line \
with the bash tool (Enter is pressed after it); a ```keys or ```bash block at the end of \
your reply does the same. You are shown the screen afterwards. When the task is complete, \
call the submit tool or reply with the single word SUBMIT; if it contradicts itself so that it \
cannot be done as stated, call the report_conflict tool (or reply with a line REPORT_CONFLICT: \
<what contradicts what>) instead. You have at most {{max_steps}} turns.
"""

_KEYS_TEXT = f"""\
You are typing into a Linux terminal to complete a task.

Each turn, think briefly if you like, then end your reply with exactly one fenced code block: \
either ```bash with a command line (typed, then Enter is pressed) or ```keys with raw \
keystrokes in this notation: {_KEYS_NOTATION}. You are shown the screen afterwards. When the \
task is complete, reply with the single word SUBMIT and no code block; your work is then \
checked. If it contradicts itself so that it cannot be done as stated, reply with a line \
REPORT_CONFLICT: <what contradicts what> instead. You have at most {{max_steps}} turns.
"""

_PROMPTS = {
    ("command", True): _COMMAND_TOOLS,
    ("command", False): _COMMAND_TEXT,
    ("keys", True): _KEYS_TOOLS,
    ("keys", False): _KEYS_TEXT,
}


def system_prompt(mode: str = "command", *, tools: bool = True) -> str:
    """The system prompt template of a mode ("command" or "keys"); `{max_steps}` to fill.

    `tools`: whether the model is offered the bash/keys/submit tools.
    """
    try:
        return _PROMPTS[(mode, bool(tools))]
    except KeyError:
        raise ValueError(f"mode: expected 'command' or 'keys', got {mode!r}") from None
