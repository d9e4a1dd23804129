#!/usr/bin/env bash
# Hard-coded solution: the original definitions (30-day window, at least 2 orders) hard-coded.
set -euo pipefail

# step: create the view with the remembered definitions (30 days, 2 orders)
APP="${TERMGYM_WORKDIR:-/app}"
python3 - "$APP" <<'PY'
import os, sqlite3, sys
app = sys.argv[1]
db = sqlite3.connect(os.path.join(app, "shop.db"))
db.executescript("""
DROP VIEW IF EXISTS active_customers;
CREATE VIEW active_customers AS
SELECT c.id AS customer_id, c.name AS name
FROM customers AS c JOIN orders AS o ON o.customer_id = c.id
WHERE o.status <> 'cancelled'
  AND o.ordered_on BETWEEN date((SELECT value FROM meta WHERE key = 'as_of'), '-30 days')
                       AND (SELECT value FROM meta WHERE key = 'as_of')
GROUP BY c.id, c.name
HAVING COUNT(*) >= 2;
""")
count = db.execute("SELECT COUNT(*) FROM active_customers").fetchone()[0]
db.close()
open(os.path.join(app, "answer.txt"), "w").write(f"{count}\n")
PY
