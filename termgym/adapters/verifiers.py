"""termgym as a verifiers environment, for the API the installed verifiers has.

    pip install 'termgym[verifiers]'

verifiers 0.4 (its v1 API): a taskset of termgym episodes and an environment that steps
each one host-side, run by `vf-eval termgym_verifiers ...` (`termgym.adapters._verifiers_v1`;
`termgym_verifiers` is the plugin name verifiers imports). verifiers 0.2 and 0.3 (the
classic API): `vf.load_environment("termgym.adapters.verifiers", ...)` gives a
`vf.MultiTurnEnv` with bash/keys/submit tools (`termgym.adapters._verifiers_classic`).
"""

from __future__ import annotations

try:
    import verifiers as vf
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError(
        "termgym.adapters.verifiers needs verifiers: pip install 'termgym[verifiers]'"
    ) from exc

CLASSIC = hasattr(vf, "MultiTurnEnv")
"""The installed verifiers has the classic API (0.2, 0.3); else its v1 API (0.4)."""

if CLASSIC:
    from termgym.adapters._verifiers_classic import (
        TermgymVerifiersEnv,
        episode_rows,
        load_environment,
    )

    __all__ = ["CLASSIC", "TermgymVerifiersEnv", "episode_rows", "load_environment"]
else:
    from termgym.adapters._verifiers_v1 import (
        TermgymEnv,
        TermgymEnvConfig,
        TermgymTask,
        TermgymTaskset,
        TermgymTasksetConfig,
    )

    __all__ = [
        "CLASSIC",
        "TermgymEnv",
        "TermgymEnvConfig",
        "TermgymTask",
        "TermgymTaskset",
        "TermgymTasksetConfig",
    ]
