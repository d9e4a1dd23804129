"""termgym inside LLM-RL frameworks: SkyRL-gym, verifiers, GEM (each an optional extra).

Import the module of the framework you use; each needs its framework installed:
`termgym.adapters.skyrl` (pip install 'termgym[skyrl]'), `termgym.adapters.verifiers`
('termgym[verifiers]'), `termgym.adapters.gem` ('termgym[gem]'). All three sit on the chat
adapter (`termgym.chat`), so replies are parsed, outputs budgeted and verdicts kept out of
the model's messages the same way everywhere.
"""
