"""`python -m termgym.bench [section ...] [--quick] [--update-docs]`: run and print sections."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from termgym._vocabulary import did_you_mean
from termgym.bench import run_section, sections

DOCS = Path(__file__).resolve().parents[2] / "docs" / "performance.md"


def update_docs(name: str, markdown: str, path: Path = DOCS) -> None:
    """Replace the measured table of section `name` between its markers in docs/performance.md."""
    begin, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    text = path.read_text() if path.exists() else "# Performance\n"
    block = f"{begin}\n{markdown}\n{end}"
    if begin in text and end in text:
        text = re.sub(re.escape(begin) + r".*?" + re.escape(end), lambda _: block, text, flags=re.S)
    else:
        text = text.rstrip("\n") + f"\n\n{block}\n"
    path.write_text(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m termgym.bench", description=__doc__)
    parser.add_argument("names", nargs="*", help=f"sections to run (default: all of {sections()})")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument(
        "--update-docs", action="store_true", help="write the tables into docs/performance.md"
    )
    args = parser.parse_args(argv)
    names = args.names or sections()
    for name in names:
        if name not in sections():
            hint = did_you_mean(name, sections())
            parser.error(f"expected a section among {', '.join(sections())}; got {name!r}.{hint}")
    for name in names:
        section = run_section(name, quick=args.quick)
        print(f"\n## {section.title}\n\n{section.markdown()}\n", flush=True)
        if args.update_docs:
            update_docs(name, section.markdown())
    return 0


if __name__ == "__main__":
    sys.exit(main())
