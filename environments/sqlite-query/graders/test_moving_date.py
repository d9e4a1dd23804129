"""Hidden checks (pool): the view's columns, and its rows as the reporting date moves."""

from __future__ import annotations

import shutil
import sqlite3
from datetime import date, timedelta

from shoplib import APP, copy_db


def active(db: sqlite3.Connection, as_of: date, rules: dict) -> set[int]:
    start = as_of - timedelta(days=rules["active_days"])
    counts: dict[int, int] = {}
    for cid, day, status in db.execute("SELECT customer_id, ordered_on, status FROM orders"):
        if status != "cancelled" and start <= date.fromisoformat(day) <= as_of:
            counts[cid] = counts.get(cid, 0) + 1
    return {cid for cid, n in counts.items() if n >= rules["min_orders"]}


def test_the_view_has_exactly_the_two_columns(tmp_path):
    shutil.copy(APP / "shop.db", tmp_path / "shop.db")
    db = sqlite3.connect(tmp_path / "shop.db")
    kind = db.execute("SELECT type FROM sqlite_master WHERE name = 'active_customers'").fetchone()
    assert kind == ("view",), f"active_customers should be a view, found {kind}"
    cursor = db.execute("SELECT * FROM active_customers")
    assert [d[0] for d in cursor.description] == ["customer_id", "name"]


def test_the_view_follows_the_reporting_date_through_the_year(tmp_path, rules):
    db = copy_db(tmp_path)
    for days_back in range(0, 181, 9):
        as_of = date(2024, 7, 3) - timedelta(days=days_back)
        db.execute("UPDATE meta SET value = ? WHERE key = 'as_of'", (as_of.isoformat(),))
        got = [r[0] for r in db.execute("SELECT customer_id FROM active_customers")]
        assert len(got) == len(set(got)), f"duplicates as of {as_of}"
        assert set(got) == active(db, as_of, rules), f"as of {as_of}"
