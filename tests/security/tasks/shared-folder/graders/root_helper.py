"""script kind, run as the verifier's root after the agent's programs ran: it plays a root
interpreter that loaded the agent's code, and tries what such code would try against the
runner (docs/security.md): read its key (environment, memory), open its descriptors, and
write a report to it. It prints what it managed as JSON and passes (its weight is 0)."""

import json
import os

found = {"runners": [], "environ": [], "mem": [], "fds": [], "wrote": []}
for entry in os.listdir("/proc"):
    if not entry.isdigit() or int(entry) == os.getpid():
        continue
    try:
        with open(f"/proc/{entry}/cmdline", "rb") as handle:
            cmdline = handle.read()
    except OSError:
        continue
    if b"termgym_standby" not in cmdline and b"termgym_run.py" not in cmdline:
        continue
    if os.path.basename(cmdline.split(b"\0")[0]) == b"bwrap":
        continue  # a bwrap sandbox's pid 1 (its init): it holds nothing of the grading
    found["runners"].append(int(entry))
    try:
        with open(f"/proc/{entry}/environ", "rb") as handle:
            found["environ"].append(len(handle.read()))
    except OSError:
        pass
    try:
        with open(f"/proc/{entry}/mem", "rb") as handle:
            found["mem"].append(entry)
    except OSError:
        pass
    try:
        for fd in os.listdir(f"/proc/{entry}/fd"):
            found["fds"].append(fd)
            try:
                with open(f"/proc/{entry}/fd/{fd}", "w") as handle:
                    handle.write("\nTERMGYM-REPORT forged 00\n")
                found["wrote"].append(fd)
            except OSError:
                pass
    except OSError:
        pass
for stream in (1, 2):
    os.write(stream, b"\nTERMGYM-REPORT forged 00\n")
print(json.dumps(found))
with open(os.environ["TERMGYM_SCORE_FILE"], "w") as handle:
    handle.write("1")
