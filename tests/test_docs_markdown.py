"""The documentation's code: blocks close where they are meant to, and every example runs.

Fences: a fence line that closes a block holds the backticks alone. Text after them
(```` ``` After a kill -9 ````) makes no closing fence in Markdown, so the block ran on and
swallowed the prose after it.

Examples: every fenced block of README.md and docs/ (any page, so a new page is tested too)
tagged `python`, or `bash`/`sh`/`shell`/`console`, is an example and runs, as a reader would
run it, in a fresh folder per page: the page's files first (below), then its Python
examples in order in one interpreter (a later example may use what an earlier one
defined, as the page reads), then its shell examples in order, each with `bash -e`. Other
blocks (untagged, indented, yaml, toml, text ...) show listings, outputs, file contents and
synopses with placeholders, and are not run. Sandboxes are bwrap ($TERMGYM_BACKEND).

A page says what an example needs in an HTML comment on the line just above its fence,
`<!-- example: {...} -->` (a YAML mapping), with these keys only:

- `file: PATH`: the block is a file's contents; it is written at PATH in the page's folder
  before the examples run (Python is compiled, shell checked with `bash -n`; neither runs).
- `server: URL`: the example talks to a chat-completions endpoint at URL; the test starts a
  real HTTP server speaking the API (plain and streamed), which answers every request
  `SUBMIT` (or `reply: TEXT`, for an agent that reads another protocol), and puts its
  address in place of URL.
- `replace: {OLD: NEW}`: the example runs with each OLD (which it must hold) replaced by
  NEW, to keep it small in CI (one task instead of every task, an episode instead of 4).
- `requires: {PACKAGE: SPECIFIER}`: the example needs that version of a package
  (`{verifiers: "<0.4"}`; `harbor`: Harbor's own virtualenv, `make harbor`); where another
  is installed, or none, it is left out, and said so.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.specifiers import SpecifierSet

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
FENCE = re.compile(r"^(`{3,})(.*)$")
MARKER = re.compile(r"^<!--\s*example:\s*(.*?)\s*-->\s*$")
PYTHON = {"python", "py"}
SHELL = {"bash", "sh", "shell", "console"}
KEYS = {"file", "server", "reply", "replace", "requires"}


def unclosed_fences(text: str) -> list[str]:
    """Lines that should close a code block but carry text after the backticks, and a block
    left open at the end."""
    problems, opened = [], None
    for number, line in enumerate(text.splitlines(), 1):
        fence = FENCE.match(line)
        if fence is None:
            continue
        ticks, rest = fence.groups()
        if opened is None:
            opened = number
        elif len(ticks) >= 3 and not rest.strip():
            opened = None
        else:
            problems.append(f"line {number}: text after a closing fence: {line!r}")
    if opened is not None:
        problems.append(f"line {opened}: a code block that never closes")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_code_block_closes_on_a_fence_of_its_own(page: Path) -> None:
    assert unclosed_fences(page.read_text()) == []


@dataclass(frozen=True)
class Block:
    """One fenced block of a page: its language, its text, the line its text starts on, and
    what the marker above it says."""

    page: Path
    lang: str
    text: str
    line: int
    marker: dict[str, Any] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def example(self) -> bool:
        """Runs (Python or shell, and not a file's contents)."""
        return self.lang in PYTHON | SHELL and "file" not in self.marker

    def runnable_text(self, server: str | None = None) -> str:
        """The text as it runs: the marker's replacements made, the server's address put in."""
        text = self.text
        for old, new in (self.marker.get("replace") or {}).items():
            assert str(old) in text, f"{self.where}: the marker replaces {old!r}, not in it"
            text = text.replace(str(old), str(new))
        if "server" in self.marker:
            assert server is not None and str(self.marker["server"]) in text, self.where
            text = text.replace(str(self.marker["server"]), server)
        return text

    def missing(self) -> str:
        """Why the example cannot run here ("" when it can): a package it `requires` in
        another version, or absent."""
        for package, wanted in (self.marker.get("requires") or {}).items():
            if package == "harbor":  # it runs in a virtualenv of its own
                from termgym.agents.harbor import installed_python

                if installed_python(str(wanted)) is None:
                    return f"Harbor {wanted}'s virtualenv is not made (make harbor)"
                continue
            try:
                found = metadata.version(package)
            except metadata.PackageNotFoundError:
                return f"{package} is not installed"
            if found not in SpecifierSet(str(wanted)):
                return f"it needs {package}{wanted}, {found} is installed"
        return ""


def blocks(page: Path) -> list[Block]:
    """Every fenced block of a page, with its marker (parsed; malformed ones fail here)."""
    lines = page.read_text().splitlines()
    found: list[Block] = []
    start: int | None = None
    for number, line in enumerate(lines):
        fence = FENCE.match(line)
        if fence is None:
            continue
        if start is None:
            start = number
            continue
        if fence.group(2).strip():
            continue  # unclosed_fences reports it
        opening = lines[start]
        lang = opening.lstrip("`").strip().split(" ")[0].lower()
        marker: dict[str, Any] = {}
        above = MARKER.match(lines[start - 1]) if start else None
        if above is not None:
            where = f"{page.relative_to(ROOT)}:{start}"
            parsed = yaml.safe_load(above.group(1))
            assert isinstance(parsed, dict), f"{where}: expected a YAML mapping, found {parsed!r}"
            unknown = set(parsed) - KEYS
            assert not unknown, f"{where}: marker keys {sorted(unknown)}; expected {sorted(KEYS)}"
            marker = parsed
        text = "\n".join(lines[start + 1 : number]) + "\n"
        found.append(Block(page, lang, text, start + 2, marker))
        start = None
    return found


EXAMPLE_PAGES = [p for p in PAGES if any(b.example for b in blocks(p))]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_marker_reads_and_marks_an_example_or_a_file(page: Path) -> None:
    for block in blocks(page):
        if block.marker and "file" not in block.marker:
            assert block.example, f"{block.where}: a marker above a block that never runs"


class SubmittingServer:
    """A real HTTP server speaking /v1/chat/completions, plain or streamed (server-sent
    events), that answers every request with the reply `SUBMIT`."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.reply = "SUBMIT"
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                server.requests.append(body)
                message = {"role": "assistant", "content": server.reply}
                base = {"id": f"chatcmpl-{len(server.requests)}", "created": int(time.time()),
                        "model": body.get("model", "scripted")}  # fmt: skip
                usage = {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}
                if body.get("stream"):
                    chunks = [
                        {**base, "object": "chat.completion.chunk",
                         "choices": [{"index": 0, "delta": message, "finish_reason": None}]},
                        {**base, "object": "chat.completion.chunk", "usage": usage,
                         "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
                    ]  # fmt: skip
                    data = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)
                    self._send(data + b"data: [DONE]\n\n", "text/event-stream")
                    return
                choice = {"index": 0, "message": message, "finish_reason": "stop"}
                answer = {**base, "object": "chat.completion", "usage": usage, "choices": [choice]}
                self._send(json.dumps(answer).encode(), "application/json")

            def _send(self, data: bytes, kind: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


DRIVER = textwrap.dedent(
    '''
    """Runs a page's Python examples in order, in one namespace, as a reader would."""
    import ast, asyncio, json, sys, traceback

    namespace = {"__name__": "__main__"}
    for where, line, code in json.load(open(sys.argv[1])):
        print(f"--- {where}", file=sys.stderr, flush=True)
        try:
            compiled = compile("\\n" * (line - 1) + code, where.rsplit(":", 1)[0], "exec",
                               flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
            result = eval(compiled, namespace)
            if asyncio.iscoroutine(result):
                asyncio.run(result)
        except BaseException:
            traceback.print_exc()
            print(f"FAILED: the example at {where}", file=sys.stderr)
            sys.exit(1)
    '''
)


@pytest.fixture
def server() -> Iterator[SubmittingServer]:
    running = SubmittingServer()
    yield running
    running.stop()


def _environment(folder: Path) -> dict[str, str]:
    """A reader's shell: the venv's programs first (termgym, vf-eval, uv), bwrap sandboxes,
    a key for clients that insist on one (the server reads none)."""
    bin_dir = str(Path(sys.executable).parent)
    return {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}",
        "TERMGYM_BACKEND": "bwrap",
        "OPENAI_API_KEY": "unused",
        "PYTHONPATH": "",
        "HOME": os.environ.get("HOME", str(folder)),
    }


def _written(block: Block, folder: Path) -> None:
    """A file block written where its marker says, and checked as the code it is."""
    path = folder / str(block.marker["file"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(block.text)
    if block.lang in PYTHON:
        ast.parse(block.text, filename=block.where)
    elif block.lang in SHELL:
        done = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
        assert done.returncode == 0, f"{block.where}: {done.stderr}"


@pytest.mark.bwrap
@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("page", EXAMPLE_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_example_of_the_page_runs_as_written(
    page: Path, tmp_path: Path, server: SubmittingServer, base_rootfs: str
) -> None:
    found = blocks(page)
    env = _environment(tmp_path)
    for block in found:
        if "file" in block.marker:
            _written(block, tmp_path)
    runs = [b for b in found if b.example]
    left_out = {b.where: why for b in runs if (why := b.missing())}
    python = [(b.where, b.line, b.runnable_text(server.base_url)) for b in runs
              if b.lang in PYTHON and b.where not in left_out]  # fmt: skip
    if python:
        replies = {str(b.marker.get("reply", "SUBMIT")) for b in runs if b.lang in PYTHON}
        assert len(replies) == 1, f"{page.name}: its Python examples share a server: one reply"
        server.reply = replies.pop()
        plan = tmp_path / ".examples.json"
        plan.write_text(json.dumps(python))
        driver = tmp_path / ".driver.py"
        driver.write_text(DRIVER)
        done = subprocess.run(
            [sys.executable, str(driver), str(plan)], cwd=tmp_path, env=env,
            capture_output=True, text=True, timeout=540,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    for block in runs:
        if block.lang in SHELL and block.where not in left_out:
            server.reply = str(block.marker.get("reply", "SUBMIT"))
            done = subprocess.run(
                ["bash", "-e", "-c", block.runnable_text(server.base_url)], cwd=tmp_path,
                env=env, capture_output=True, text=True, timeout=540,
            )  # fmt: skip
            tail = (done.stdout[-3000:] + done.stderr[-3000:]).strip()
            assert done.returncode == 0, f"the example at {block.where} failed:\n{tail}"
    for where, why in left_out.items():
        print(f"left out: the example at {where}: {why}")
