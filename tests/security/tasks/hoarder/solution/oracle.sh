#!/usr/bin/env bash
cat > /app/answer.py <<'PY'
import re
print(re.search(r"at most (\d+) items", open("/app/policy.txt").read()).group(1))
PY
