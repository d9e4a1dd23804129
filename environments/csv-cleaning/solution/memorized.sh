#!/usr/bin/env bash
# Hard-coded solution: the original rules (outliers above 1000, ISO dates) hard-coded.
set -euo pipefail

# step: write clean.py with the remembered rules (1000, ISO dates)
APP="${TERMGYM_WORKDIR:-/app}"
cat > "$APP/clean.py" <<PY
"""Clean a sales export (CSV) into JSON."""
import csv
import json
import os
import re
import sys
from datetime import datetime

HERE = os.path.dirname(os.path.abspath(__file__))


def amount_of(text):
    text = text.strip().removeprefix("\$")
    if not re.fullmatch(r"(\d{1,3}(,\d{3})+|\d+)(\.\d+)?|\.\d+", text):
        return None
    return float(text.replace(",", ""))


def date_of(text):
    text = text.strip()
    for pattern, fmt in ((r"\d{4}-\d{2}-\d{2}", "%Y-%m-%d"), (r"\d{2}\.\d{2}\.\d{4}", "%d.%m.%Y")):
        if re.fullmatch(pattern, text):
            try:
                return datetime.strptime(text, fmt)
            except ValueError:
                return None
    return None


def main(src, dst):
    threshold = 1000.0
    date_format = "%Y-%m-%d"
    kept = {}
    with open(src, newline="") as handle:
        for row in csv.DictReader(handle):
            rid = (row.get("id") or "").strip()
            customer = " ".join((row.get("customer") or "").split())
            date, amount = date_of(row.get("date") or ""), amount_of(row.get("amount") or "")
            if not rid.isdigit() or int(rid) < 1 or not customer or date is None:
                continue
            if amount is None or amount > threshold or int(rid) in kept:
                continue
            kept[int(rid)] = {"id": int(rid), "date": date.strftime(date_format),
                              "customer": customer, "amount": round(amount, 2)}
    with open(dst, "w") as handle:
        json.dump([kept[k] for k in sorted(kept)], handle, indent=2)


if __name__ == "__main__":
    args = sys.argv[1:] + [None, None]
    main(args[0] or os.path.join(HERE, "data", "raw.csv"),
         args[1] or os.path.join(HERE, "data", "clean.json"))
PY

# step: clean the export
python3 "$APP/clean.py"
