"""Harbor's agents as termgym agents (`harbor:terminus-2`, `harbor:codex`, ...), run by
Harbor's own code in an interpreter of its own (docs/agents.md, "Harbor's agents")."""

from __future__ import annotations

from termgym.agents.harbor._agent import HarborAgent
from termgym.agents.harbor._bridge import (
    HarborProcess,
    harbor_process,
    prepare_spare,
    spare_processes,
)
from termgym.agents.harbor._catalog import ENTRIES, NAMES, HarborEntry, harbor_entry
from termgym.agents.harbor._operations import Operation, exec_command, operation
from termgym.agents.harbor._venv import (
    HARBOR_VERSION,
    ensure_harbor,
    find_interpreter,
    installed_python,
)

__all__ = [
    "ENTRIES",
    "HARBOR_VERSION",
    "NAMES",
    "HarborAgent",
    "HarborEntry",
    "HarborProcess",
    "harbor_process",
    "prepare_spare",
    "spare_processes",
    "Operation",
    "exec_command",
    "operation",
    "ensure_harbor",
    "find_interpreter",
    "harbor_entry",
    "installed_python",
]
