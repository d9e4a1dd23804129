"""Shared by both hidden test files: the agent's database with the shipped rows put back."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

APP = Path(os.environ.get("TERMGYM_WORKDIR", "/app"))
SEED = Path(__file__).with_name("seed.sql")
TABLES = ("meta", "customers", "orders")


def copy_db(tmp_path: Path) -> sqlite3.Connection:
    """A copy of the agent's database (its views kept) holding the shipped data again."""
    shutil.copy(APP / "shop.db", tmp_path / "shop.db")
    db = sqlite3.connect(tmp_path / "shop.db")
    seed = sqlite3.connect(":memory:")
    seed.executescript(SEED.read_text())
    for table in TABLES:
        db.execute(f"DELETE FROM {table}")
        rows = seed.execute(f"SELECT * FROM {table}").fetchall()
        marks = ", ".join("?" * len(rows[0]))
        db.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
    db.commit()
    return db
