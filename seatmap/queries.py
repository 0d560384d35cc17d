"""Named SQL for the seat map, loaded from ``seatmap/sql/<name>.sql`` (as core.db.queries)."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

SQL_DIR = Path(__file__).parent / "sql"
_NAME = re.compile(r"^--\s*name:\s*(\w+)\s*$", re.MULTILINE)
_IDENT = re.compile(r"[a-z_][a-z0-9_]{0,62}")


@cache
def queries(name: str) -> dict[str, str]:
    parts = _NAME.split((SQL_DIR / f"{name}.sql").read_text())
    return {parts[i]: parts[i + 1].strip().rstrip(";") for i in range(1, len(parts), 2)}


def identifier(name: str) -> str:
    """A slot or publication name, checked so it can be spliced into DDL."""
    if not _IDENT.fullmatch(name):
        raise ValueError(f"{name!r} is not a lower-case SQL identifier of at most 63 characters")
    return name
