"""Backends by name: unknown names, the local opt-in, the default choice."""

from __future__ import annotations

import pytest

from termgym.errors import BackendUnavailable, SandboxError, UnknownBackend
from termgym.images._engine import forget_clients
from termgym.sandbox import (
    Capabilities,
    SandboxConfig,
    backend_capabilities,
    bwrap_works,
    default_backend,
    make_sandbox,
    register_sandbox,
    unregister_sandbox,
)


def test_unknown_backend_lists_the_known_ones_and_suggests_the_closest() -> None:
    with pytest.raises(UnknownBackend, match=r"among bwrap, docker, local; got 'dokcer'.*'docker'"):
        make_sandbox("dokcer", SandboxConfig())


def test_the_bundled_backends_declare_what_they_do_besides_an_agents_sandbox() -> None:
    """Read from their classes, nothing started: all three grade with a standby runner and
    live state; snapshots are docker's and bwrap's (local's filesystem is the host's)."""
    everything = Capabilities(verifier=True, standby=True, live=True, snapshot=True)
    assert backend_capabilities("docker") == everything
    assert backend_capabilities("bwrap") == everything
    assert backend_capabilities("local") == Capabilities(verifier=True, standby=True, live=True)


def test_capabilities_say_what_was_expected() -> None:
    with pytest.raises(ValueError, match=r"standby, snapshot are parts of a verifier backend"):
        Capabilities(standby=True, snapshot=True)
    with pytest.raises(ValueError, match=r"Capabilities.live: expected True or False, found 1"):
        Capabilities(verifier=True, live=1)  # type: ignore[arg-type]


def test_a_backend_class_that_declares_no_capabilities_is_named_with_what_was_expected() -> None:
    class Undeclared:
        backend = "undeclared"

    register_sandbox("undeclared", Undeclared)
    try:
        with pytest.raises(SandboxError, match=r"undeclared backend .* must declare .*"
                           r"`capabilities = Capabilities\(...\)`.*found None"):  # fmt: skip
            backend_capabilities("undeclared")
    finally:
        unregister_sandbox("undeclared")


def test_local_backend_needs_an_explicit_opt_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TERMGYM_ALLOW_LOCAL", raising=False)
    with pytest.raises(BackendUnavailable, match="no isolation.*allow_local=True"):
        make_sandbox("local", SandboxConfig())
    with pytest.warns(RuntimeWarning, match="isolates nothing"):
        box = make_sandbox("local", SandboxConfig(), allow_local=True)
    with box:
        box.run("cd sub 2>/dev/null || mkdir sub && cd sub; X=1")
        assert box.run("echo $X; basename $PWD").output == "1\nsub\n"
        assert box.run("exit 4").exit_code == 4


def test_local_backend_opt_in_through_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERMGYM_ALLOW_LOCAL", "1")
    with pytest.warns(RuntimeWarning):
        box = make_sandbox("local", SandboxConfig())
    assert box.backend == "local"


@pytest.mark.bwrap
def test_default_backend_is_bwrap_when_no_docker_engine_answers(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:  # noqa: ANN001
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/nothing-here.sock")
    forget_clients()
    try:
        assert bwrap_works()
        assert default_backend() == "bwrap"
    finally:
        monkeypatch.undo()
        forget_clients()


@pytest.mark.docker
def test_default_backend_is_docker_when_an_engine_answers() -> None:
    assert default_backend() == "docker"
