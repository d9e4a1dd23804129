"""`python -m termgym.agents.harbor`: make Harbor's virtualenv (what `make harbor` runs).

Without a Python >= 3.12 on the machine it says so and exits 0, so `make test` goes on and
the tests of Harbor's agents say why they do not run (they fail under CI=true)."""

from __future__ import annotations

import sys

from termgym.agents.harbor._venv import ensure_harbor, find_interpreter
from termgym.errors import AgentError

try:
    find_interpreter()
except AgentError as exc:
    print(f"termgym: Harbor's agents will not run here: {exc}", file=sys.stderr)
    sys.exit(0)
print(ensure_harbor())
