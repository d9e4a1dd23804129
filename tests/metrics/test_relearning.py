"""Episodes-to-recover after a rule switch, its bootstrap over seeds, the curve, the CLI."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from termgym.analysis.relearning import (
    TrainingLog,
    episodes_to_recover,
    read_training_log,
    recovery,
)
from termgym.cli import main


def _log(after_fail: int, length: int = 100, switch: int = 50) -> tuple[float, ...]:
    """All passes before the switch, `after_fail` failures after it, then passes again."""
    return tuple([1.0] * switch + [0.0] * after_fail + [1.0] * (length - switch - after_fail))


def test_recovery_counts_post_switch_episodes_to_the_target_rate() -> None:
    # window 10, target 0.9: the first window after the switch with 9 passes ends 9 episodes
    # after the failures end
    assert episodes_to_recover(_log(5), 50, fraction=0.9, window=10) == 5 + 9
    assert episodes_to_recover(_log(0), 50, fraction=0.9, window=10) == 10
    assert episodes_to_recover(_log(50), 50, fraction=0.9, window=10) is None
    with pytest.raises(ValueError, match=r"fraction: expected a number in \(0, 1\], found 1.5"):
        episodes_to_recover(_log(5), 50, fraction=1.5)


def test_the_mean_over_seeds_has_a_bootstrap_interval_and_counts_censored_seeds() -> None:
    log = TrainingLog({"0": _log(5), "1": _log(15), "2": _log(50)}, 50)
    found = recovery(log, fraction=0.9, window=10, resamples=500)
    assert found.per_seed == {"0": 14, "1": 24, "2": None}
    assert found.censored == 1
    assert found.episodes.value == pytest.approx((14 + 24 + 50) / 3)
    assert found.episodes.low <= found.episodes.value <= found.episodes.high
    assert found.format().startswith(">= ") and "1 of 3 seeds censored" in found.format()
    assert len(found.curve) == 100 and found.curve[49] == 1.0


def test_a_switch_outside_the_log_is_refused() -> None:
    with pytest.raises(ValueError, match=r"seed 0 has 100 episodes, the switch is at 100"):
        TrainingLog({"0": _log(5)}, 100)


def test_the_cli_reads_a_jsonl_log_and_draws_the_curve(tmp_path) -> None:
    path = tmp_path / "train.jsonl"
    with path.open("w") as handle:
        for condition, fails in (("switch", 5), ("other", 0)):
            for seed in (0, 1):
                for episode, passed in enumerate(_log(fails + seed)):
                    line = {"condition": condition, "seed": seed, "episode": episode}
                    handle.write(json.dumps({**line, "passed": bool(passed)}) + "\n")
    svg = tmp_path / "curve.svg"
    result = CliRunner().invoke(
        main,
        ["relearning", str(path), "--switch-at", "50", "--condition", "switch",
         "--window", "10", "--svg", str(svg)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "seed 0: pre-switch pass rate 100.0%, 14 episodes" in result.output
    assert "seed 1: pre-switch pass rate 100.0%, 15 episodes" in result.output
    assert "episodes to recover: 14.5 [14.0, 15.0] episodes" in result.output
    text = svg.read_text()
    assert text.startswith("<svg") and "rule switch (episode 50)" in text and "<polyline" in text
    mixed = CliRunner().invoke(main, ["relearning", str(path), "--switch-at", "50"])
    assert (
        mixed.exit_code == 1 and "expected one condition, found ['other', 'switch']" in mixed.output
    )
    with pytest.raises(ValueError, match=r"expected a switch_at line or --switch-at"):
        read_training_log(path, condition="switch")


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ({"seed": 0, "episode": "x", "passed": True}, r"train.jsonl:1: episode: expected an int"),
        ({"seed": 0, "episode": 2.5, "passed": True}, r"train.jsonl:1: episode: expected an int"),
        ({"seed": 0, "episode": 1, "passed": [1]}, r"expected passed \(bool\) or reward .*\[1\]"),
        ({"switch_at": "50"}, r"train.jsonl:1: switch_at: expected an int, found '50'"),
    ],
)
def test_a_log_line_of_the_wrong_shape_is_named_by_line(tmp_path, line: dict, expected) -> None:
    """Before, int()'s 'invalid literal' came out with no file or line, 2.5 was cut to 2,
    and a list as the outcome ended in float()'s TypeError: a traceback from the CLI."""
    path = tmp_path / "train.jsonl"
    path.write_text(json.dumps(line) + "\n")
    with pytest.raises(ValueError, match=expected):
        read_training_log(path, switch_at=1)
    result = CliRunner().invoke(main, ["relearning", str(path), "--switch-at", "1"])
    assert result.exit_code == 1 and "Error: " in result.output, result.output


def test_an_svg_that_cannot_be_written_is_the_options_error(tmp_path) -> None:
    path = tmp_path / "train.jsonl"
    path.write_text(
        "".join(json.dumps({"seed": 0, "episode": e, "passed": True}) + "\n" for e in range(9))
    )
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = CliRunner().invoke(
        main, ["relearning", str(path), "--switch-at", "5", "--svg", str(blocker / "c.svg")]
    )
    assert result.exit_code == 2, result.output
    assert "--svg" in result.output and "expected a file that can be written" in result.output
