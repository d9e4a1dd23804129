"""Reference cleaning (hidden): what clean.py must produce for an export and a rule set."""

from __future__ import annotations

import csv
import io
import re
from datetime import datetime


def parse_amount(text: str) -> float | None:
    text = text.strip()
    if text.startswith("$"):
        text = text[1:]
    if not re.fullmatch(r"(\d{1,3}(,\d{3})+|\d+)(\.\d+)?|\.\d+", text):
        return None
    return float(text.replace(",", ""))


def parse_date(text: str) -> datetime | None:
    text = text.strip()
    for pattern, fmt in ((r"\d{4}-\d{2}-\d{2}", "%Y-%m-%d"), (r"\d{2}\.\d{2}\.\d{4}", "%d.%m.%Y")):
        if re.fullmatch(pattern, text):
            try:
                return datetime.strptime(text, fmt)
            except ValueError:
                return None
    return None


def clean(text: str, rules: dict) -> list[dict]:
    kept: dict[int, dict] = {}
    for row in csv.DictReader(io.StringIO(text)):
        raw_id = (row.get("id") or "").strip()
        customer = " ".join((row.get("customer") or "").split())
        date = parse_date(row.get("date") or "")
        amount = parse_amount(row.get("amount") or "")
        if not raw_id.isdigit() or int(raw_id) < 1 or not customer:
            continue
        if date is None or amount is None or amount > rules["outlier_threshold"]:
            continue
        if int(raw_id) in kept:
            continue
        kept[int(raw_id)] = {
            "id": int(raw_id),
            "date": date.strftime(rules["date_format"]),
            "customer": customer,
            "amount": round(amount, 2),
        }
    return [kept[k] for k in sorted(kept)]


def same(got: object, want: list[dict]) -> bool:
    """Equal row for row, amounts within a cent's rounding."""
    if not isinstance(got, list) or len(got) != len(want):
        return False
    for g, w in zip(got, want, strict=True):
        if not isinstance(g, dict) or set(g) != set(w):
            return False
        if (g["id"], g["date"], g["customer"]) != (w["id"], w["date"], w["customer"]):
            return False
        if not isinstance(g["amount"], (int, float)) or abs(g["amount"] - w["amount"]) > 1e-6:
            return False
    return True
