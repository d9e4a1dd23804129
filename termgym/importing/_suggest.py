"""`termgym overlay suggest TASK`: candidate rules for an overlay, for an author to confirm.

A candidate is a whole token (a number, a date, a quoted name: `_tokens`) that occurs in
what the agent sees (the instruction and the build context's files the Dockerfile copies
into the workdir) and that the hidden tests check, boilerplate left out. Each occurrence,
the reference solution's too, is proposed with the shortest pattern around it that begins
and ends on whole words and is unique in its file. Best first: checked by the tests' code
(not only named in a comment or a message), stated in the instruction, hard-coded by the
solution (else the task's own solution adapts, and no memorizer goes stale). Run it on the
original Terminal-Bench or Harbor folder: the draft then names files as that folder does.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path

from termgym.importing._dockerfile import destination, parse
from termgym.importing._tokens import Occurrence, pattern_around, tokens, with_roles

_TRIVIAL = {"0", "1", "2", "3", "10", "100"}
_SKIP_DIRS = {".git", "__pycache__", "node_modules"}
_SKIP = {"task.yaml", "task.toml", "instruction.md", "run-tests.sh", "solution.sh",
         "solution.yaml", "docker-compose.yaml", "overlay.yaml", "IMPORT-NOTES.txt"}  # fmt: skip
"""Not what the agent sees: the harness's files, and what `termgym import` wrote."""
_SKIP_NAMES = {"Dockerfile", "termgym-ca.pem", "docker-compose.yaml"}
"""Build files (an occurrence there would need an image per variant) and the CA bundle."""
_SOLUTIONS = ("solution.sh", "solution/solve.sh", "solution/oracle.sh")
"""Where the reference solution is (TB, Harbor, imported): its occurrences are proposed
too, so the oracle is rewritten with the rule; they do not make a candidate."""
_STOP = {"the", "a", "an", "of", "to", "in", "on", "at", "is", "be", "and", "or", "for",
         "with", "by", "as", "it", "this", "that", "must", "should", "exactly", "only",
         "least", "most", "than", "from", "are", "each", "every", "all", "into", "use"}  # fmt: skip


@dataclass(frozen=True)
class Suggestion:
    """A candidate rule: its value and where it occurs, (file, pattern) pairs.

    `counts` gives, per occurrence, how many times its pattern occurs (the overlay's
    `count`: identical lines that hold the value). `checks` and `mentions` count the
    tests' occurrences in code and in comments or messages; `stated` the instruction's;
    `hard_coded` the solution's. `notes` say what the author must look at."""

    name: str
    value: int | float | str
    occurs: tuple[tuple[str, str], ...]
    in_tests: bool = True
    """False: the instruction states it and the solution hard-codes it, the tests do not
    (they may check a result it decides: give that occurrence `values`)."""
    counts: tuple[int, ...] = ()
    checks: int = 0
    mentions: int = 0
    stated: int = 0
    hard_coded: int = 0
    notes: tuple[str, ...] = field(default=())
    input: bool = False
    """A path the image holds (an input the task gives, not a name the agent chooses)."""


def _texts(folder: Path, rels: list[str]) -> dict[str, str]:
    out = {}
    for rel in rels:
        path = folder / rel
        try:
            if path.stat().st_size <= 256 << 10:
                out[rel] = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
    return out


def _files(folder: Path, under: str) -> list[str]:
    base = folder / under if under else folder
    if not base.is_dir():
        return []
    return sorted(
        p.relative_to(folder).as_posix()
        for p in base.rglob("*")
        if p.is_file() and not (_SKIP_DIRS & set(p.relative_to(folder).parts))
    )


def _workdir(dockerfile: str) -> str:
    workdir = "/"
    for ins in parse(dockerfile):
        if ins.keyword == "FROM":
            workdir = "/"
        elif ins.keyword == "WORKDIR":
            path = ins.args.strip().strip("\"'")
            workdir = path if path.startswith("/") else posixpath.join(workdir, path)
    return workdir if workdir != "/" else "/app"


@dataclass(frozen=True)
class _Texts:
    """A task's texts, as `suggest` reads them."""

    visible: dict[str, str]
    hidden: dict[str, str]
    solutions: dict[str, str]
    dockerfile: str
    elsewhere: dict[str, str]
    """Visible files the image holds outside the workdir: where an overlay cannot reach."""
    inputs: frozenset[str]
    """Where the image holds the build context's files, and their folders: a path there is
    an input, which an overlay cannot rename."""


def _read(folder: Path) -> _Texts:
    visible: dict[str, str] = {}
    instruction = folder / "instruction.md"
    if instruction.is_file():
        visible["instruction"] = instruction.read_text(encoding="utf-8")
    elif (folder / "task.yaml").is_file():
        import yaml

        data = yaml.safe_load((folder / "task.yaml").read_text(encoding="utf-8")) or {}
        visible["instruction"] = str(data.get("instruction", ""))
    hidden_dir = "graders" if (folder / "graders").is_dir() else "tests"
    # The build context: Harbor's and an imported task's environment/, else the folder.
    context = "environment" if (folder / "environment" / "Dockerfile").is_file() else ""
    dockerfile_path = folder / context / "Dockerfile"
    dockerfile = dockerfile_path.read_text(encoding="utf-8") if dockerfile_path.is_file() else ""
    workdir = _workdir(dockerfile).rstrip("/") + "/"
    elsewhere: dict[str, str] = {}
    inputs: set[str] = set()
    for rel in _files(folder, context):
        top, name = rel.split("/")[0], rel.rsplit("/", 1)[-1]
        if top in (hidden_dir, "solution", "tests", "graders", "files") or rel in _SKIP:
            continue
        inside = rel[len(context) + 1 :] if context else rel
        held = destination(dockerfile, inside) if dockerfile else None
        while held and held not in ("/", workdir.rstrip("/")):
            inputs.add(held)
            held = posixpath.dirname(held)
        found = _texts(folder, [rel]) if name not in _SKIP_NAMES else {}
        if not found:
            continue
        where = destination(dockerfile, inside) if dockerfile else workdir + inside
        if where is None:
            continue  # never in the image: the agent does not see it
        if where.startswith(workdir):
            visible.update(found)
        else:
            elsewhere[where] = found[rel]
    hidden = _texts(folder, _files(folder, hidden_dir))
    solutions = _texts(folder, [r for r in _SOLUTIONS if (folder / r).is_file()])
    return _Texts(visible, hidden, solutions, dockerfile, elsewhere, frozenset(inputs))


def _found(file: str, text: str) -> dict[str, list[Occurrence]]:
    found = tokens(text, quoted=True)
    if file == "instruction":
        return found
    return with_roles(text, found, python=file.endswith(".py"))


def _patterns(
    text: str, occs: list[Occurrence], note: list[str], file: str
) -> list[tuple[str, int]]:
    """(pattern, count) covering every occurrence once: a unique snippet each, else the
    whole line with how many times that line occurs."""
    chosen: dict[int, tuple[str, int]] = {}
    for index, occ in enumerate(occs):
        pattern = pattern_around(text, occ.start, occ.end)
        if pattern is not None:
            chosen[index] = (pattern, 1)
    for index, occ in enumerate(occs):
        if index in chosen:
            continue
        start = text.rfind("\n", 0, occ.start) + 1
        end = text.find("\n", occ.end)
        line = text[start : len(text) if end < 0 else end].strip()
        value = text[occ.start : occ.end]
        if len(re.findall(rf"(?<!\w){re.escape(value)}(?!\w)", line)) != 1:
            note.append(f"{file}: a line holds it twice; write its pattern by hand")
            continue
        places = [m.start() for m in re.finditer(re.escape(line), text)]
        for other, o in enumerate(occs):
            if any(p <= o.start and o.end <= p + len(line) for p in places):
                chosen[other] = (line, len(places))
    return list(dict.fromkeys(chosen[i] for i in sorted(chosen)))


def _unit(file: str, occ: Occurrence, texts: _Texts) -> str:
    """The unit glued to a number's occurrence (`MB` of `10MB`), or ""."""
    text = {**texts.visible, **texts.hidden, **texts.solutions}[file]
    match = re.match(r"[^\W\d_]+", text[occ.end : occ.end + 8])
    return match.group(0) if match else ""


def _name(value: str, instruction: str, occs: list[Occurrence], taken: set[str]) -> str:
    """A rule name from the words around the value where the instruction states it."""
    words: list[str] = []
    if occs:
        occ = occs[0]
        before = re.findall(r"[A-Za-z]+", instruction[max(0, occ.start - 40) : occ.start])
        after = re.findall(r"[A-Za-z]+", instruction[occ.end : occ.end + 30])
        words = [w.lower() for w in before[-2:] + after[:1] if w.lower() not in _STOP]
    base = "_".join(words[-2:]) if words else re.sub(r"\W+", "_", f"rule_{value}").lower()
    base = re.sub(r"\W+", "_", base).strip("_")[:40] or "rule"
    name, number = base, 2
    while name in taken:
        name, number = f"{base}_{number}", number + 1
    taken.add(name)
    return name


def suggest_overlay(folder: Path, limit: int = 8) -> list[Suggestion]:
    """Candidate rules for the task folder (Terminal-Bench, Harbor or termgym layout)."""
    texts = _read(Path(folder))
    found = {
        file: _found(file, text)
        for file, text in {**texts.visible, **texts.hidden, **texts.solutions}.items()
    }
    instruction = found.get("instruction", {})

    def where(group: dict[str, str], token: str, role: str | None = None) -> int:
        return sum(
            1
            for file in group
            for occ in found[file].get(token, [])
            if role is None or occ.role == role
        )

    candidates: list[Suggestion] = []
    taken: set[str] = set()
    seen = {t for file in texts.visible for t in found[file]}
    for token in sorted(seen):
        checks = where(texts.hidden, token, "code")
        mentions = where(texts.hidden, token, "mention")
        stated = len(instruction.get(token, []))
        hard_coded = where(texts.solutions, token)
        if token in _TRIVIAL and not (stated and hard_coded):
            continue  # common numbers: only when the instruction and the solution name them
        if not checks and not (stated and hard_coded):
            continue
        occurs: list[tuple[str, str]] = []
        counts: list[int] = []
        notes: list[str] = []
        for file in found:
            occs = found[file].get(token, [])
            text = {**texts.visible, **texts.hidden, **texts.solutions}[file]
            for pattern, count in _patterns(text, occs, notes, file) if occs else []:
                occurs.append((file, pattern))
                counts.append(count)
        if len({f for f, _ in occurs}) < 2:
            continue
        units = {_unit(file, occ, texts) for file in found for occ in found[file].get(token, [])}
        if len(units - {""}) > 1 or (units - {""} and "" in units and len(units) > 2):
            notes.append(
                "its occurrences carry different units "
                f"({', '.join(sorted(u or '-' for u in units))}): they may be different rules"
            )
        if token in texts.inputs:
            notes.append("the image holds it (an input): renaming it points the agent at nothing")
        if not hard_coded:
            notes.append(
                "the solution does not hard-code it: if it reads the value, the task's own "
                "solution adapts and no memorizer goes stale"
            )
        if re.search(rf"(?<![\w.]){re.escape(token)}(?![\w]|\.\d)", texts.dockerfile):
            notes.append("the Dockerfile holds it too: what the image bakes in stays original")
        for path, text in texts.elsewhere.items():
            if re.search(rf"(?<![\w.]){re.escape(token)}(?![\w]|\.\d)", text):
                notes.append(
                    f"the agent also sees it in {path}, outside the workdir: no overlay rewrites it"
                )
        value: int | float | str = token
        if re.fullmatch(r"\d+", token):
            value = int(token)
        elif re.fullmatch(r"\d+\.\d+", token):
            value = float(token)
        candidates.append(
            Suggestion(
                name=_name(token, texts.visible.get("instruction", ""),
                           instruction.get(token, []), taken),
                value=value, occurs=tuple(occurs), in_tests=checks > 0, counts=tuple(counts),
                checks=checks, mentions=mentions, stated=stated, hard_coded=hard_coded,
                notes=tuple(dict.fromkeys(notes)), input=token in texts.inputs,
            )
        )  # fmt: skip
    candidates.sort(key=_rank)
    return candidates[:limit]


def _rank(s: Suggestion) -> tuple[bool, bool, bool, bool, bool, bool, int, int, int, str]:
    """Best first: checked by the tests' code, stated in the instruction, hard-coded by the
    solution; not an input path, not a common number (0-3, 10, 100) used all over (in more
    than 8 places: a counter, an index), a number; then by how often the tests check it and
    the instruction states it, and how many files hold it."""
    return (
        not s.in_tests,
        not s.stated,
        not s.hard_coded,
        s.input,
        str(s.value) in _TRIVIAL and len(s.occurs) > 8,
        isinstance(s.value, str),
        -s.checks,
        -s.stated,
        -len({f for f, _ in s.occurs}),
        str(s.value),
    )


def as_overlay_yaml(suggestions: list[Suggestion]) -> str:
    """The suggestions as an overlay.yaml draft (choices left for the author)."""
    import yaml

    parts = [
        "# Candidate rules: confirm each (a value the instruction states and the tests check),\n"
        "# replace CHOOSE by the values contradicted and sampled episodes use, delete the rest.\n"
        "rules:\n"
    ]
    for s in suggestions:
        occurs = []
        for (file, pattern), count in zip(s.occurs, s.counts or [1] * len(s.occurs), strict=True):
            occ: dict[str, object] = {"file": file, "pattern": pattern}
            if count > 1:
                occ["count"] = count
            occurs.append(occ)
        rule = {"original": s.value, "choices": ["CHOOSE"], "occurs": occurs}
        text = yaml.safe_dump({s.name: rule}, sort_keys=False, allow_unicode=True, width=100)
        parts.append(
            f"  # tests: {s.checks} in code, {s.mentions} in comments or messages; "
            f"instruction: {s.stated}; solution: {s.hard_coded}\n"
        )
        if not s.in_tests:
            parts.append(
                "  # not in the tests' code: add the occurrence of what it decides there (an\n"
                "  # expected result), with `values` giving its text for each value\n"
                "  # (docs/importing.md)\n"
            )
        parts.extend(f"  # {note}\n" for note in s.notes)
        parts.append("".join(f"  {line}\n" for line in text.splitlines()))
    return "".join(parts)
