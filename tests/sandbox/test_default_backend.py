"""$TERMGYM_BACKEND picks the backend used where none is given (the docs' examples run on
bwrap by it); a misspelt one is an error naming the variable, with a did-you-mean."""

from __future__ import annotations

import pytest

from termgym.errors import UnknownBackend
from termgym.sandbox import default_backend


def test_the_variable_names_the_default_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERMGYM_BACKEND", "bwrap")
    assert default_backend() == "bwrap"
    monkeypatch.setenv("TERMGYM_BACKEND", "bwarp")
    with pytest.raises(UnknownBackend, match=r"\$TERMGYM_BACKEND: .*Did you mean 'bwrap'"):
        default_backend()
