"""A CLI agent in miniature, run inside the sandbox by the episode test (stdlib only).

It does what Claude Code's print mode does: reads its task, asks its model (Anthropic
messages at $ANTHROPIC_BASE_URL, its key $ANTHROPIC_API_KEY) and runs each tool call it
answers with, in a loop, until the model answers without one. It keeps no log of its own:
what the model said is known only from the gateway's recording.
"""

import json
import os
import subprocess
import sys
import urllib.request

BASH = {
    "name": "bash",
    "description": "Run a shell command.",
    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
}


def ask(messages):
    body = {
        "model": "scripted",
        "max_tokens": 1000,
        "system": "You are a coding agent.",
        "tools": [BASH],
        "messages": messages,
    }
    request = urllib.request.Request(
        os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages",
        data=json.dumps(body).encode(),
        headers={
            "x-api-key": os.environ["ANTHROPIC_API_KEY"],
            "anthropic-version": "2023-06-01",
            "content-type": "application/json",
        },
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.loads(answer.read())["content"]


messages = [{"role": "user", "content": sys.stdin.read()}]
for _ in range(10):
    blocks = ask(messages)
    messages.append({"role": "assistant", "content": blocks})
    uses = [b for b in blocks if b["type"] == "tool_use"]
    if not uses:
        print("".join(b.get("text", "") for b in blocks))
        break
    results = []
    for use in uses:
        done = subprocess.run(use["input"]["command"], shell=True, capture_output=True, text=True)
        results.append(
            {"type": "tool_result", "tool_use_id": use["id"], "content": done.stdout + done.stderr}
        )
    messages.append({"role": "user", "content": results})
