"""Core's named SQL, loaded from ``core/sql/<name>.sql``."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from onsale.kernel.db import named_queries

SQL_DIR = Path(__file__).parent / "sql"


@cache
def queries(name: str) -> dict[str, str]:
    return named_queries(SQL_DIR / f"{name}.sql")
