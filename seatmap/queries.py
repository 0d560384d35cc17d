"""Named SQL for the seat map, loaded from ``seatmap/sql/<name>.sql``."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from onsale.kernel.db import named_queries

SQL_DIR = Path(__file__).parent / "sql"
_IDENT = re.compile(r"[a-z_][a-z0-9_]{0,62}")


@cache
def queries(name: str) -> dict[str, str]:
    return named_queries(SQL_DIR / f"{name}.sql")


def identifier(name: str) -> str:
    """A slot or publication name, checked so it can be spliced into DDL."""
    if not _IDENT.fullmatch(name):
        raise ValueError(f"{name!r} is not a lower-case SQL identifier of at most 63 characters")
    return name
