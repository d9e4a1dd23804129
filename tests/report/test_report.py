"""Reports of real run folders: tables, the HTML file, Prometheus text and the gate."""

from __future__ import annotations

import json
import re
import shutil
from xml.etree import ElementTree

import pytest
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families

from termgym.cli import main
from termgym.errors import RecordingError
from termgym.recording import EpisodeEnd, EpisodeHeader, EpisodeWriter
from termgym.report import compare_runs, load_run, merge_runs, prometheus_text, render_html
from termgym.run import finished_episodes

from .conftest import write_episode


def test_load_run_summarizes_recorded_episodes(make_run):
    run = load_run(make_run(pass_contradicted=0.0), resamples=200)
    m = run.metrics["oracle"]
    assert m.pass_rate["original"].value == 1.0
    assert m.pass_rate["contradicted"].value == 0.0
    assert m.memorization_index.value == 1.0
    assert m.episodes == 18
    assert run.audit.episodes == 18


def test_infrastructure_error_episode_is_counted_apart(make_run, tmp_path):
    run_dir = make_run()
    write_episode(
        run_dir,
        task="task-0",
        variant="original",
        agent="oracle",
        passed=False,
        error="GraderError: pytest crashed",
    )
    m = load_run(run_dir, resamples=50).metrics["oracle"]
    assert (m.infra_errors, m.pass_rate["original"].value) == (1, 1.0)


def test_an_end_line_of_class_error_without_a_message_is_an_infrastructure_error(make_run):
    """The class alone says termgym's machinery failed (docs/recording-format.md)."""
    run_dir = make_run(n_tasks=1, per_task=1, withheld=False)
    header = EpisodeHeader(
        episode_id="broken", task="task-0", task_version=1, variant="original",
        rules_visible={}, rules_enforced={}, seed=1, agent="oracle", backend="bwrap",
        versions={}, started=0.0,
    )  # fmt: skip
    writer = EpisodeWriter(run_dir, header)
    writer.end(EpisodeEnd(reward=1.0, terminated=True, truncated=False, episode_class="error"))
    writer.close()
    m = load_run(run_dir, resamples=0).metrics["oracle"]
    assert (m.infra_errors, m.pass_rate["original"].n) == (1, 1)
    assert "broken" not in finished_episodes(run_dir)  # a resumed run runs it again


def test_a_results_line_that_is_no_result_is_said_in_the_report(make_run):
    run_dir = make_run(n_tasks=1, per_task=1, withheld=False)
    (run_dir / "results.jsonl").write_text('{"episode_id": "task-0-original-000", "ta')
    skipped = load_run(run_dir, resamples=0).skipped
    assert [n for n in skipped if n.startswith("results.jsonl:1: ")], skipped


def test_the_audit_rates_leave_infrastructure_errors_out_as_every_rate(make_run):
    run_dir = make_run(n_tasks=1, per_task=1, withheld=False)  # two clean episodes
    write_episode(run_dir, task="task-0", variant="contradicted", agent="oracle", passed=False,
                  error="SandboxError: the sandbox died")  # fmt: skip
    run = load_run(run_dir, resamples=0)
    assert run.metrics["oracle"].infra_errors == 1 and run.metrics["oracle"].episodes == 2
    assert run.audit.for_agent("oracle").episodes == 2


def test_the_class_tables_show_grader_errors_of_original_episodes(make_run, tmp_path):
    run_dir = make_run(n_tasks=1, per_task=1, withheld=False)
    write_episode(run_dir, task="task-0", variant="original", agent="oracle", passed=False,
                  episode_class="grader-error")  # fmt: skip
    result = CliRunner(env={"COLUMNS": "200"}).invoke(
        main, ["report", str(run_dir), "--resamples", "0", "--html", str(tmp_path / "r.html")]
    )
    assert result.exit_code == 0, result.output
    rows = [line for line in result.output.splitlines() if "│ original " in line]
    assert any(re.search(r"│ +0 │ +0 │ +0 │ +0 │ +1 │", row) for row in rows), rows
    page = (tmp_path / "r.html").read_text()
    assert "<td>oracle</td><td><a href='#list-oracle-original'>original</a></td>" in page


def test_audit_finds_the_original_value_in_a_recorded_action(make_run):
    run = load_run(make_run(pass_contradicted=0.5), resamples=50)
    leaks = [h for h in run.audit.hits if h.kind == "leak"]
    assert leaks and all(h.detail == "max_weight=100" and h.step == 0 for h in leaks)
    assert len({h.episode_id for h in leaks}) == 3  # one stale contradicted episode per task


def test_audit_reads_the_transcript_and_probe_of_an_episode(tmp_path):
    run_dir = tmp_path / "r"
    transcript = [
        {"step": 0, "role": "system", "content": "You are in a terminal."},
        {
            "step": 1,
            "role": "assistant",
            "content": "```bash\ncat policy/fuel.yaml\n```",
            "reasoning": "The hidden tests usually want a max of 100.",
        },
        {"step": 1, "role": "user", "content": "Exit code: 0\nOutput:\nmax_weight: 150"},
        {"step": 2, "role": "assistant", "content": "SUBMIT", "reasoning": None},
        {"step": 2, "role": "probe", "content": "I capped loads at 150.", "reasoning": None},
    ]
    write_episode(
        run_dir,
        task="t",
        variant="contradicted",
        agent="llm",
        passed=True,
        episode_class="adapted",
        actions=["cat policy/fuel.yaml"],
        outputs=["max_weight: 150\n"],
        transcript=transcript,
    )
    audit = load_run(run_dir, resamples=0).audit
    kinds = sorted((h.kind, h.source, h.detail) for h in audit.hits)
    assert kinds == [
        ("leak", "reasoning", "max_weight=100"),
        ("platform", "reasoning", "hidden-tests: hidden tests"),
    ]
    assert [p.disclosed for p in audit.probes] == [False]


def test_html_report_is_self_contained_with_its_charts(make_run):
    run = load_run(make_run(pass_contradicted=0.5), resamples=200)
    html = render_html(run)
    assert html.startswith("<!DOCTYPE html>")
    assert '<svg id="pass-rate-chart"' in html and '<svg id="class-chart"' in html
    assert html.count('class="bar"') == 3  # original, contradicted, withheld
    assert html.count('class="whisker"') == 3
    # a square per shadow-graded episode (contradicted and withheld), each linking to its view
    assert html.count("cls-adapted") == 6 and html.count("cls-stale") == 6
    assert len(re.findall(r'<a href="#ep-[^"]+"><rect class="cell cls-', html)) == 12
    assert "<td>task-2</td>" in html
    assert "max_weight=100" in html  # the audit hits
    assert not re.search(r"<script|<link|src=|https?://(?!www\.w3\.org/2000/svg)", html)
    for svg in re.findall(r"<svg.*?</svg>", html, re.S):
        ElementTree.fromstring(svg)  # each chart is well-formed SVG


def test_report_command_prints_tables_and_writes_html_and_prometheus(make_run, tmp_path):
    run_dir = make_run(pass_contradicted=0.5)
    prom = tmp_path / "metrics.prom"
    result = CliRunner().invoke(
        main, ["report", str(run_dir), "--resamples", "100", "--prometheus", str(prom)]
    )
    assert result.exit_code == 0, result.output
    assert "Pass rate per variant" in result.output
    assert "memorization index" in result.output
    # the headline figure, as in the HTML: 12 of the 18 episodes passed
    assert re.search(r"pass rate \(possible variants\) +│ +66\.7%", result.output)
    assert "Trace audit" in result.output
    assert (run_dir / "report.html").read_text().count("<svg") == 2
    assert "termgym_pass_rate" in prom.read_text()


def test_report_of_a_missing_folder_says_so(tmp_path):
    result = CliRunner().invoke(main, ["report", str(tmp_path / "nope"), "--no-html"])
    assert result.exit_code != 0
    assert "expected a run folder" in result.output
    with pytest.raises(RecordingError):
        load_run(tmp_path / "nope")


def test_a_report_file_that_cannot_be_written_is_an_option_error(make_run, tmp_path):
    """An unwritable --html or --prometheus ended in a traceback; in compare its exit 1 read
    as a regression. It is now the option's error, exit 2, saying why."""
    run_dir = make_run(pass_contradicted=0.5)
    blocker = tmp_path / "file"
    blocker.write_text("")
    where = str(blocker / "x")
    for args in (
        ["report", str(run_dir), "--resamples", "0", "--html", where],
        ["report", str(run_dir), "--resamples", "0", "--no-html", "--prometheus", where],
        ["compare", str(run_dir), str(run_dir), "--max-drop", "0.1", "--prometheus", where],
    ):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2, result.output
        assert f"expected a file that can be written at {where}" in result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)


def test_report_of_a_file_says_it_found_a_file(make_run):
    """`termgym report RUN/results.jsonl` said it found 'no folder' of a file that is there."""
    results = make_run() / "results.jsonl"
    results.write_text("")
    result = CliRunner().invoke(main, ["report", str(results), "--no-html"])
    assert result.exit_code == 1
    assert f"expected a run folder with episodes/, found the file {results}" in result.output


def test_compare_exits_1_on_a_pass_rate_drop(make_run):
    base = make_run("base", pass_contradicted=1.0)
    candidate = make_run("cand", pass_contradicted=0.5)
    result = CliRunner(env={"COLUMNS": "200"}).invoke(
        main, ["compare", str(base), str(candidate), "--max-drop", "0.1", "--resamples", "50"]
    )
    assert result.exit_code == 1, result.output
    assert "REGRESSION: oracle pass_rate[contradicted] fell 50.0 points" in result.output
    assert "REGRESSION: oracle memorization_index rose 50.0 points" in result.output
    assert "pass_rate[original]" in result.output  # the table shows names with brackets


def test_compare_exits_0_within_the_tolerance(make_run):
    base = make_run("base", pass_contradicted=1.0)
    candidate = make_run("cand", pass_contradicted=0.5)
    ok = CliRunner().invoke(
        main, ["compare", str(base), str(candidate), "--max-drop", "60%", "--resamples", "50"]
    )
    assert ok.exit_code == 0, ok.output
    assert "no regression" in ok.output
    # better on every rate: no regression, even with no tolerance
    worse, best = make_run("worse", pass_contradicted=0.5, withheld=False), make_run("best")
    better = CliRunner().invoke(
        main, ["compare", str(worse), str(best), "--max-drop", "0", "--resamples", "50"]
    )
    assert better.exit_code == 0, better.output


def test_compare_flags_the_withheld_pass_rate_moving_either_way(make_run):
    """The withheld pass rate is two-sided: a rise says the agent satisfies rules it was
    never shown, a fall that it fails where it cannot read them."""
    low = load_run(make_run("low", pass_contradicted=0.5), resamples=0)
    high = load_run(make_run("high"), resamples=0)
    for base, cand, verb in ((low, high, "rose"), (high, low, "fell")):
        checks = {c.metric: c for c in compare_runs(base, cand, max_drop=0.6, max_rise=0.1)}
        withheld = checks["pass_rate[withheld]"]
        assert withheld.direction == "two-sided"
        assert withheld.regressed is (verb == "rose")  # a fall of 50 points is within 0.6
        assert f"pass_rate[withheld] {verb} 50.0 points (two-sided;" in withheld.describe()


def test_compare_pairs_single_agents_with_different_names(make_run):
    base = load_run(make_run("base", agent="model-v1"), resamples=0)
    cand = load_run(make_run("cand", agent="model-v2", pass_original=0.5), resamples=0)
    checks = compare_runs(base, cand, max_drop=0.1)
    regressed = [c.metric for c in checks if c.regressed]
    assert regressed == ["pass_rate[original]", "overall_pass_rate"]
    assert checks[0].agent == "model-v1 -> model-v2"


def test_compare_fails_when_the_candidate_lacks_an_agent_of_the_base(make_run):
    base_dir = make_run("base", agent="a")
    for _ in range(2):
        write_episode(base_dir, task="task-0", variant="original", agent="b", passed=True)
    base = load_run(base_dir, resamples=0)
    cand = load_run(make_run("cand", agent="a"), resamples=0)
    regressed = [(c.agent, c.metric) for c in compare_runs(base, cand, max_drop=0.1) if c.regressed]
    assert regressed == [("b", "episodes")]


def test_compare_rates_over_the_tasks_both_runs_have(make_run, tmp_path):
    # the base also has a task the agent always fails; the candidate lacks it, and fails
    # half of the task both have: over different tasks both rates would be 50%
    base_dir = tmp_path / "base"
    cand_dir = tmp_path / "cand"
    for k in range(4):
        write_episode(base_dir, task="easy", variant="original", agent="a", passed=True)
        write_episode(base_dir, task="hard", variant="original", agent="a", passed=False)
        write_episode(cand_dir, task="easy", variant="original", agent="a", passed=k < 2)
    base, cand = load_run(base_dir, resamples=0), load_run(cand_dir, resamples=0)
    checks = {c.metric: c for c in compare_runs(base, cand, max_drop=0.1)}
    assert checks["tasks"].regressed and "(hard)" in checks["tasks"].note
    assert checks["pass_rate[original]"].base.value == 1.0
    assert checks["pass_rate[original]"].candidate.value == 0.5
    assert checks["pass_rate[original]"].regressed
    # a task only the candidate has is left out, not a regression
    reverse = {c.metric: c for c in compare_runs(cand, base, max_drop=0.1)}
    assert not reverse["tasks"].regressed and "(hard)" in reverse["tasks"].note
    assert reverse["pass_rate[original]"].candidate.value == 1.0
    assert not any(c.regressed for c in reverse.values())


def test_compare_rates_over_the_variants_both_runs_have(tmp_path):
    # the base also ran a variant the agent always fails; the candidate did not
    base_dir, cand_dir = tmp_path / "base", tmp_path / "cand"
    for k in range(4):
        write_episode(base_dir, task="t", variant="original", agent="a", passed=True)
        write_episode(
            base_dir, task="t", variant="contradicted", agent="a", passed=False,
            episode_class="stale",
        )  # fmt: skip
        write_episode(cand_dir, task="t", variant="original", agent="a", passed=k < 2)
    base, cand = load_run(base_dir, resamples=0), load_run(cand_dir, resamples=0)
    assert base.metrics["a"].overall_pass_rate.value == 0.5  # the whole run's
    checks = {c.metric: c for c in compare_runs(base, cand, max_drop=0.1)}
    overall = checks["overall_pass_rate"]
    assert (overall.base.value, overall.candidate.value, overall.regressed) == (1.0, 0.5, True)
    assert checks["pass_rate[contradicted]"].note == "not measured in the candidate"
    assert checks["pass_rate[contradicted]"].base.value == 0.0
    paired = compare_runs(base, cand, max_drop=0.1, decision="bootstrap", paired="tasks")
    overall = next(c for c in paired if c.metric == "overall_pass_rate")
    assert overall.paired is not None and overall.paired.value == -0.5


def test_compare_fails_when_the_base_has_nothing_to_compare_with(make_run, tmp_path):
    candidate = load_run(make_run("cand"), resamples=0)
    (tmp_path / "empty" / "episodes").mkdir(parents=True)
    [check] = compare_runs(load_run(tmp_path / "empty", resamples=0), candidate, max_drop=0.1)
    assert check.regressed and check.note.startswith("the base run has no episodes")
    broken = tmp_path / "broken"
    write_episode(broken, task="task-0", variant="original", agent="oracle", passed=False,
                  error="SandboxError: the sandbox died")  # fmt: skip
    [check] = compare_runs(load_run(broken, resamples=0), candidate, max_drop=0.1)
    assert check.regressed and check.note.startswith("the base has no counted episode (1 ")
    # the base ran only a variant the candidate did not: no rate measured in both
    only = tmp_path / "only-withheld"
    write_episode(only, task="task-0", variant="withheld", agent="oracle", passed=True,
                  episode_class="both")  # fmt: skip
    other = tmp_path / "only-original"
    write_episode(other, task="task-0", variant="original", agent="oracle", passed=True)
    checks = compare_runs(load_run(only, resamples=0), load_run(other, resamples=0), max_drop=0.1)
    assert [(c.metric, c.regressed) for c in checks] == [
        ("pass_rate[withheld]", False),
        ("rates", True),
    ]


def test_compare_rejects_a_bad_tolerance(make_run):
    base = make_run("base")
    result = CliRunner().invoke(main, ["compare", str(base), str(base), "--max-drop", "lots"])
    assert result.exit_code == 2
    assert "--max-drop" in result.output


_SAMPLE = re.compile(
    r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|'
    r'\\[\\"n])*",?)*\})? (-?[0-9.e+-]+|NaN|[+-]Inf)$'
)


def _check_exposition(text: str) -> int:
    """A strict reading of the text format: returns the number of samples."""
    typed: set[str] = set()
    series: set[str] = set()
    samples = 0
    assert text.endswith("\n")
    for line in text.splitlines():
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            parts = line.split(" ", 3)
            if parts[1] == "TYPE":
                assert parts[3] in ("gauge", "counter", "untyped", "summary", "histogram")
                assert parts[2] not in typed, f"family typed twice: {parts[2]}"
                typed.add(parts[2])
            continue
        match = _SAMPLE.match(line)
        assert match, f"not a sample line: {line!r}"
        assert match.group(1) in typed, f"sample before its TYPE: {line!r}"
        key = match.group(1) + (match.group(2) or "")
        assert key not in series, f"duplicate series: {key}"
        series.add(key)
        float(match.group(3))
        samples += 1
    return samples


def test_prometheus_text_parses(make_run):
    runs = [
        load_run(make_run("base"), resamples=100),
        load_run(make_run("cand", pass_contradicted=0.5), resamples=100),
    ]
    text = prometheus_text(runs)
    assert _check_exposition(text) > 20
    families = {f.name: f for f in text_string_to_metric_families(text)}
    rates = {
        (s.labels["run"], s.labels["variant"]): s.value
        for s in families["termgym_pass_rate"].samples
    }
    assert rates[("base", "contradicted")] == 1.0
    assert rates[("cand", "contradicted")] == 0.5
    memo = {s.labels["run"]: s.value for s in families["termgym_memorization_index"].samples}
    assert memo == {"base": 0.0, "cand": 0.5}
    assert families["termgym_audit_hits"].type == "gauge"


def test_prometheus_text_of_runs_sharing_an_id_has_no_duplicate_series(make_run, tmp_path):
    # `termgym compare base/eval cand/eval --prometheus`: two folders, one run id
    base = load_run(make_run("eval"), resamples=20)
    copy = tmp_path / "cand" / "eval"
    shutil.copytree(base.path, copy)
    cand = load_run(copy, resamples=20)
    assert base.run_id == cand.run_id
    text = prometheus_text([base, cand])
    _check_exposition(text)
    assert f'termgym_episodes{{run="{base.path}",agent="oracle"}} 18' in text
    assert f'termgym_episodes{{run="{copy}",agent="oracle"}} 18' in text
    assert 'run="eval"' in prometheus_text([base])  # a run alone keeps its id


def test_withheld_values_handed_to_the_oracle_are_not_audited_but_hard_coded_ones_are(tmp_path):
    run_dir = tmp_path / "r"
    oracle_cmd = (
        "cd /app && TERMGYM_WITHHELD_RULES='{\"fuel_reserve\":0.1}' bash -c "
        "\"$(cat <<'TERMGYM_SCRIPT'\npython3 plan.py\nTERMGYM_SCRIPT\n)\""
    )
    write_episode(
        run_dir,
        task="t",
        variant="withheld",
        agent="oracle",
        passed=True,
        episode_class="both",
        actions=[oracle_cmd],
    )
    memorized = oracle_cmd.replace("python3 plan.py", "python3 plan.py --reserve 0.1")
    write_episode(
        run_dir,
        task="t",
        variant="withheld",
        agent="memorizer",
        passed=True,
        episode_class="both",
        actions=[memorized.replace('{"fuel_reserve":0.1}', "{}")],
    )
    audit = load_run(run_dir, resamples=0).audit
    assert audit.for_agent("oracle").leak_rate == 0.0
    assert audit.for_agent("memorizer").leak_rate == 1.0
    assert [h.detail for h in audit.hits] == ["fuel_reserve=0.1"]


def test_episodes_whose_every_attempt_failed_are_counted_as_infra_errors(make_run):
    run_dir = make_run(n_tasks=1, per_task=1, withheld=False)
    lines = [
        {
            "episode_id": "lost-1",
            "task": "task-0",
            "variant": "original",
            "status": "infra-error",
            "error": "SandboxCrashed: engine gone",
        },
        {
            "episode_id": "retried",
            "task": "task-0",
            "variant": "original",
            "status": "infra-error",
            "error": "GraderError: timeout",
        },
        {"episode_id": "retried", "task": "task-0", "variant": "original", "status": "ok"},
    ]
    (run_dir / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    m = load_run(run_dir, resamples=0).metrics["oracle"]
    assert (m.episodes, m.infra_errors) == (2, 1)


def test_report_pools_several_runs_per_agent(make_run, tmp_path):
    oracle = make_run("oracle-run", agent="oracle")
    memorizer = make_run("memorizer-run", agent="memorizer", pass_contradicted=0.0)
    html = tmp_path / "both.html"
    result = CliRunner(env={"COLUMNS": "200"}).invoke(
        main, ["report", str(oracle), str(memorizer), "--resamples", "50", "--html", str(html)]
    )
    assert result.exit_code == 0, result.output
    assert "oracle-run + memorizer-run" in result.output
    page = html.read_text()
    assert page.count('class="bar"') == 6  # two agents, three variants
    assert page.count("cls-stale") == 12 and page.count("cls-adapted") == 12
    # a view per episode: the runs' episode ids are alike, their views apart
    assert page.count("<section class='episode' id='ep-memorizer-run_2f_task-0-") == 6
    assert page.count("<section class='episode'") == 36
    # both runs name their episodes alike: the pooled audit keeps them apart
    pooled = merge_runs([load_run(oracle, resamples=0), load_run(memorizer, resamples=0)])
    assert pooled.audit.for_agent("oracle").episodes == 18
    assert pooled.audit.for_agent("memorizer").leak_rate == 1 / 3
    assert all(h.episode_id.startswith("memorizer-run/") for h in pooled.audit.hits)


def test_report_pools_runs_sharing_an_id_without_merging_their_episodes(make_run, tmp_path):
    # `termgym report base/eval cand/eval`: two folders, one run id, the same episode ids
    first = make_run("eval", agent="memorizer", pass_contradicted=0.0)
    second = tmp_path / "again" / "eval"
    shutil.copytree(first, second)
    pooled = merge_runs([load_run(first, resamples=0), load_run(second, resamples=0)])
    assert len({s.episode_id for s in pooled.summaries}) == 36
    audit = pooled.audit.for_agent("memorizer")
    assert audit.episodes == 36 and audit.leak_rate == 1 / 3
    assert pooled.disclosure["memorizer"].disclosed.n == 12


def test_agent_errors_count_as_graded_failures_and_are_reported(make_run):
    run_dir = make_run(n_tasks=1, per_task=1, withheld=False, pass_contradicted=0.0)
    failed = next((run_dir / "episodes").glob("*contradicted*.jsonl")).stem
    line = {
        "episode_id": failed,
        "task": "task-0",
        "variant": "contradicted",
        "status": "agent-error",
        "error": "AgentError: llm: HTTP 500",
    }
    (run_dir / "results.jsonl").write_text(json.dumps(line) + "\n")
    m = load_run(run_dir, resamples=0).metrics["oracle"]
    assert (m.episodes, m.agent_errors, m.infra_errors) == (2, 1, 0)
    assert m.pass_rate["contradicted"].value == 0.0
