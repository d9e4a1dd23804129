"""A task's graders keep their own copy of a program the agent also gets (the agent may
change its copy): the two must stay the same program, or the graders test another one."""

from __future__ import annotations

import ast
from pathlib import Path

ENVIRONMENTS = Path(__file__).resolve().parents[2] / "environments"


def _program(path: Path) -> str:
    """The module's code without its docstring (which says which copy it is)."""
    module = ast.parse(path.read_text())
    body = module.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return ast.dump(ast.Module(body=body, type_ignores=[]))


def test_the_graders_wizard_is_the_wizard_the_agent_gets() -> None:
    task = ENVIRONMENTS / "interactive-setup"
    hidden = _program(task / "graders" / "reference_wizard.py")
    assert hidden == _program(task / "files" / "setup_wizard.py")
