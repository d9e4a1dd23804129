"""The HTML report in a real browser: headless Chromium screenshots of the page and of a stale
episode's view, as a person sees them, read back pixel by pixel.

The runs are the recorded reference runs (tests/tui/reference_runs.py: the real oracle and
memorizer on fuel-planner's contradicted variant). Set TERMGYM_SHOTS to a folder to keep the
screenshots for a look.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from PIL import Image

from termgym.report import load_run, merge_runs, write_html

from ..tui.reference_runs import run_folder

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)
WINDOW = (1200, 1600)
OVERLAY = (166, 166, 166)
"""White under the view's backdrop (black at 35%): what the page's edge shows behind a view."""
WHY_BOX = (0xFB, 0xF7, 0xE9)
CHANGED = (0xFD, 0xE2, 0xDF)
"""The "why" paragraph's background, and a rule value that differs from the one in force."""


@pytest.fixture(scope="module")
def browser() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if found := shutil.which(name):
            return found
    pytest.skip(
        "no Chromium to screenshot the report with: `make test` installs Debian's chromium "
        "(scripts/ensure-system.sh --browser), which could not be done here"
    )


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    runs = [load_run(run_folder(name), resamples=0) for name in ("oracle", "memorizer")]
    return write_html(merge_runs(runs, resamples=0), tmp_path_factory.mktemp("html") / "r.html")


def screenshot(browser: str, page: Path, fragment: str, name: str) -> Path:
    """The page (at `#fragment`) as Chromium draws it, in a fresh empty profile."""
    out = page.parent / f"{name}.png"
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run(
            [
                browser, *FLAGS, f"--user-data-dir={profile}",
                f"--window-size={WINDOW[0]},{WINDOW[1]}", f"--screenshot={out}",
                page.as_uri() + (f"#{fragment}" if fragment else ""),
            ],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert done.returncode == 0 and out.exists(), done.stderr[-2000:]
    if shots := os.environ.get("TERMGYM_SHOTS"):
        Path(shots).mkdir(parents=True, exist_ok=True)
        shutil.copy(out, Path(shots) / out.name)
    return out


def pixels(png: Path) -> Image.Image:
    """The screenshot as RGB pixels."""
    with Image.open(png) as image:
        return image.convert("RGB")


def _near(pixel: tuple[int, ...], color: tuple[int, int, int], slack: int = 4) -> bool:
    return all(abs(p - c) <= slack for p, c in zip(pixel, color, strict=True))


def _count(image: Image.Image, color: tuple[int, int, int]) -> int:
    """Pixels of (about) `color`."""
    return sum(n for n, pixel in image.getcolors(maxcolors=1 << 24) or () if _near(pixel, color))


def test_a_stale_episode_s_view_shows_why_over_the_report(browser: str, page: Path) -> None:
    html = page.read_text()
    stale = "ep-memorizer_2f_fuel-planner--contradicted--000"
    assert f"id='{stale}'" in html
    # the memorizer's square in the class chart links to the view, its tooltip says why
    assert (
        f'<a href="#{stale}"><rect class="cell cls-stale"' in html
        and "kept max_weight=100 (in force: 109)" in html
    )
    top = pixels(screenshot(browser, page, "", "report-top"))
    view = pixels(screenshot(browser, page, stale, "report-stale-episode"))
    # the report alone: white page, no view over it, no why box drawn
    assert _near(top.getpixel((5, 5)), (255, 255, 255)) and _count(top, WHY_BOX) == 0
    # the stale episode's view over the report: the backdrop at the page's edge, the why
    # paragraph's box, and its changed rule values (109 in force, 100 original) highlighted
    assert _near(view.getpixel((5, 5)), OVERLAY, slack=8), view.getpixel((5, 5))
    assert _count(view, WHY_BOX) > 20_000
    assert _count(view, CHANGED) > 2_000
