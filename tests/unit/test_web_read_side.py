"""The pages read through core's read model only (core/read_model.py): no module
in web/ runs SQL or imports a route module, so a page cannot show an event, a
hold or an order differently from the API."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import onsale.web

WEB = Path(onsale.web.__file__).parent

# What web/ may import from the tiers below it besides the kernel, each for a reason.
ALLOWED_CORE = frozenset({
    "onsale.core.read_model",  # the documents the API returns
    # the values those documents carry (pure StrEnums of the CHECK constraints)
    "onsale.core.hold_state", "onsale.core.order_state", "onsale.core.payment_state",
    "onsale.core.seat_state",
    "onsale.core.event_spec",  # pure validation of an event's fields
})
ALLOWED_OTHER_TIERS = frozenset({
    "onsale.edge.tokens",  # the queue-ticket cookie's name (pure)
})
ALWAYS_ALLOWED = ("onsale.kernel", "onsale.web")
# Methods that run SQL or hold a connection (asyncpg connections, kernel.db.Database).
SQL_METHODS = frozenset({
    "fetch", "fetchrow", "fetchval", "execute", "executemany", "cursor", "prepare",
    "copy_records_to_table", "copy_to_table", "copy_from_query", "transaction",
    "connection", "slow_connection", "acquire",
})
SQL_START = ("SELECT ", "INSERT ", "UPDATE ", "DELETE ", "WITH ")


def imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    """Every module an import names, ``from onsale.core import x`` as ``onsale.core.x``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            if node.module in ("onsale", "onsale.core", "onsale.edge", "onsale.seatmap",
                               "onsale.psp"):
                found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def violations(source: str) -> list[str]:
    """What in one module of web/ reaches past the read model."""
    tree = ast.parse(source)
    found: list[str] = []
    for line, module in imported_modules(tree):
        if module == "asyncpg" or module.startswith("asyncpg."):
            found.append(f"{line}: imports {module}")
        if not module.startswith("onsale.") or module.startswith(ALWAYS_ALLOWED):
            continue
        if module in ("onsale.core", "onsale.edge", "onsale.seatmap", "onsale.psp"):
            continue  # the package itself: its names are checked one by one above
        if module not in ALLOWED_CORE | ALLOWED_OTHER_TIERS:
            found.append(f"{line}: imports {module}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id == "queries":
                found.append(f"{node.lineno}: calls queries()")
            elif isinstance(func, ast.Attribute) and func.attr in SQL_METHODS:
                found.append(f"{node.lineno}: calls .{func.attr}()")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if node.value.lstrip().upper().startswith(SQL_START):
                found.append(f"{node.lineno}: SQL text {node.value[:30]!r}")
    return found


def test_web_modules_issue_no_sql_and_import_no_route_module() -> None:
    modules = sorted(WEB.glob("*.py"))
    assert {"shop_pages.py", "seat_pages.py", "ops_pages.py"} <= {p.name for p in modules}
    problems = {p.name: v for p in modules if (v := violations(p.read_text()))}
    assert problems == {}


def test_the_allowed_modules_exist() -> None:
    for module in ALLOWED_CORE | ALLOWED_OTHER_TIERS:
        assert importlib.util.find_spec(module) is not None, module


def test_the_scan_catches_what_it_forbids() -> None:
    bad = '''
from onsale.core.holds import hold_json
from onsale.core import checkout
from onsale.core.queries import queries
import asyncpg

async def page(request, db):
    async with db.connection() as conn:
        await conn.fetchrow(queries("holds")["get_hold"], 1)
        await conn.fetchval("SELECT now()")
'''
    found = " ".join(violations(bad))
    for expected in ("onsale.core.holds", "onsale.core.checkout", "onsale.core.queries",
                     "asyncpg", "queries()", ".connection()", ".fetchrow()", ".fetchval()",
                     "SQL text"):
        assert expected in found, expected
    assert violations("from onsale.core.read_model import hold_document\n"
                      "from onsale.kernel.db import Database\n") == []
