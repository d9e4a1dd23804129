"""Load a task folder into a checked Task: parse task.yaml, read templates, validate both."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import pydantic
import yaml

from termgym._task_paths import SPEC_FILE
from termgym.errors import TaskSpecError, TermgymError
from termgym.kinds import GraderSpec
from termgym.overlay import (
    OVERLAY_FILE,
    Span,
    check_disjoint,
    find_spans,
    read_overlay,
    rewrite,
    rule_fields,
    task_words,
)
from termgym.tasks._solution import parse_solution
from termgym.tasks._spec import RuleSpec, RuleValue, TaskSpec
from termgym.tasks._template import TemplateError, check_blocks, format_value, placeholders, render


@dataclass(frozen=True)
class Task:
    """A loaded, validated task folder.

    Attributes:
        spec: The parsed task.yaml.
        root: The task folder.
        templates: Workspace files, path relative to the workspace -> content (bytes).
        text_files: Which of `templates` are templates (UTF-8 text, not in raw_files).
        spans: Where the overlay's rules occur (overlay.yaml), keyed as the overlay names
            files: "instruction", "files/...", "graders/...", "solution/...".
        words: Rule -> spellings of its values that the task's own texts use outside its
            occurrences (`termgym.overlay.task_words`): the task's words, not the rule.
    """

    spec: TaskSpec
    root: Path
    templates: Mapping[str, bytes] = field(default_factory=dict)
    text_files: frozenset[str] = frozenset()
    spans: tuple[Span, ...] = ()
    words: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    def spans_in(self, file: str) -> tuple[Span, ...]:
        """The overlay spans of one file (keyed as the overlay names it)."""
        return tuple(s for s in self.spans if s.file == file)

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def rules(self) -> Mapping[str, RuleSpec]:
        return self.spec.rules

    @property
    def source(self) -> Path:
        """The task.yaml file."""
        return self.root / SPEC_FILE

    @property
    def original_values(self) -> dict[str, RuleValue]:
        """Every rule's authored value."""
        return {name: rule.value for name, rule in self.spec.rules.items()}

    @property
    def surface_values(self) -> dict[str, RuleValue]:
        """Every surface value as authored (what the task's files hold unrandomized)."""
        return {name: spec.value for name, spec in self.spec.surface.items()}

    @property
    def image(self) -> str | None:
        """The image named in task.yaml (None when the task builds from a Dockerfile)."""
        return self.spec.image

    def path(self, relative: str) -> Path:
        """A path inside the task folder."""
        return self.root / relative


def _fail(source: Path, where: str, message: str) -> TaskSpecError:
    return TaskSpecError(f"{source}: {where}: {message}")


def _pydantic_message(source: Path, error: pydantic.ValidationError) -> TaskSpecError:
    lines = []
    for item in error.errors():
        loc = ".".join(str(part) for part in item["loc"]) or "(top level)"
        message = item["msg"].removeprefix("Value error, ")
        found = item.get("input")
        if item["type"] in ("missing",):
            message = "required field is missing"
        elif item["type"] == "extra_forbidden":
            message = "unknown field (not part of the task format)"
        elif item["type"] not in ("value_error",) and not isinstance(found, dict):
            message = f"{message}; found {found!r}"
        lines.append(f"field '{loc}': {message}")
    return TaskSpecError(f"{source}: " + "\n  ".join(lines))


def _merge_overlay(source: Path, data: dict[str, object]) -> None:
    """Add the rules of overlay.yaml beside `source` to the task.yaml fields, and the
    variants they make possible (or those the overlay lists)."""
    path = source.with_name(OVERLAY_FILE)
    if not path.is_file():
        return
    overlay = read_overlay(path)
    rules = data.setdefault("rules", {})
    if not isinstance(rules, dict):
        return  # TaskSpec validation reports it
    for name, rule in overlay.rules.items():
        if name in rules:
            raise TaskSpecError(
                f"{path}: rule {name!r}: expected a name task.yaml does not already declare, "
                "found it in both"
            )
        rules[name] = {**rule_fields(name, rule), "overlay": True}
    if overlay.grading is not None:
        grading = data.setdefault("grading", {})
        if isinstance(grading, dict):
            grading["mode"] = overlay.grading
    variants = data.get("variants") or ["original"]
    if not isinstance(variants, list):
        return
    wanted = overlay.variants
    if wanted is None:
        wanted = ["original", "contradicted", "withheld", "sampled"]
        if not any(r.withhold for r in overlay.rules.values()):
            wanted.remove("withheld")
    data["variants"] = list(dict.fromkeys([*variants, *wanted]))


def _read_spec(source: Path) -> TaskSpec:
    if not source.is_file():
        raise TaskSpecError(f"{source}: expected a task spec file, found none")
    try:
        data = yaml.safe_load(source.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise TaskSpecError(f"{source}: expected valid YAML, found: {exc}") from None
    if not isinstance(data, dict):
        raise TaskSpecError(f"{source}: expected a mapping of fields, found {type(data).__name__}")
    _merge_overlay(source, data)
    try:
        return TaskSpec.model_validate(data)
    except pydantic.ValidationError as exc:
        raise _pydantic_message(source, exc) from None


def _read_files(root: Path, spec: TaskSpec, source: Path) -> tuple[dict[str, bytes], set[str]]:
    folder = root / spec.files
    if not folder.exists():
        if "files" in spec.model_fields_set:
            raise _fail(source, "field 'files'", f"expected a folder {spec.files}/, found none")
        return {}, set()
    if not folder.is_dir():
        raise _fail(source, "field 'files'", f"expected a folder, found a file {spec.files}")
    templates: dict[str, bytes] = {}
    text: set[str] = set()
    for path in sorted(folder.rglob("*")):
        if not path.is_file():
            continue
        rel = path.relative_to(folder).as_posix()
        templates[rel] = path.read_bytes()
        if spec.templates and any(fnmatch.fnmatch(rel, pattern) for pattern in spec.raw_files):
            continue
        try:
            templates[rel].decode("utf-8")
        except UnicodeDecodeError:
            continue
        text.add(rel)
    return templates, text


def _visible_texts(task: Task) -> dict[str, str]:
    """Every template the agent sees, keyed as stated_in names them."""
    texts = {"instruction": task.spec.instruction}
    for rel in sorted(task.text_files):
        texts[f"{task.spec.files}/{rel}"] = task.templates[rel].decode("utf-8")
    return texts


def _check_templates(task: Task, source: Path) -> None:
    if not task.spec.templates:
        if task.spec.surface:
            raise _fail(source, "field 'surface'", "expected templates (surface values are "
                        "placeholders), found `templates: false`")  # fmt: skip
        return  # shown verbatim: nothing in them is a placeholder
    rules = {**task.spec.rules, **task.spec.surface}
    for rel in sorted(task.templates):
        unknown = sorted(placeholders(rel) - set(task.spec.surface))
        if unknown:
            raise _fail(
                source,
                f"{task.spec.files}/{rel}",
                f"a placeholder in a file's path names no surface value: expected one of "
                f"{sorted(task.spec.surface)}, found {{{{ {unknown[0]} }}}}",
            )
    for where, text in _visible_texts(task).items():
        try:
            check_blocks(text)
        except TemplateError as exc:
            raise _fail(source, where, f"template: {exc}") from None
        for name in sorted(placeholders(text) - set(rules)):
            hint = _did_you_mean(name, rules)
            raise _fail(
                source,
                where,
                f"placeholder {{{{ {name} }}}} names no rule: expected one "
                f"of the declared rules {sorted(rules)}{hint}",
            )


def _did_you_mean(name: str, options: Mapping[str, object] | list[str]) -> str:
    import difflib

    close = difflib.get_close_matches(name, list(options), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _check_rules(task: Task, source: Path) -> None:
    texts = _visible_texts(task)
    files_prefix = task.spec.files.rstrip("/") + "/"
    for name, rule in task.spec.rules.items():
        if rule.overlay:
            continue  # stated by literal occurrences, resolved by _resolve_overlay
        where = f"field 'rules.{name}.stated_in'"
        for place in rule.stated_in:
            if place != "instruction":
                if not place.startswith(files_prefix):
                    raise _fail(
                        source,
                        where,
                        f"expected 'instruction' or a path under "
                        f"{files_prefix} (what the agent sees), found {place!r}",
                    )
                if not task.path(place).is_file():
                    raise _fail(source, where, f"expected an existing file, found no {place}")
                if place not in texts:
                    raise _fail(source, where, f"expected a text file, {place} is binary or raw")
            if name not in placeholders(texts[place]):
                raise _fail(
                    source,
                    where,
                    f"{place} should state the rule through "
                    f"{{{{ {name} }}}}, found no placeholder of it there",
                )
        used = any(name in placeholders(text) for text in texts.values())
        if rule.contradict is not None and "contradicted" in task.spec.variants and not used:
            raise _fail(
                source,
                f"field 'rules.{name}.contradict'",
                "a contradicted rule must be "
                f"stated where the agent sees it, found no {{{{ {name} }}}} in the "
                "instruction or the workspace files",
            )


def _name_words(name: str) -> list[str]:
    return [w for w in re.split(r"[_\W]+", name.lower()) if len(w) >= 3]


def withheld_leaks(task: Task) -> list[str]:
    """Places where the withheld variant still states a withheld rule's original value.

    After rendering the withheld variant, each withheld rule's `stated_in` places must not
    hold its original value as a whole word. Values of three characters or more are searched
    everywhere in those places; shorter ones (like `2`) only on lines that also name the rule
    (a word of its name, e.g. "hour" for run_hour); bool rules are not searched, since
    true/false are too common (their placeholder lines and blocks are dropped all the same).
    """
    names = [n for n, r in task.spec.rules.items() if r.withhold]
    values = {**task.original_values, **task.surface_values}
    texts = _visible_texts(task)
    leaks = _overlay_leaks(task, names)
    for name in names:
        rule = task.spec.rules[name]
        if rule.type == "bool" or rule.overlay:
            continue
        text_value = format_value(rule.value)
        pattern = re.compile(rf"(?<![\w.]){re.escape(text_value)}(?![\w]|\.\d)")
        words = _name_words(name) if len(text_value) < 3 else []
        for place in rule.stated_in:
            rendered = render(texts[place], values, withheld=names)
            for number, line in enumerate(rendered.splitlines(), 1):
                if not pattern.search(line):
                    continue
                if len(text_value) < 3 and not any(w in line.lower() for w in words):
                    continue
                leaks.append(
                    f"{place} line {number} still states {name}'s value "
                    f"{text_value!r}: {line.strip()!r}"
                )
    return leaks


def audit_hints(task: Task) -> dict[str, dict[str, list[str]]]:
    """What the trace audit needs of the task beside the episode, for a recording's header:
    `task_words` (rule -> spellings of its values that are the task's own words) and
    `not_evidence` (rule -> workdir globs of files whose values of it are data), each only
    when the task has any."""
    hints: dict[str, dict[str, list[str]]] = {}
    if task.words:
        hints["task_words"] = {rule: list(words) for rule, words in task.words.items()}
    declared = {n: list(r.not_evidence) for n, r in task.spec.rules.items() if r.not_evidence}
    if declared:
        hints["not_evidence"] = declared
    return hints


def _overlay_leaks(task: Task, withheld: list[str]) -> list[str]:
    """Lines that held a withheld overlay rule's pattern and still state its value."""
    import dataclasses

    leaks = []
    prefix = task.spec.files.rstrip("/") + "/"
    for span in task.spans:
        if span.rule not in withheld:
            continue
        if not (span.file == "instruction" or span.file.startswith(prefix)):
            continue
        text = _raw_text(task, span.file)
        start = text.rfind("\n", 0, span.pattern_start) + 1
        end = text.find("\n", span.pattern_end)
        end = len(text) if end < 0 else end
        local = [
            dataclasses.replace(
                s,
                start=s.start - start,
                end=s.end - start,
                pattern_start=s.pattern_start - start,
                pattern_end=s.pattern_end - start,
            )
            for s in task.spans_in(span.file)
            if s.pattern_start >= start and s.pattern_end <= end
        ]
        shown = rewrite(text[start:end], local, task.original_values, set(withheld))
        value = format_value(task.original_values[span.rule])
        if re.search(rf"(?<![\w.]){re.escape(value)}(?![\w]|\.\d)", shown):
            number = text.count("\n", 0, start) + 1
            leaks.append(
                f"{span.file} line {number} still states {span.rule}'s value {value!r} "
                f"once its pattern is dropped: {shown.strip()!r}"
            )
    return leaks


def _raw_text(task: Task, file: str) -> str:
    """The text of a file as the overlay names it, before any rewriting."""
    if file == "instruction":
        return task.spec.instruction
    prefix = task.spec.files.rstrip("/") + "/"
    if file.startswith(prefix) and file[len(prefix) :] in task.templates:
        return task.templates[file[len(prefix) :]].decode("utf-8")
    return task.path(file).read_text(encoding="utf-8")


def _overlay_texts(task: Task) -> dict[str, str]:
    """Every text file an overlay may name: what the agent sees, the hidden graders and the
    solutions."""
    texts = {"instruction": task.spec.instruction}
    prefix = task.spec.files.rstrip("/") + "/"
    for rel in sorted(task.text_files):
        texts[prefix + rel] = task.templates[rel].decode("utf-8")
    for folder in ("graders", "solution"):
        base = task.root / folder
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            if path.is_file():
                try:
                    texts[path.relative_to(task.root).as_posix()] = path.read_text("utf-8")
                except UnicodeDecodeError:
                    continue
    return texts


def _resolve_overlay(task: Task, source: Path) -> Task:
    """Resolve the overlay's occurrences to spans; fill each rule's `stated_in` from them;
    hand the spans in graders/ to the graders that rewrite their files per rule set."""
    path = source.with_name(OVERLAY_FILE)
    if not path.is_file():
        return task
    import dataclasses

    overlay = read_overlay(path)
    texts = _overlay_texts(task)
    spans: list[Span] = []
    for name, rule in overlay.rules.items():
        spans.extend(find_spans(name, rule, texts, str(path)))
    check_disjoint(spans, str(path))
    prefix = task.spec.files.rstrip("/") + "/"
    rules = dict(task.spec.rules)
    for name in overlay.rules:
        visible = sorted(
            {
                s.file
                for s in spans
                if s.rule == name and (s.file == "instruction" or s.file.startswith(prefix))
            }
        )
        if not visible and "contradicted" in task.spec.variants:
            raise TaskSpecError(
                f"{path}: rule {name!r}: expected at least one occurrence in what the agent "
                f"sees (the instruction or {prefix}...), found none: a contradicted episode "
                "would enforce a value the agent is never told"
            )
        rules[name] = rules[name].model_copy(update={"stated_in": visible})
    graders = _graders_with_spans(task, spans, path)
    spec = task.spec.model_copy(update={"rules": rules, "graders": graders})
    words = {
        name: found
        for name, rule in overlay.rules.items()
        if (found := task_words(name, rule, texts, spans))
    }
    return dataclasses.replace(task, spec=spec, spans=tuple(spans), words=MappingProxyType(words))


def _graders_with_spans(task: Task, spans: list[Span], path: Path) -> list[GraderSpec]:
    from termgym.kinds import make_grader

    hidden = [s for s in spans if s.file.startswith("graders/")]
    if not hidden:
        return list(task.spec.graders)
    out = []
    taken = False
    for spec in task.spec.graders:
        try:
            kind = make_grader(spec.kind)
        except TermgymError:
            kind = None  # _check_graders names the unknown kind
        if getattr(kind, "rewrites_files", False):
            rewrite_param = [
                {
                    "file": s.file.removeprefix("graders/"),
                    "rule": s.rule,
                    "start": s.start,
                    "end": s.end,
                    **({"texts": dict(s.texts)} if s.texts else {}),
                }
                for s in hidden
            ]
            spec = GraderSpec.model_validate({**spec.model_dump(), "rewrite": rewrite_param})
            taken = True
        out.append(spec)
    if not taken:
        raise TaskSpecError(
            f"{path}: {hidden[0].file}: expected a grader that rewrites its files per rule "
            "set (kind imported-tests) to own this occurrence, found only kinds "
            f"{sorted({g.kind for g in task.spec.graders})}: graders of those kinds read "
            "the rules from `rules` / $TERMGYM_RULES instead"
        )
    return out


def _check_graders(task: Task, source: Path) -> None:
    from termgym.kinds import make_grader

    for field_name, specs in (
        ("graders", task.spec.graders),
        ("grader_pool", task.spec.grader_pool),
    ):
        for index, spec in enumerate(specs):
            where = f"field '{field_name}[{index}]' ({spec.name})"
            _check_param_placeholders(task, source, where, spec.params)
            try:
                make_grader(spec.kind).job(spec, task.root)
            except TermgymError as exc:
                raise _fail(source, where, str(exc)) from None
            except (ValueError, pydantic.ValidationError) as exc:
                raise _fail(source, where, f"kind {spec.kind}: {exc}") from None


def _check_param_placeholders(task: Task, source: Path, where: str, value: object) -> None:
    """Every `{{ name }}` in a grader's parameters names a declared rule (else it would be
    compared as literal text, and a negative check would pass vacuously)."""
    if isinstance(value, str):
        unknown = sorted(placeholders(value) - set(task.spec.rules))
        if unknown:
            raise _fail(
                source,
                where,
                f"expected placeholders naming declared rules {sorted(task.spec.rules)}, "
                f"found {{{{ {unknown[0]} }}}} in {value!r}",
            )
    elif isinstance(value, list):
        for item in value:
            _check_param_placeholders(task, source, where, item)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_param_placeholders(task, source, f"{where} param {key!r}", item)


def _check_impossible(task: Task, source: Path) -> None:
    """The impossible variant's `shown_in` files are workspace templates stating its rule."""
    spec = task.spec.impossible
    if spec is None:
        return
    texts = _visible_texts(task)
    prefix = task.spec.files.rstrip("/") + "/"
    for place in spec.shown_in:
        where = "field 'impossible.shown_in'"
        if not place.startswith(prefix) or place not in texts:
            raise _fail(
                source,
                where,
                f"expected a text file under {prefix} (what the agent sees), found {place!r}",
            )
        if spec.rule not in placeholders(texts[place]):
            raise _fail(
                source,
                where,
                f"{place} should show the enforced value through {{{{ {spec.rule} }}}}, "
                "found no placeholder of it there",
            )


def _check_paths(task: Task, source: Path) -> None:
    spec = task.spec
    if not task.path(spec.oracle).is_file():
        raise _fail(
            source,
            "field 'oracle'",
            f"expected an oracle solution at {spec.oracle}, found no such file",
        )
    if spec.memorized is not None and not task.path(spec.memorized).is_file():
        raise _fail(
            source,
            "field 'memorized'",
            f"expected a memorized solution at {spec.memorized}, found no such file",
        )
    if spec.cheater is not None and not task.path(spec.cheater).is_file():
        raise _fail(
            source,
            "field 'cheater'",
            f"expected a cheater solution at {spec.cheater}, found no such file",
        )
    named = (("oracle", spec.oracle), ("memorized", spec.memorized), ("cheater", spec.cheater))
    for name, script in named:
        if script is not None:  # its steps, as the reference agents will take them
            text = task.path(script).read_text("utf-8", "replace")
            parse_solution(text, f"{source}: field '{name}' ({script})")
    if spec.dockerfile is not None and not task.path(spec.dockerfile).is_file():
        raise _fail(
            source,
            "field 'dockerfile'",
            f"expected a Dockerfile at {spec.dockerfile}, found no such file",
        )


def load_task(path: str | Path) -> Task:
    """Load and validate a task folder (or its task.yaml).

    Raises:
        TaskSpecError: the spec is malformed; the message names the file, the field and what
            was expected.
    """
    path = Path(path)
    root = path.parent if path.name == SPEC_FILE else path
    source = root / SPEC_FILE
    spec = _read_spec(source)
    if spec.id != root.name:
        raise _fail(
            source, "field 'id'", f"expected the folder name {root.name!r}, found {spec.id!r}"
        )
    templates, text = _read_files(root, spec, source)
    task = Task(
        spec=spec, root=root, templates=MappingProxyType(templates), text_files=frozenset(text)
    )
    _check_paths(task, source)
    task = _resolve_overlay(task, source)
    _check_templates(task, source)
    _check_rules(task, source)
    _check_graders(task, source)
    _check_impossible(task, source)
    if "withheld" in spec.variants:
        leaks = withheld_leaks(task)
        if leaks:
            raise _fail(
                source,
                "variant 'withheld'",
                "expected the withheld rules to be gone "
                "from what the agent sees, found: " + "; ".join(leaks),
            )
    return task


__all__ = ["SPEC_FILE", "Task", "audit_hints", "load_task", "withheld_leaks", "GraderSpec"]
