#!/usr/bin/env bash
# Reference solution: reads the answers from docs/install-notes.md (withheld ones from
# $TERMGYM_WITHHELD_RULES) and types them into the wizard through a pipe.
set -euo pipefail

# step: answer the wizard with what docs/install-notes.md says
cd /app
python3 - <<'PY' | python3 /app/setup_wizard.py
import json, os, re
text = open("/app/docs/install-notes.md").read()
withheld = json.loads(os.environ.get("TERMGYM_WITHHELD_RULES") or "{}")


def note(label, rule):
    m = re.search(rf"^- {label}: (\S+)", text, re.M)
    return m.group(1) if m else str(withheld[rule])


mode = note("Install mode", "install_mode")
seeds = re.search(r"Seed nodes[^\n]*\n\s+(\S[^\n]*)", text).group(1).strip()
answers = [mode] + ([seeds] if mode == "cluster" else [])
answers += [note("Worker threads", "workers"), note("Listen port", "port")]
answers += [re.search(r"^- Data directory: (\S+)", text, re.M).group(1), "", "n", "y"]
print("\n".join(answers))
PY
