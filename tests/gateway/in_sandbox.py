"""Run inside an agent's sandbox by the reachability tests (stdlib only): what it can reach.

    python3 in_sandbox.py CONFIG_JSON

CONFIG: {"gateway": "http://127.0.0.1:<port>/v1", "targets": [[host, port]...]}; the token
comes as OPENAI_API_KEY, as an agent gets it. Prints one JSON object: the gateway's answers
with the token, without it and with a wrong one, each target's fate (connected, refused,
unreachable, timeout), and every process's environment and command line (the host looks
for the key in them: the key itself never enters the sandbox, not even to look for it).
"""

import json
import os
import socket
import sys
import urllib.error
import urllib.request


def ask(url, token):
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "from the sandbox"}]})
    request = urllib.request.Request(
        url + "/chat/completions",
        data=body.encode(),
        method="POST",
        headers={
            "Content-Type": "application/json",
            **({"Authorization": "Bearer " + token} if token else {}),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=20) as answer:
            data = json.loads(answer.read())
            return [answer.status, data["choices"][0]["message"]["content"]]
    except urllib.error.HTTPError as exc:
        return [exc.code, exc.read().decode(errors="replace")[:200]]
    except OSError as exc:
        return [0, str(exc)]


def fate(host, port):
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.settimeout(3)
        try:
            sock.connect((host, port))
        except ConnectionRefusedError:
            return "refused"
        except TimeoutError:
            return "timeout"
        except OSError as exc:
            return f"unreachable ({exc.strerror})"
    return "connected"


def processes():
    seen = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        for part in ("environ", "cmdline"):
            try:
                with open(f"/proc/{pid}/{part}", "rb") as file:
                    seen[f"{pid}/{part}"] = file.read().decode(errors="replace")
            except OSError:
                continue
    return seen


with open(sys.argv[1]) as given:
    config = json.load(given)
token = os.environ.get("OPENAI_API_KEY", "")
print(
    json.dumps(
        {
            "with_token": ask(config["gateway"], token),
            "without_token": ask(config["gateway"], ""),
            "wrong_token": ask(config["gateway"], "tg-" + "x" * 43),
            "targets": {f"{h}:{p}": fate(h, p) for h, p in config["targets"]},
            "processes": processes(),
        }
    )
)
