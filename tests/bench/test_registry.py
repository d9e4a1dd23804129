"""The benchmark registry: named sections, markdown tables, the docs updater."""

from __future__ import annotations

from pathlib import Path

import pytest

from termgym.bench import Row, Section, register, run_section, sections, timings_row
from termgym.bench.__main__ import main, update_docs


def bench_fixture(*, quick: bool = False) -> Section:
    row = timings_row("tiny", [0.001, 0.002, 0.003] if quick else [0.001])
    return Section("fixture", "Fixture", (row,), ("a note",))


def test_timings_row_reports_milliseconds_and_percentiles() -> None:
    row = timings_row("x", [0.001 * i for i in range(1, 101)])
    assert row == Row("x", 100, pytest.approx(50.5), pytest.approx(99.0), pytest.approx(50.5))


@pytest.fixture
def fixture_section(monkeypatch: pytest.MonkeyPatch) -> str:
    import termgym.bench

    monkeypatch.setattr(termgym.bench, "_registry", dict(termgym.bench._registry))
    register("fixture", f"{__name__}:bench_fixture")
    return "fixture"


def test_registered_sections_run_by_name(fixture_section: str) -> None:
    assert "sandbox" in sections() and fixture_section in sections()
    section = run_section("fixture", quick=True)
    assert section.rows[0].n == 3
    assert "| tiny | 3 |" in section.markdown() and "- a note" in section.markdown()


def test_update_docs_replaces_only_its_own_block(tmp_path: Path) -> None:
    doc = tmp_path / "performance.md"
    doc.write_text("# Performance\n\nintro\n\n<!-- bench:x -->\nold\n<!-- /bench:x -->\n\ntail\n")
    update_docs("x", "new table", doc)
    update_docs("y", "other", doc)
    text = doc.read_text()
    assert "old" not in text and "<!-- bench:x -->\nnew table\n<!-- /bench:x -->" in text
    assert text.index("tail") < text.index("<!-- bench:y -->") and "intro" in text


def test_unknown_section_name_is_an_error_with_a_suggestion(capsys) -> None:  # noqa: ANN001
    with pytest.raises(SystemExit):
        main(["sandbx"])
    assert "Did you mean 'sandbox'?" in capsys.readouterr().err
