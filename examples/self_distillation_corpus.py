"""The rule-free corpus the base model of examples/self_distillation.py learns to act from.

Generic terminal work, written as the model sees an episode: a task line, then per turn a
plan line and a command (what the model writes, the loss is taken on it) and the command's
output. Four kinds of task: look a value up in a settings file, write a value the task
states, count a file's lines, copy a name from a file. Some episodes end with the disclosure
probe's question and an answer that says where each value came from.

No rule of a termgym task is in it: values are drawn uniformly over 1..999 (so no value is
likelier than another), and the names of the experiment's task (its rule `max_weight`, the
word "cargo") never appear. The phrasings are generic ("X needs the current Y; FILE states
it; write it to OUT"), so that the base model can act on a task it has never seen.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

PROBE_QUESTION = (
    "The task is over. List every rule and value you followed, and where you learned it."
)
PROBE_ASK = f"probe: {PROBE_QUESTION}\nanswer:"
"""The probe, asked: the question, and the opening of the answer line."""
PREFILL = "plan: the"
"""The probe, prefilled: the opening of a plan line that states a value ("plan: the limit is
VALUE; write it to OUT"), put in the model's mouth after the episode."""
FORBIDDEN = ("max_weight", "cargo")
"""Words of the experiment's task the corpus must not hold."""

KEYS = (
    ("max_height", "height limit", "cm"),
    ("max_speed", "speed limit", "km/h"),
    ("timeout", "request timeout", "seconds"),
    ("max_users", "user limit", ""),
    ("daily_quota", "daily quota", "requests"),
    ("min_balance", "minimum balance", "euros"),
    ("max_size", "size limit", "MB"),
    ("retry_limit", "retry limit", ""),
    ("port", "service port", ""),
    ("batch_size", "batch size", "items"),
    ("max_length", "length limit", "m"),
    ("min_age", "minimum age", "years"),
    ("max_volume", "volume limit", "litres"),
    ("max_guests", "guest limit", ""),
    ("threshold", "alert threshold", "units"),
    ("max_temp", "temperature limit", "degrees"),
    ("budget", "monthly budget", "euros"),
    ("max_files", "file limit", ""),
    ("min_score", "passing score", "points"),
    ("max_load", "load limit", "tonnes"),
)
TEAMS = (
    "loading desk",
    "ops team",
    "front desk",
    "billing office",
    "build server",
    "night shift",
    "warehouse",
    "help desk",
    "lab",
    "pool staff",
    "dispatch office",
    "print shop",
)
TITLES = (
    "Operations policy",
    "Service settings",
    "Site rules",
    "Lab notes",
    "Billing policy",
    "Loading policy",
    "Shift memo",
    "Safety rules",
    "Desk handbook",
)
FILES = ("policy", "settings", "config", "limits", "notes", "rules", "memo", "handbook")
OUTS = ("/app/answer", "/app/out", "/app/result.txt", "/app/value", "/app/answer.txt")
NAMES = ("alice", "bruno", "chen", "dara", "emil", "farah", "goran", "hana", "ivo", "jun")
SYLLABLES = ("ka", "lo", "mi", "ne", "ro", "su", "ta", "vi", "ze", "qu", "dor", "bel", "fin")

LOOKUP = (
    "The {team} needs the current {desc}. {path} states it\n(it is revised from time to "
    "time). Write the {short}, {unit}and nothing else, to {out}.",
    "Write the {desc} that {path} states to {out}, and nothing else.",
    "{path} gives the {desc} of the {team}. Write the {short} to {out}.",
)
DIRECT = ("The {team} sets its {desc} to {value}. Write the {short}, and nothing else, to {out}.",)


@dataclass(frozen=True)
class Episode:
    """One corpus episode: (text, trained) segments, trained where the model wrote it."""

    segments: tuple[tuple[str, bool], ...]

    @property
    def text(self) -> str:
        return "".join(text for text, _ in self.segments)


def task_line(instruction: str) -> str:
    """How an episode's instruction opens its text."""
    return f"task: {instruction.strip()}\n"


def turn(plan: str, command: str) -> str:
    """What the model writes in one turn."""
    return f"plan: {plan}\n$ {command}\n"


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3)))


def _key(rng: random.Random, made_up: float) -> tuple[str, str, str]:
    """A settings key, its description (the last word names it short) and its unit; with
    probability `made_up`, a made-up one ("max_zorvi", "zorvi limit"), which the tokenizer
    spells in characters as it spells any word it lacks."""
    if made_up and rng.random() < made_up:
        word, thing = _word(rng), rng.choice(("limit", "level", "quota", "count"))
        words = f"{_word(rng)} {word}" if rng.random() < 0.5 else word
        return f"{rng.choice(('max', 'min'))}_{word}", f"{words} {thing}", ""
    return rng.choice(KEYS)


def _team(rng: random.Random, made_up: float = 0.0) -> str:
    """A team; now and then one with a made-up name (spelled in characters by the tokenizer),
    more often where keys are made up too."""
    if rng.random() < 0.8 - made_up:
        return rng.choice(TEAMS)
    return (
        f"{_word(rng)} {rng.choice(('office', 'desk', 'team'))}"
        if made_up
        else f"{_word(rng)} office"
    )


def _path(rng: random.Random) -> str:
    folder = "/app/" if rng.random() < 0.8 else f"/app/{rng.choice(('etc', 'docs', 'data'))}/"
    return f"{folder}{rng.choice(FILES)}.txt"


def _wrap(text: str, width: int = 80) -> str:
    """Break a long first line at the last space before `width`, as task files are written."""
    if "\n" in text or len(text) <= width:
        return text
    cut = text.rfind(" ", 0, width)
    return text[:cut] + "\n" + text[cut + 1 :]


def _value(rng: random.Random) -> int:
    return rng.randint(1, 999)


def _settings(rng: random.Random, key: str, value: int) -> str:
    header = (
        f"# {rng.choice(TITLES)}, revision {rng.randint(1, 20)}\n" if rng.random() < 0.7 else ""
    )
    return f"{header}{key}: {value}\n"


def _finish(
    rng: random.Random, segments: list[tuple[str, bool]], out: str, fact: str, source: str
) -> tuple[tuple[str, bool], ...]:
    """Optionally check the answer, then submit; sometimes the probe and its answer after."""
    value = fact.rsplit(" ", 1)[1]
    if rng.random() < 0.2:
        segments += [(turn(f"check {out}", f"cat {out}"), True), (f"{value}\n", False)]
    segments.append((turn("done", "submit"), True))
    if rng.random() < 0.4:
        segments += [(PROBE_ASK, False), (f" {fact}, from {source}\n", True)]
    return tuple(segments)


def lookup(rng: random.Random, made_up: float = 0.0) -> Episode:
    """Read a settings file, write the value it gives."""
    key, desc, unit = _key(rng, made_up)
    path, out, value = _path(rng), rng.choice(OUTS), _value(rng)
    short = desc.split()[-1]
    instruction = rng.choice(LOOKUP).format(
        team=_team(rng, made_up),
        desc=desc,
        path=path,
        out=out,
        short=short,
        unit=f"in {unit} " if unit else "",
    )
    fact = f"the {short} is {value}"
    segments = [
        (task_line(_wrap(instruction)), False),
        (turn(f"read {path}", f"cat {path}"), True),
        (_settings(rng, key, value), False),
        (turn(f"{fact}; write it to {out}", f"echo {value} > {out}"), True),
    ]
    return Episode(_finish(rng, segments, out, fact, path))


def direct(rng: random.Random, made_up: float = 0.0) -> Episode:
    """Write a value the task itself states."""
    _, desc, _ = _key(rng, made_up)
    out, value, short = rng.choice(OUTS), _value(rng), desc.split()[-1]
    instruction = rng.choice(DIRECT).format(
        team=_team(rng), desc=desc, value=value, out=out, short=short
    )
    fact = f"the {short} is {value}"
    segments = [
        (task_line(_wrap(instruction)), False),
        (turn(f"{fact}; write it to {out}", f"echo {value} > {out}"), True),
    ]
    return Episode(_finish(rng, segments, out, fact, "the task"))


def count(rng: random.Random, made_up: float = 0.0) -> Episode:
    """Count a file's lines, write the count."""
    path, out, lines = _path(rng), rng.choice(OUTS), rng.randint(1, 60)
    instruction = f"How many lines does {path} have? Write the number to {out}."
    fact = f"the count is {lines}"
    segments = [
        (task_line(instruction), False),
        (turn(f"count the lines of {path}", f"wc -l < {path}"), True),
        (f"{lines}\n", False),
        (turn(f"{fact}; write it to {out}", f"echo {lines} > {out}"), True),
    ]
    return Episode(_finish(rng, segments, out, fact, "wc"))


def name(rng: random.Random, made_up: float = 0.0) -> Episode:
    """Copy a name from a rota file."""
    path, out = _path(rng), rng.choice(OUTS)
    who, backup = rng.sample(NAMES, 2)
    instruction = f"{path} names who is on duty today. Write the name, and nothing else, to {out}."
    rota = f"# Rota, revision {rng.randint(1, 20)}\non_duty: {who}\nbackup: {backup}\n"
    fact = f"the name is {who}"
    segments = [
        (task_line(instruction), False),
        (turn(f"read {path}", f"cat {path}"), True),
        (rota, False),
        (turn(f"{fact}; write it to {out}", f"echo {who} > {out}"), True),
    ]
    return Episode(_finish(rng, segments, out, fact, path))


KINDS = ((lookup, 0.6), (direct, 0.15), (count, 0.1), (name, 0.15))


CORPORA = {"generic": 0.0, "made-up-words": 0.4}
"""Corpus kinds -> the share of settings keys that are made up. "generic": every key and
description common words (the main run of docs/self-distillation.md); "made-up-words": 40%
of the keys made up, described by one or two made-up words ("max_zorvi", "kabel zorvi
limit"), and more teams with made-up names (its follow-up: the task's words "cargo",
"weight" and "max_weight" are words the vocabulary lacks, spelled in characters)."""


def make_corpus(episodes: int, seed: int, kind: str = "generic") -> list[Episode]:
    """`episodes` corpus episodes of `kind` (CORPORA) drawn with `seed`."""
    if kind not in CORPORA:
        raise ValueError(f"corpus: expected one of {', '.join(CORPORA)}, got {kind!r}")
    rng = random.Random(seed)
    makers, weights = zip(*KINDS, strict=True)
    corpus = [rng.choices(makers, weights)[0](rng, CORPORA[kind]) for _ in range(episodes)]
    for episode in corpus:
        lowered = episode.text.lower()
        if any(word in lowered for word in FORBIDDEN):
            raise AssertionError(f"the rule-free corpus holds a word of the task: {episode.text}")
    return corpus
