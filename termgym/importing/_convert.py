"""Write a ForeignTask out as a termgym task folder (a file conversion: milliseconds).

<id>/task.yaml             templates: false (shown verbatim), provenance, one
                           `imported-tests` grader, limits from the original timeouts
<id>/environment/          the build context, its Dockerfile rewritten (_dockerfile)
<id>/graders/tests/        the original tests (copied to /tests in the verifier)
<id>/graders/run-tests.sh  the test script as the verifier runs it (_script)
<id>/solution/oracle.sh    the original solution (overlay occurrences rewritten per
                           episode); solution/memorized.sh is it verbatim
<id>/files/                only files an overlay rewrites, at their place in the workdir
<id>/overlay.yaml          the overlay, its paths translated to this layout
"""

from __future__ import annotations

import dataclasses
import json
import os
import posixpath
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from termgym.errors import ImportRefused, TaskSpecError
from termgym.importing._dockerfile import CA_FILE, copy_destinations, destination, rewrite
from termgym.importing._inprocess import in_process_code
from termgym.importing._missing import missing_files
from termgym.importing._model import ForeignTask
from termgym.importing._script import plan_script
from termgym.overlay import OVERLAY_FILE, read_overlay

TB_HIDDEN = ("tests", "run-tests.sh", "solution.sh", "solution.yaml", "task.yaml",
             "docker-compose.yaml", OVERLAY_FILE)  # fmt: skip
"""Never part of a Terminal-Bench task's image: its harness copies tests in afterwards."""

_LIVE = re.compile(
    r"localhost|127\.0\.0\.1|\bpgrep\b|\bps\s+aux\b|\bpsutil\b|systemctl|/proc/\d|\bnetstat\b|"
    r"\bss\s+-|socket\.(create_)?connect|requests\.(get|post)\(\s*[\"']http"
)
_STATE = re.compile(
    r"[\"'](/(?:etc|root|home|opt|srv|var|usr/local|tmp|data|output|workspace|"
    r"logs?|mnt)[^\"'\s{}$*]*)[\"']"
)
_HOME_STATE = re.compile(
    r"(?:Path\.home\(\)\s*/\s*|expanduser\(\s*)[\"'](?:~/)?([A-Za-z0-9_.][^\"'\s{}$*/]*)"
    r"(?:/[^\"'\n]*)?[\"']"
)
"""`Path.home() / ".jupyter"`, `expanduser("~/.config")`: root's home, where both harnesses
run the tests (the first folder under it is copied to the verifier)."""
_SKIP_STATE = ("/tests", "/logs/verifier", "/usr/local/bin/python", "/var/lib/termgym")


@dataclass(frozen=True)
class Converted:
    """One task written out."""

    task_id: str
    folder: Path
    original: Path
    protection: str
    approximate: tuple[str, ...]
    mappings: tuple[str, ...]
    overlay: str = ""
    """The rules the overlay declared, comma-separated ("" without an overlay)."""
    missing: tuple[str, ...] = ()
    """Files the tests or the solution name that the task folder lacks, each with who names
    it (the task imports; what needs them fails)."""


def ca_bundle(user: Path | None) -> bytes:
    """The host's CA bundle plus the user's (TERMGYM_CA_BUNDLE or --ca-bundle)."""
    parts = []
    for path in (
        Path(os.environ.get("SSL_CERT_FILE", "/etc/ssl/certs/ca-certificates.crt")),
        user
        or (Path(os.environ["TERMGYM_CA_BUNDLE"]) if os.environ.get("TERMGYM_CA_BUNDLE") else None),
    ):
        if path is not None and path.is_file():
            parts.append(path.read_bytes().strip() + b"\n")
    return b"".join(parts)


def _name(requirement: str) -> str:
    return re.split(r"[=<>!~\[; ]", requirement, maxsplit=1)[0].lower()


def _unique_packages(names: tuple[str, ...]) -> tuple[str, ...]:
    """One requirement per package: the first that pins a version, else the first."""
    chosen: dict[str, str] = {}
    for requirement in names:
        name = _name(requirement)
        if name not in chosen or (chosen[name] == name and requirement != name):
            chosen[name] = requirement
    return tuple(chosen.values())


def _title(instruction: str) -> str:
    for line in instruction.splitlines():
        text = line.strip().lstrip("#").strip()
        if text:
            return text if len(text) <= 90 else text[:87] + "..."
    return "imported task"


def _state_paths(tests: Path | None, workdir: str) -> list[str]:
    if tests is None or not tests.is_dir():
        return []
    found: set[str] = set()
    for path in tests.rglob("*"):
        if not path.is_file() or path.stat().st_size > 1 << 20:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        found.update(
            "/root/" + m.group(1) for m in _HOME_STATE.finditer(text) if m.group(1) not in ".."
        )
        for match in _STATE.finditer(text):
            candidate = posixpath.normpath(match.group(1))
            if candidate == "/" or any(candidate.startswith(s) for s in _SKIP_STATE):
                continue
            if candidate == workdir or candidate.startswith(workdir.rstrip("/") + "/"):
                continue
            if ".." in candidate.split("/"):
                continue
            found.add(candidate)
    return sorted(found)[:64]


_LIVE_SCAN_BYTES = 1 << 20
"""Files of the tests larger than this are data, not code that reaches a service."""


def _live(tests: Path | None, script: str) -> bool:
    """Whether the tests reach a service the agent left running: the test script, and every
    text file the tests ship (pytest modules, and the shell or expect scripts they start:
    configure-git-webserver's verify.sh clones over ssh from localhost)."""
    texts = [script]
    if tests is not None and tests.is_dir():
        for path in sorted(tests.rglob("*")):
            if path.is_symlink() or not path.is_file():
                continue
            if path.stat().st_size > _LIVE_SCAN_BYTES:
                continue
            try:
                texts.append(path.read_text(encoding="utf-8"))
            except UnicodeDecodeError:
                continue
    return any(_LIVE.search(text) for text in texts)


def _copy_context(task: ForeignTask, target: Path) -> None:
    hidden = TB_HIDDEN if task.format == "terminal-bench" else ()
    target.mkdir(parents=True)
    if not task.context.is_dir():
        return
    for entry in task.context.iterdir():
        if entry.name in hidden or entry.name == "Dockerfile":
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.copytree(entry, target / entry.name, symlinks=True)
        else:
            shutil.copy2(entry, target / entry.name, follow_symlinks=False)


def _translate_overlay(
    task: ForeignTask, source: Path, dest: Path, dockerfile: str, workdir: str
) -> dict[str, Any]:
    """The overlay with its files named as the converted task names them; files of the
    build context it rewrites are also copied to files/ at their place in the workdir."""
    overlay = read_overlay(source)
    data = overlay.model_dump(exclude_none=True)
    script_name = "run-tests.sh" if task.format == "terminal-bench" else "tests/test.sh"
    solution_names = {task.solution_name, "solution.sh", "solution/solve.sh"}
    for name, rule in data["rules"].items():
        for occ in rule["occurs"]:
            file = occ["file"]
            if file == "instruction":
                continue
            if file == script_name:
                occ["file"] = "graders/run-tests.sh"
            elif file.startswith("tests/"):
                occ["file"] = "graders/" + file
            elif file in solution_names or (
                task.format == "harbor" and file.startswith("solution/")
            ):  # Harbor's helper files travel inside the oracle (_solution)
                occ["file"] = "solution/oracle.sh"
            else:
                rel = file.removeprefix("environment/") if task.format == "harbor" else file
                if (task.context / rel).is_symlink():
                    raise TaskSpecError(
                        f"{source}: rule {name!r}: {file} is a link: expected a file of the "
                        "build context to rewrite (a link's target would be rewritten too)"
                    )
                if not (task.context / rel).is_file():
                    raise TaskSpecError(
                        f"{source}: rule {name!r}: {file}: expected 'instruction', a file of "
                        "tests/, the solution, or a file of the build context, found no such file"
                    )
                where = destination(dockerfile, rel)
                prefix = workdir.rstrip("/") + "/"
                if where is None or not where.startswith(prefix):
                    raise TaskSpecError(
                        f"{source}: rule {name!r}: {file}: expected the Dockerfile to COPY it "
                        f"into the workdir {workdir}, found it "
                        + (f"copied to {where}" if where else "copied nowhere")
                        + ": termgym rewrites visible files by placing them in the workdir"
                    )
                inside = where[len(prefix) :]
                (dest / "files" / inside).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(task.context / rel, dest / "files" / inside, follow_symlinks=False)
                occ["file"] = "files/" + inside
    return data


def convert(
    task: ForeignTask,
    out: Path,
    *,
    registry: bool = False,
    ca: Path | None = None,
    overlay: Path | None = None,
) -> Converted:
    """Write `task` as a termgym task folder under `out` (replacing one of the same id).

    Raises:
        ImportRefused: the task cannot run here (base image, network at test time ...).
        TaskSpecError: its overlay is malformed or names a file it cannot rewrite.
    """
    task_id = task.task_id
    script_name = "run-tests.sh" if task.format == "terminal-bench" else "tests/test.sh"
    plan = plan_script(task.test_script, task.original_id, script_name)
    approximate = list(task.approximate)
    notes = list(plan.notes)
    if plan.protection == "agent-user":
        approximate.append(
            f"the test script runs programs of the agent's work itself ({plan.why}): it runs, "
            "whole, as the agent's user, so a program of the agent's could forge its output"
        )
    elif in_process := in_process_code(task.tests):
        plan = dataclasses.replace(plan, protection="agent-user", why=in_process)
        approximate.append(
            f"the tests run the agent's code inside the test process ({in_process}): the "
            "script runs, whole, as the agent's user, so the agent's code could forge the "
            "outcomes"
        )
    missing = missing_files(
        task.root,
        task.context,
        task.dockerfile,
        task.tests,
        (script_name, task.test_script),
        task.root / "solution" if task.format == "harbor" else None,
        task.solution,
    )
    if any(m.build for m in missing):
        raise ImportRefused(
            f"{task.original_id}: files its image needs are missing from the task folder: "
            + "; ".join(m.describe() for m in missing)
        )
    if missing:
        approximate.append(
            "files the task names are missing from its folder: "
            + "; ".join(m.describe() for m in missing)
            + ": what reads them fails"
        )
    dockerfile_text = task.dockerfile
    base_note = ""
    if dockerfile_text is None or (registry and task.docker_image):
        if not registry:
            raise ImportRefused(
                f"{task.original_id}: prebuilt image {task.docker_image} cannot be pulled (no "
                "image registry answers here) and the task has no environment/Dockerfile"
            )
        dockerfile_text = f"FROM {task.docker_image}\n"
        base_note = f"prebuilt image {task.docker_image}"
    elif task.docker_image:
        base_note = f"built environment/Dockerfile: prebuilt {task.docker_image} cannot be pulled"
    pip = _unique_packages(plan.pip)
    if "$TERMGYM_PYTEST" in plan.script and "pytest" not in [_name(p) for p in pip]:
        pip = ("pytest", *pip)
    bundle = ca_bundle(ca)
    apt = plan.apt
    pinned = [a for a in apt if "=" in a]
    if pinned and not registry:
        # Pins name the original base's versions; a stand-in carries its own suite's.
        apt = tuple(dict.fromkeys(a.split("=", 1)[0] for a in apt))
        approximate.append(
            f"the test script's apt pins ({', '.join(pinned)}) are dropped: the local stand-in "
            "base carries its own suite's versions of those packages"
        )
    rewritten = rewrite(
        dockerfile_text,
        task.original_id,
        registry=registry,
        apt=apt,
        pip=pip,
        with_ca=bool(bundle),
        apt_recommends=plan.apt_recommends,
    )
    approximate.extend(rewritten.differences)
    if task.format == "terminal-bench":
        for sources, _, _ in copy_destinations(dockerfile_text):
            hidden = [s for s in sources if s.strip("./").split("/")[0] in TB_HIDDEN]
            if hidden:
                raise ImportRefused(
                    f"{task.original_id}: the Dockerfile copies {hidden[0]} into the image: the "
                    "agent would see the hidden tests (or the solution) during its episode"
                )
    if task.env:  # the compose service's `environment:`, as its container had it
        env = " ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in task.env.items())
        rewritten = dataclasses.replace(
            rewritten,
            text=f"{rewritten.text}# termgym: docker-compose.yaml's environment\nENV {env}\n",
        )
    workdir = task.workdir or (rewritten.workdir if rewritten.workdir != "/" else "/app")
    dest = out / task_id
    staging = out / f".{task_id}.tmp{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        _copy_context(task, staging / "environment")
        (staging / "environment" / "Dockerfile").write_text(rewritten.text, encoding="utf-8")
        if bundle:
            (staging / "environment" / CA_FILE).write_bytes(bundle)
        graders = staging / "graders"
        graders.mkdir()
        if task.tests is not None and task.tests.is_dir():
            shutil.copytree(task.tests, graders / "tests", symlinks=True)  # links stay links
        (graders / "run-tests.sh").write_text(plan.script, encoding="utf-8")
        (staging / "solution").mkdir()
        solution = task.solution
        if solution is None:
            approximate.append("the original task has no solution: its oracle fails")
            solution = "#!/bin/bash\necho 'the imported task came without a solution' >&2\nexit 1\n"
        (staging / "solution" / "oracle.sh").write_text(solution, encoding="utf-8")
        (staging / "solution" / "memorized.sh").write_text(solution, encoding="utf-8")
        overlay_path = overlay or (task.root / OVERLAY_FILE)
        grading_mode = "live" if _live(task.tests, plan.script) else "clean"
        rules = ""
        if overlay_path.is_file():
            translated = _translate_overlay(task, overlay_path, staging, rewritten.text, workdir)
            rules = ", ".join(translated["rules"])
            grading_mode = translated.pop("grading", None) or grading_mode
            (staging / OVERLAY_FILE).write_text(
                yaml.safe_dump(translated, sort_keys=False), encoding="utf-8"
            )
        spec = _spec(task, plan, rewritten, workdir, grading_mode, approximate, base_note)
        if (staging / "files").is_dir():
            spec["files"] = "files"
        (staging / "task.yaml").write_text(
            yaml.safe_dump(spec, sort_keys=False, allow_unicode=True, width=100),
            encoding="utf-8",
        )
        (staging / "IMPORT-NOTES.txt").write_text(
            "\n".join([*rewritten.mappings, *notes, *approximate]) + "\n", encoding="utf-8"
        )
        shutil.rmtree(dest, ignore_errors=True)
        staging.rename(dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return Converted(
        task_id,
        dest,
        task.root,
        plan.protection,
        tuple(approximate),
        rewritten.mappings,
        rules,
        tuple(m.describe() for m in missing),
    )


def _spec(
    task: ForeignTask,
    plan: Any,
    rewritten: Any,
    workdir: str,
    grading_mode: str,
    approximate: list[str],
    base_note: str,
) -> dict[str, Any]:
    verdict = "tb-pytest" if task.format == "terminal-bench" else "harbor-reward"
    grader: dict[str, Any] = {
        "name": "tests",
        "kind": "imported-tests",
        "script": "graders/run-tests.sh",
        "verdict": verdict,
        "protection": plan.protection,
        "script_at": "/tests/run-tests.sh" if verdict == "tb-pytest" else "/tests/test.sh",
        "timeout": task.test_timeout,
    }
    if task.verifier_env:
        grader["env"] = dict(task.verifier_env)
    # Graded on the agent's whole machine, with Docker's default capabilities, as both
    # harnesses run their tasks (docs/security.md, "Snapshot grading").
    grading: dict[str, Any] = {
        "mode": grading_mode, "python": "/usr/bin/python3", "filesystem": "snapshot",
    }  # fmt: skip
    state = _state_paths(task.tests, workdir)
    if state:
        grading["state"] = state
    mapping = "; ".join(rewritten.mappings) or base_note or "the task's own base image"
    return {
        "id": task.task_id,
        "version": 1,
        "title": _title(task.instruction),
        "category": task.category or "imported",
        "instruction": task.instruction,
        "templates": False,
        "dockerfile": "environment/Dockerfile",
        "workdir": workdir,
        "graders": [grader],
        "oracle": "solution/oracle.sh",
        "memorized": "solution/memorized.sh",
        "limits": {
            "agent_timeout": task.agent_timeout,
            "grading_timeout": task.test_timeout,
            "max_steps": 500,
            "network": task.network,
            "memory_mb": task.memory_mb,
            "cpus": task.cpus,
            "disk_mb": task.disk_mb,
            "capabilities": "default",
        },
        "grading": grading,
        "provenance": {
            "format": task.format,
            "original_id": task.original_id,
            "source": str(task.root),
            "author": task.author,
            "difficulty": task.difficulty,
            "category": task.category,
            "tags": list(task.tags),
            "base_image": ", ".join(rewritten.bases),
            "image_mapping": mapping,
            "approximate": approximate,
            "protection": plan.protection,
        },
    }
