"""What counts as writing a rule value: tokens, the task's own words, and data declared not
evidence. The false leak seen on Terminal-Bench's constraints-scheduling (a solution's
untouched "Scheduled team planning meeting" taken, ignoring case, for the title `Team
Planning Meeting`) and the blind spot of a limit that the task's data also holds."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from termgym._spelling import spellings
from termgym.analysis.audit import EpisodeTrace, Written, audit_trace, trace_from_log
from termgym.importing import import_tasks
from termgym.recording import (
    EpisodeEnd,
    EpisodeHeader,
    EpisodeWriter,
    StepRecord,
    read_episode,
)
from termgym.tasks import audit_hints, load_task

TB2 = Path(__file__).parents[1] / "fixtures" / "tb2"


def _spelled(value: object, text: str, *others: str) -> list[str]:
    return [s.text for s in spellings(value, text, others)]


def test_a_number_is_spelled_by_any_token_of_its_value() -> None:
    for text in ("250", "250.00", "250EUR", "€250", "P03,250", "(250)", "limit=250."):
        assert _spelled(250, text) != [], text
    for text in ("1250", "x250", "250.5", "v2.250", "250_000", "2500"):
        assert _spelled(250, text) == [], text
    assert _spelled(7, "7 days") == []  # too small to attribute


def test_a_string_is_spelled_as_a_whole_token_ignoring_case_but_the_tasks_own_words() -> None:
    title = "Team Planning Meeting"
    assert _spelled(title, "SUMMARY:Team Planning Meeting") == [title]
    assert _spelled(title, "Scheduled team planning meeting") == ["team planning meeting"]
    assert _spelled(title, "Scheduled team planning meeting", "team planning meeting") == []
    assert _spelled(title, "SUMMARY:Team Planning Meeting", "Team Planning Meeting") == [title]
    assert _spelled("Sunday", "sundays") == [] and _spelled("Sunday", "on sunday.") == ["sunday"]


RULES = {"title": ("Team Sync Meeting", "Team Planning Meeting")}
WORDS = {"title": ("team planning meeting",)}
SOLUTION = "DESCRIPTION:Scheduled team planning meeting\nSUMMARY:Team Sync Meeting\n"


def _trace(text: str, words=WORDS) -> EpisodeTrace:
    return EpisodeTrace(
        episode_id="ep",
        visible=((0, 'Schedule a 1-hour "Team Sync Meeting" on Friday.'),),
        written=(Written(0, "action", text),),
        rules=RULES,
        enforced={"title": "Team Sync Meeting"},
        variant="contradicted",
        task_words=words,
    )


def test_an_untouched_line_of_the_tasks_solution_is_no_leak() -> None:
    assert audit_trace(_trace(SOLUTION)) == []
    # the original title as the task spells it is still a leak
    hits = audit_trace(_trace("SUMMARY:Team Planning Meeting"))
    assert [(h.kind, h.detail) for h in hits] == [("leak", "title=Team Planning Meeting")]
    # without the task's words, ignoring case took the description for the title
    assert [h.detail for h in audit_trace(_trace(SOLUTION, words={}))] == [
        "title=Team Planning Meeting"
    ]


def _meeting_task(tmp_path: Path) -> Path:
    """A Terminal-Bench 2.0 task (flagged-payments' layout) whose meeting title is a rule, its
    solution keeping a lowercase description line the overlay leaves alone, as
    constraints-scheduling's does."""
    source = tmp_path / "src" / "team-meeting"
    shutil.copytree(TB2 / "tasks" / "flagged-payments", source)
    (source / "environment" / "payments.csv").write_text("id\n")
    (source / "instruction.md").write_text(
        'Add a 1-hour "Team Planning Meeting" to /app/calendar.ics on Friday at 10:00.\n'
    )
    (source / "solution" / "solve.sh").write_text(
        "#!/bin/bash\ncat > /app/calendar.ics <<'ICS'\nBEGIN:VEVENT\n"
        "SUMMARY:Team Planning Meeting\nDESCRIPTION:Scheduled team planning meeting\n"
        "END:VEVENT\nICS\n"
    )
    (source / "tests" / "test_outputs.py").write_text(
        "from pathlib import Path\n\n\ndef test_the_meeting_is_there():\n"
        '    assert "SUMMARY:Team Planning Meeting" in Path("/app/calendar.ics").read_text()\n'
    )
    overlays = tmp_path / "overlays"
    overlays.mkdir()
    (overlays / "team-meeting.yaml").write_text(
        "rules:\n  title:\n    original: Team Planning Meeting\n"
        "    choices: [Team Sync Meeting, Quarterly Planning Meeting]\n    occurs:\n"
        "      - {file: instruction, pattern: 'a 1-hour \"Team Planning Meeting\"', "
        "withheld: a 1-hour team meeting}\n"
        "      - {file: tests/test_outputs.py, pattern: '\"SUMMARY:Team Planning Meeting\" in'}\n"
        "      - {file: solution/solve.sh, pattern: 'SUMMARY:Team Planning Meeting'}\n"
    )
    report = import_tasks([source], tmp_path / "out", "harbor", overlays=overlays)
    assert not report.refused, report.refused
    return tmp_path / "out" / "team-meeting"


def test_an_overlay_task_knows_its_words_and_its_episodes_carry_them(tmp_path: Path) -> None:
    task = load_task(_meeting_task(tmp_path))
    assert dict(task.words) == {"title": ("team planning meeting",)}
    hints = audit_hints(task)
    assert hints == {"task_words": {"title": ["team planning meeting"]}}
    # an episode recorded with them: the oracle's solution holds the untouched line
    log = _recorded(
        tmp_path / "run", SOLUTION, extra=hints, enforced={"title": "Team Sync Meeting"},
        original={"title": "Team Planning Meeting"},
        instruction='Add a 1-hour "Team Sync Meeting" to /app/calendar.ics on Friday at 10:00.',
    )  # fmt: skip
    trace = trace_from_log(log)
    assert trace.task_words == {"title": ("team planning meeting",)}
    assert audit_trace(trace) == []


def _recorded(
    run_dir: Path,
    action: str,
    *,
    extra: dict,
    enforced: dict,
    original: dict,
    visible_files: dict | None = None,
    variant: str = "contradicted",
    instruction: str = "Flag the claims over the limit.",
):
    header = EpisodeHeader(
        episode_id="ep-0", task="t", task_version=1, variant=variant,
        rules_visible=dict(enforced) if variant != "withheld" else {},
        rules_enforced=dict(enforced), seed=1, agent="memorizer", backend="bwrap",
        versions={}, started=0.0, run_id="r",
        extra={"instruction": instruction,
               "visible_files": visible_files or {}, **extra},
    )  # fmt: skip
    writer = EpisodeWriter(run_dir, header)
    writer.step(StepRecord(index=0, mode="command", action=action, output="", exit_code=0,
                           duration=0.01, t=0.0))  # fmt: skip
    verdicts = {
        variant: {"rules": dict(enforced), "passed": True, "score": 1.0},
        "original": {"rules": dict(original), "passed": False, "score": 0.0},
    }
    writer.end(EpisodeEnd(reward=1.0, terminated=True, truncated=False, verdicts=verdicts,
                          episode_class="both", extra={"transcript": []}))  # fmt: skip
    writer.close()
    return read_episode(writer.jsonl_path)


@pytest.mark.parametrize("declared", [False, True])
def test_a_limit_the_data_also_holds_is_seen_only_where_it_is_not_declared_data(
    tmp_path: Path, declared: bool
) -> None:
    """A limit of 250 and a claim of 250.00: undeclared, the audit takes the limit for shown
    and cannot see it leak; declared not evidence, the claims show nothing of it."""
    extra = {"not_evidence": {"limit": ["data/*.csv"]}} if declared else {}
    log = _recorded(
        tmp_path / str(declared), "awk -F, '$2 > 250' data/claims.csv", extra=extra,
        enforced={"limit": 250}, original={"limit": 250}, variant="withheld",
        visible_files={"data/claims.csv": "id,amount\nC1,120.00\nC2,250.00\n"},
    )  # fmt: skip
    hits = audit_trace(trace_from_log(log))
    assert [(h.kind, h.detail) for h in hits] == ([("leak", "limit=250")] if declared else [])
