"""termgym's verifiers (v1) plugin: `vf-eval termgym_verifiers --env.taskset.tasks '*' ...`.

verifiers imports a taskset by a plain module name (no dots), so this top-level package
only names the taskset and environment of `termgym.adapters.verifiers`.
"""

from __future__ import annotations

from termgym.adapters._verifiers_v1 import TermgymEnv, TermgymTaskset

__all__ = ["TermgymEnv", "TermgymTaskset"]
