"""Hidden checks: the active_customers view applies the window and minimum to any data.

The data the view is run on is the same whatever the definitions' values (orders on every
day around every window they may set, customers with every count around every minimum),
so the view cannot read the values off the data; the expected rows stay in this process.
"""

from __future__ import annotations

import sqlite3
from datetime import date, timedelta

from shoplib import APP, copy_db

OFFSETS = range(-1, 126)  # days back from the reporting date, past every active_days (7-120)
COUNTS = range(0, 6)  # qualifying orders, around every min_orders (1-4)
OLDER = 130  # days back: outside every window


def expected(db: sqlite3.Connection, rules: dict) -> set[tuple[int, str]]:
    as_of = date.fromisoformat(
        db.execute("SELECT value FROM meta WHERE key = 'as_of'").fetchone()[0]
    )
    start = as_of - timedelta(days=rules["active_days"])
    counts: dict[int, int] = {}
    for cid, day, status in db.execute("SELECT customer_id, ordered_on, status FROM orders"):
        if status != "cancelled" and start <= date.fromisoformat(day) <= as_of:
            counts[cid] = counts.get(cid, 0) + 1
    names = dict(db.execute("SELECT id, name FROM customers"))
    return {(cid, names[cid]) for cid, n in counts.items() if n >= rules["min_orders"]}


def view_rows(db: sqlite3.Connection) -> list[tuple[int, str]]:
    return [tuple(r) for r in db.execute("SELECT customer_id, name FROM active_customers")]


def test_the_view_lists_the_active_customers_of_the_shipped_data(tmp_path, rules):
    db = copy_db(tmp_path)
    rows = view_rows(db)
    assert len(rows) == len(set(rows)), "the view lists a customer more than once"
    assert set(rows) == expected(db, rules)


def test_the_answer_is_the_number_of_active_customers(tmp_path, rules):
    answer = (APP / "answer.txt").read_text().strip()
    assert answer == str(len(expected(copy_db(tmp_path), rules)))


def test_the_view_follows_new_data_and_a_new_reporting_date(tmp_path, rules):
    db = copy_db(tmp_path)
    as_of = date(2025, 3, 15)
    db.execute("UPDATE meta SET value = ? WHERE key = 'as_of'", (as_of.isoformat(),))
    db.execute("DELETE FROM orders")
    db.execute("DELETE FROM customers")
    cid, oid = 100, 1000
    for offset in OFFSETS:
        for n in COUNTS:
            cid += 1
            db.execute(
                "INSERT INTO customers VALUES (?, ?, ?, '2023-01-01')",
                (cid, f"Customer {cid}", f"c{cid}@example.org"),
            )
            extras = [("cancelled", 0), ("paid", OLDER), ("paid", -3)]
            for k in range(n):
                extras.append(("paid" if k % 2 else "shipped", offset))
            for status, back in extras:
                oid += 1
                day = (as_of - timedelta(days=back)).isoformat()
                db.execute("INSERT INTO orders VALUES (?, ?, ?, ?, 10.0)", (oid, cid, day, status))
    db.commit()
    assert set(view_rows(db)) == expected(db, rules)
