#!/usr/bin/env bash
cat > /app/echo.py <<'PY'
import re, sys
times = int(re.search(r"(\d+) time", open("/app/notes.txt").read()).group(1))
print("\n".join([open(sys.argv[1]).read().strip()] * times))
PY
