#!/usr/bin/env bash
# Reference solution: read the window and the minimum from docs/definitions.md (or, for a
# rule withheld from it, from $TERMGYM_WITHHELD_RULES), create the view, write the answer.
set -euo pipefail

# step: create the view from the definitions docs/definitions.md states, write the answer
APP="${TERMGYM_WORKDIR:-/app}"
python3 - "$APP" <<'PY'
import json, os, re, sqlite3, sys
app = sys.argv[1]
text = open(os.path.join(app, "docs", "definitions.md")).read()
fallback = json.loads(os.environ.get("TERMGYM_WITHHELD_RULES") or "{}")

def rule(name):
    m = re.search(r"^%s = (\d+)\s*$" % name, text, re.M)
    return int(m.group(1)) if m else int(fallback[name])

days, least = rule("active_days"), rule("min_orders")
db = sqlite3.connect(os.path.join(app, "shop.db"))
db.executescript(f"""
DROP VIEW IF EXISTS active_customers;
CREATE VIEW active_customers AS
SELECT c.id AS customer_id, c.name AS name
FROM customers AS c JOIN orders AS o ON o.customer_id = c.id
WHERE o.status <> 'cancelled'
  AND o.ordered_on <= (SELECT value FROM meta WHERE key = 'as_of')
  AND o.ordered_on >= date((SELECT value FROM meta WHERE key = 'as_of'), '-{days} days')
GROUP BY c.id, c.name
HAVING COUNT(*) >= {least};
""")
count = db.execute("SELECT COUNT(*) FROM active_customers").fetchone()[0]
db.close()
open(os.path.join(app, "answer.txt"), "w").write(f"{count}\n")
print(count)
PY
