"""The registry every extension point uses, from many threads at once."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from termgym._registry import Registry
from termgym.errors import UnknownGraderKind
from termgym.kinds import _registry as kinds

THREADS = 16


def _at_once(call: Callable[[int], Any]) -> list[Any]:
    """`call(i)` from THREADS threads released together; each one's result or exception."""
    barrier = threading.Barrier(THREADS)
    results: list[Any] = [None] * THREADS

    def work(index: int) -> None:
        barrier.wait()
        try:
            results[index] = call(index)
        except Exception as exc:  # noqa: BLE001 - reported by the test's assertion
            results[index] = exc

    threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)
    return results


def test_the_first_lookups_from_many_threads_all_find_the_plugins() -> None:
    """A fresh registry over the bundled grader kinds' entry points, first asked by many
    threads at once: none may see it before its entry points are in."""
    fresh: Registry[Any] = Registry("grader kind", kinds.ENTRY_POINT_GROUP, UnknownGraderKind)
    results = _at_once(lambda i: fresh.entry("pytest") if i % 2 else fresh.names())
    assert not [r for r in results if isinstance(r, Exception)]
    assert all("pytest" in r for r in results[::2])
    assert {r.target for r in results[1::2]} == {"termgym.graders.pytest_kind:PytestGrader"}


def test_registering_while_others_read_loses_nothing() -> None:
    fresh: Registry[Any] = Registry("grader kind", kinds.ENTRY_POINT_GROUP, UnknownGraderKind)

    def register_and_list(index: int) -> list[str]:
        fresh.register(f"kind-{index}", f"module:thing{index}")
        return fresh.names()

    results = _at_once(register_and_list)
    assert not [r for r in results if isinstance(r, Exception)]
    assert {f"kind-{i}" for i in range(THREADS)} <= set(fresh.names())
    assert all(f"kind-{i}" in names for i, names in enumerate(results))


@pytest.fixture
def fresh_kind() -> Iterator[str]:
    """A grader kind registered by name, not yet instantiated; unregistered after."""
    kinds.register_grader("threads-check", "termgym.graders.checks_kind:FileCheck")
    yield "threads-check"
    kinds.unregister_grader("threads-check")


def test_a_grader_kind_is_one_instance_whichever_thread_asks_first(fresh_kind: str) -> None:
    found = _at_once(lambda _: kinds.make_grader(fresh_kind))
    assert not [r for r in found if isinstance(r, Exception)]
    assert len({id(grader) for grader in found}) == 1


def test_sandboxes_graders_and_agents_register_and_look_up_by_one_scheme() -> None:
    """register_X / unregister_X / registered_Xs / make_X for each."""
    import termgym.agents as agents
    import termgym.kinds as kinds_api
    import termgym.sandbox as sandbox
    from termgym.errors import UnknownAgent, UnknownBackend

    sandbox.register_sandbox("scheme-check", "termgym.sandbox._local:LocalSandbox")
    kinds_api.register_grader("scheme-check", "termgym.graders.checks_kind:FileCheck")
    agents.register_agent("scheme-check", "termgym.agents._reference:OracleAgent")
    try:
        assert "scheme-check" in sandbox.registered_sandboxes()
        assert "scheme-check" in kinds_api.registered_graders()
        assert "scheme-check" in agents.registered_agents()
        assert sandbox.sandbox_spec("scheme-check").target.endswith(":LocalSandbox")
        assert agents.agent_spec("scheme-check").target.endswith(":OracleAgent")
        assert type(kinds_api.make_grader("scheme-check")).__name__ == "FileCheck"
    finally:
        sandbox.unregister_sandbox("scheme-check")
        kinds_api.unregister_grader("scheme-check")
        agents.unregister_agent("scheme-check")
    with pytest.raises(UnknownBackend, match="scheme-check"):
        sandbox.sandbox_spec("scheme-check")
    with pytest.raises(UnknownGraderKind, match="scheme-check"):
        kinds_api.make_grader("scheme-check")
    with pytest.raises(UnknownAgent, match="scheme-check"):
        agents.make_agent("scheme-check")
