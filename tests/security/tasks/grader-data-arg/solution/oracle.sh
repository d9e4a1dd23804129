#!/usr/bin/env bash
cat > /app/count.py <<'PY'
import re, sys
limit = int(re.search(r"at most (\d+) items", open("/app/policy.txt").read()).group(1))
print(-(-len(open(sys.argv[1]).read().split()) // limit))
PY
