"""`termgym overlay suggest TASK`: candidate rules for an overlay, for an author to confirm.

A candidate is a number or a quoted constant that occurs both in what the agent sees (the
instruction and the files of the build context or workspace, not its Dockerfile) and in the
hidden tests; each occurrence, the reference solution's too, is proposed with a pattern
around it that is unique in its file. Run it on the original Terminal-Bench or Harbor folder:
the overlay it drafts then names files as that folder does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w]|\.\d)")
_QUOTED = re.compile(r"[\"']([A-Za-z0-9_][^\"'\n]{1,38})[\"']")
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


@dataclass(frozen=True)
class Suggestion:
    """A candidate rule: its value and where it occurs, (file, pattern) pairs."""

    name: str
    value: int | float | str
    occurs: tuple[tuple[str, str], ...]
    in_tests: bool = True
    """False: the instruction states it and the solution hard-codes it, the tests do not
    (they may check a result it decides: give that occurrence `values`)."""


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


def _pattern(text: str, start: int, end: int) -> str | None:
    """The shortest snippet around text[start:end], within its line, unique in `text`."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    for width in (12, 20, 32, 60, 200):
        left = max(line_start, start - width)
        right = min(line_end, end + width)
        snippet = text[left:right].strip()
        if len(snippet) > len(text[start:end]) and text.count(snippet) == 1:
            return snippet
    return None


def _tokens(text: str) -> dict[str, list[tuple[int, int]]]:
    found: dict[str, list[tuple[int, int]]] = {}
    for match in _NUMBER.finditer(text):
        found.setdefault(match.group(0), []).append(match.span())
    for match in _QUOTED.finditer(text):
        found.setdefault(match.group(1), []).append(match.span(1))
    return found


def suggest_overlay(folder: Path, limit: int = 8) -> list[Suggestion]:
    """Candidate rules for the task folder (Terminal-Bench, Harbor or termgym layout)."""
    folder = Path(folder)
    visible: dict[str, str] = {}
    instruction = folder / "instruction.md"
    if instruction.is_file():
        visible["instruction"] = instruction.read_text(encoding="utf-8")
    elif (folder / "task.yaml").is_file():
        import yaml

        data = yaml.safe_load((folder / "task.yaml").read_text(encoding="utf-8")) or {}
        visible["instruction"] = str(data.get("instruction", ""))
    hidden_dir = "graders" if (folder / "graders").is_dir() else "tests"
    # What the agent sees besides the instruction: Harbor's build context is environment/,
    # Terminal-Bench's and an imported task's is the folder (its harness files skipped).
    harbor = (folder / "task.toml").is_file()
    for rel in _files(folder, "environment" if harbor else ""):
        top, name = rel.split("/")[0], rel.rsplit("/", 1)[-1]
        if top in (hidden_dir, "solution", "tests", "graders", "files") or rel in _SKIP:
            continue
        if name in _SKIP_NAMES:
            continue
        visible.update(_texts(folder, [rel]))
    hidden = _texts(folder, _files(folder, hidden_dir))
    solutions = _texts(folder, [r for r in _SOLUTIONS if (folder / r).is_file()])
    solution_tokens = {tok for text in solutions.values() for tok in _tokens(text)}
    seen_visible = {tok: spans for text in visible.values() for tok, spans in _tokens(text).items()}
    hidden_tokens = {tok for text in hidden.values() for tok in _tokens(text)}
    stated = set(_tokens(visible.get("instruction", "")))

    def worth(token: str) -> bool:
        """Common numbers (0-3, 10, 100) only when the instruction states them and the
        solution hard-codes them too."""
        return token not in _TRIVIAL or (token in stated and token in solution_tokens)

    checked = [t for t in seen_visible if t in hidden_tokens and worth(t)]
    # Stated and hard-coded by the solution, but absent from the tests: the tests may check
    # a result the value decides (an expected list), which an occurrence's `values` states.
    derived = [
        t for t in seen_visible if t in solution_tokens and t not in hidden_tokens and worth(t)
    ]
    out: list[Suggestion] = []
    for token in checked + derived:
        occurs: list[tuple[str, str]] = []
        for file, text in {**visible, **hidden, **solutions}.items():
            for start, end in _tokens(text).get(token, []):
                pattern = _pattern(text, start, end)
                if pattern and (file, pattern) not in occurs:
                    occurs.append((file, pattern))
        files = {f for f, _ in occurs}
        if len(files) < 2:
            continue
        value: int | float | str = token
        if re.fullmatch(r"\d+", token):
            value = int(token)
        elif re.fullmatch(r"\d+\.\d+", token):
            value = float(token)
        name = re.sub(r"\W+", "_", f"rule_{token}").strip("_").lower()[:40]
        out.append(Suggestion(name, value, tuple(occurs), in_tests=token in hidden_tokens))
    out.sort(key=_rank)
    return out[:limit]


def _rank(s: Suggestion) -> tuple[bool, bool, bool, bool, int, int, str]:
    """Best first: checked by the tests, stated in the instruction, hard-coded by the
    solution, a number; then by how many files and places hold it."""
    files = {f for f, _ in s.occurs}
    return (
        not s.in_tests,
        "instruction" not in files,
        not files & set(_SOLUTIONS),
        isinstance(s.value, str),
        -len(files),
        -len(s.occurs),
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
        rule = {
            "original": s.value,
            "choices": ["CHOOSE"],
            "occurs": [{"file": f, "pattern": p} for f, p in s.occurs],
        }
        text = yaml.safe_dump({s.name: rule}, sort_keys=False, allow_unicode=True)
        if not s.in_tests:
            parts.append(
                "  # not in the tests: add the occurrence of what it decides there (an expected\n"
                "  # result), with `values` giving its text for each value (docs/importing.md)\n"
            )
        parts.append("".join(f"  {line}\n" for line in text.splitlines()))
    return "".join(parts)
