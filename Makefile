# termgym: `make demo` runs the main job, `make test` the whole suite. Each sets up what it needs.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
TERMGYM := $(VENV)/bin/termgym
PYTEST_ARGS ?=

.PHONY: help setup system system-browser image harbor demo test test-agents bench bench-grading-versus lint format clean gc

help:
	@echo "make demo   - set up, then run the main job"
	@echo "make test   - set up, then run the whole test suite (but the tests marked agents)"
	@echo "make test-agents - the in-sandbox CLI agents CI leaves out (builds their layers once)"
	@echo "make bench  - speed benchmarks (ratios measured side by side)"
	@echo "make bench-grading-versus - grading now beside GRADING_BEFORE (a commit), in one run"
	@echo "make lint   - ruff, mypy and the layers contract (.importlinter)"
	@echo "make gc     - remove containers termgym left behind"

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

# System pieces: a Docker engine (installed and started where the machine allows), bubblewrap.
system:
	@bash scripts/ensure-system.sh

# The same, and a headless browser for the HTML report's screenshot test (the tests only).
system-browser:
	@bash scripts/ensure-system.sh --browser

# The base image tasks run in; cached, so a second call takes seconds.
image: setup system
	$(TERMGYM) image build-base

# Harbor (Python >= 3.12) in a virtualenv of its own, made with a Python >= 3.12 found on
# the machine (docs/agents.md, "Harbor's agents"); cached: a second call takes a second.
harbor: setup
	$(PY) -m termgym.agents.harbor

demo: setup system image
	$(TERMGYM) demo

# The stand-ins the imported fixtures are built FROM (a fresh machine compiles CPython once,
# minutes, here rather than inside a test's time limit).
FIXTURE_BASES := python:3.13-slim-bookworm debian:bookworm-slim

# The suite, but the tests marked `agents`: the CLI agents inside the sandbox beyond the one
# CI runs (Codex on docker and bwrap), whose layers take minutes to build on a fresh machine.
test: setup system-browser image harbor
	@if docker info >/dev/null 2>&1; then $(TERMGYM) image build-stand-in $(FIXTURE_BASES); fi
	$(PY) -m pytest -m "not agents" $(PYTEST_ARGS)

# Those agents (mini-swe-agent, Claude Code, Codex's other episodes) end to end: each builds
# its layer over the task image the first time (a minute or two each here), cached after.
test-agents: setup system image harbor
	$(PY) -m pytest -m agents $(PYTEST_ARGS)

GRADING_BEFORE ?= b1da593
# the commit before per-rule-set verifiers and snapshot grading (docs/performance.md)

bench: setup system image harbor
	$(PY) -m termgym.bench
	$(MAKE) bench-grading-versus

bench-grading-versus: setup system image
	test -d .bench/before || git worktree add --detach .bench/before $(GRADING_BEFORE)
	$(PY) scripts/grading_versus.py .bench/before --rounds 3 --snapshot

lint: setup
	$(VENV)/bin/ruff check termgym graders tui tests
	$(VENV)/bin/ruff format --check termgym graders tui tests
	$(VENV)/bin/mypy termgym graders tui
	$(VENV)/bin/lint-imports --no-cache .importlinter

format: setup
	$(VENV)/bin/ruff format termgym graders tui tests
	$(VENV)/bin/ruff check --fix termgym graders tui tests

gc: setup
	$(TERMGYM) gc

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
