"""Files a task names but its folder lacks: the Dockerfile's COPY sources, Git LFS pointers
left in place of content, a file whose checksum sits beside it, and what the test script,
the tests and the solution read from /tests or /solution."""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path

from termgym.importing._dockerfile import parse

LFS_POINTER = b"version https://git-lfs.github.com/spec/v1"
_CHECKSUM = (".sha256", ".sha512", ".sha1", ".md5")
_NAMED = re.compile(
    r"(?<![\w.-])(?:/tests|\$\{?TEST_DIR\}?|/solution)/([A-Za-z0-9_.][A-Za-z0-9_./-]*)"
)
_EXTRACTS_INTO_TESTS = re.compile(r"\s-[Cd]\s+(/tests|\"?\$\{?TEST_DIR\}?\"?)\b")


@dataclass(frozen=True)
class Missing:
    """One file the task needs and does not have.

    Attributes:
        path: As the task folder names it (`environment/weights.pt`, `tests/gtruth.pt`).
        why: Who names it, or why its content is absent.
        build: The image build needs it (the task cannot run without it).
    """

    path: str
    why: str
    build: bool

    def describe(self) -> str:
        return f"{self.path} ({self.why})"


def _is_pointer(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(len(LFS_POINTER)) == LFS_POINTER
    except OSError:
        return False


def _copy_sources(dockerfile: str) -> list[tuple[str, int]]:
    """(source, line) of every COPY/ADD that reads the build context."""
    found: list[tuple[str, int]] = []
    line = 0
    for ins in parse(dockerfile):
        start = line + 1
        line += ins.text.count("\n") + 1
        if ins.keyword not in ("COPY", "ADD"):
            continue
        args = ins.args.strip()
        quoted = args.startswith("[")  # the exec form: ["src", "dest"]
        words = re.findall(r'"((?:[^"\\]|\\.)*)"', args) if quoted else args.split()
        words = [w for w in words if not w.startswith("--")]
        if "--from" in ins.args or len(words) < 2:
            continue
        for source in words[:-1]:
            if re.match(r"^[a-z]+://", source) or "$" in source or source.startswith("<<"):
                continue  # ADD of a URL, a build ARG, a heredoc: not a file of the context
            found.append((source, start))
    return found


def _in_context(context: Path, source: str) -> bool:
    rel = source.strip().lstrip("/")
    rel = rel[2:] if rel.startswith("./") else rel
    if rel in ("", "."):
        return context.is_dir()
    if not any(c in rel for c in "*?["):
        return (context / rel).exists()
    parts = rel.split("/")
    return any(
        fnmatch.fnmatch(p.relative_to(context).as_posix(), rel)
        for p in context.rglob("*")
        if len(p.relative_to(context).parts) == len(parts)
    )


def _files(folder: Path | None) -> list[Path]:
    if folder is None or not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("*") if p.is_file())


def _named(
    texts: list[tuple[str, str]], tests: Path | None, solution: Path | None
) -> list[Missing]:
    """What the scripts and tests read from /tests or /solution but the folder lacks."""
    out: dict[str, Missing] = {}
    script = next((text for name, text in texts if name.endswith(".sh")), "")
    extracts = bool(_EXTRACTS_INTO_TESTS.search(script))
    for name, text in texts:
        for match in _NAMED.finditer(text):
            rel = match.group(1).rstrip(".")
            folder, prefix = (
                (solution, "solution")
                if match.group(0).startswith("/solution")
                else (tests, "tests")
            )
            if folder is None or not rel or (folder / rel).exists() or "*" in rel:
                continue
            if extracts and not name.endswith(".sh"):
                continue  # the script unpacks an archive into /tests: it may hold this
            if not (folder / rel).parent.exists() and "/" in rel:
                continue  # a folder the script makes at test time
            if any((folder / rel).parent.glob(f"{Path(rel).name}.*")):
                continue  # made from its source at test time (probe.c -> probe)
            line = text.count("\n", 0, match.start()) + 1
            key = f"{prefix}/{rel}"
            out.setdefault(key, Missing(key, f"{name} line {line} reads {match.group(0)}", False))
    return list(out.values())


def missing_files(
    root: Path,
    context: Path,
    dockerfile: str | None,
    tests: Path | None,
    test_script: tuple[str, str],
    solution: Path | None,
    solution_text: str | None,
) -> list[Missing]:
    """Every file the task names (or holds only as a pointer) that its folder lacks.

    `test_script` is (its name, its text); `solution` the solution folder (Harbor's), if any.
    """
    found: list[Missing] = []

    def rel(path: Path) -> str:
        return path.relative_to(root).as_posix()

    for source, line in _copy_sources(dockerfile or ""):
        if not _in_context(context, source):
            where = f"{rel(context)}/" if context != root else ""
            found.append(Missing(f"{where}{source.lstrip('./')}", f"the Dockerfile's line {line} "
                                 f"copies it into the image", True))  # fmt: skip
    for path in _files(context):
        if _is_pointer(path):
            found.append(Missing(rel(path), "a Git LFS pointer: the content was not fetched",
                                 True))  # fmt: skip
        elif path.suffix in _CHECKSUM and not path.with_suffix("").exists():
            found.append(Missing(rel(path.with_suffix("")), f"{path.name} is its checksum",
                                 True))  # fmt: skip
    for path in [*_files(tests), *_files(solution)]:
        if _is_pointer(path):
            found.append(Missing(rel(path), "a Git LFS pointer: the content was not fetched",
                                 False))  # fmt: skip
    texts = [test_script]
    for path in _files(tests):
        if path.suffix in (".py", ".sh") and path.stat().st_size < 1 << 20:
            texts.append((rel(path), path.read_text(encoding="utf-8", errors="replace")))
    if solution_text:
        texts.append(("the solution", solution_text))
    found.extend(_named(texts, tests, solution))
    return list({m.path: m for m in found}.values())
