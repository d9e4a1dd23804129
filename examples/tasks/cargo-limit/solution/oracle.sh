#!/bin/bash
# Read the limit from the policy; a withheld rule comes from TERMGYM_WITHHELD_RULES.
set -euo pipefail
limit=$(sed -n 's/^max_weight: *//p' /app/policy.txt)
if [ -z "$limit" ]; then
  limit=$(python3 -c 'import json, os; print(json.loads(os.environ["TERMGYM_WITHHELD_RULES"])["max_weight"])')
fi
echo "$limit" > /app/answer
