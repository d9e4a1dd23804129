"""python kind, in the runner's process: which system files the agent's user owns now.

The image's system folders are root's; a grading that handed one of them to the agent's
user (AGENT_UID) would let its programs plant code that a root process loads later."""

import json
import os

AGENT_UID = int(os.environ.get("TERMGYM_AGENT_UID", "60000"))
ROOTS = ("/usr", "/etc", "/var/lib", "/root")


def report():
    owned = []
    for root in ROOTS:
        for base, dirs, files in os.walk(root):
            for name in dirs + files:
                path = os.path.join(base, name)
                try:
                    if os.lstat(path).st_uid == AGENT_UID:
                        owned.append(path)
                except OSError:
                    pass
    return True, json.dumps({"owned": owned[:50], "count": len(owned)})
