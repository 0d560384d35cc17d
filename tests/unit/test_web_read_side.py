"""The pages read through core's read model only (core/read_model.py): no module in
web/ runs SQL, so a page cannot show an event, a hold or an order differently from
the API.

What web/ may import is a contract, not this test: "web reads through core's read
model" in pyproject.toml (``[tool.importlinter]``, checked by ``make lint``) allows
the read model, the pure values its documents carry and the queue-ticket cookie's
name, and forbids the rest of the tiers below and asyncpg. It cannot see a call or a
string, so this scan looks for those."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import onsale.web

WEB = Path(onsale.web.__file__).parent
PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"

# Methods that run SQL or hold a connection (asyncpg connections, kernel.db.Database).
SQL_METHODS = frozenset({
    "fetch", "fetchrow", "fetchval", "execute", "executemany", "cursor", "prepare",
    "copy_records_to_table", "copy_to_table", "copy_from_query", "transaction",
    "connection", "slow_connection", "acquire",
})
SQL_START = ("SELECT ", "INSERT ", "UPDATE ", "DELETE ", "WITH ")


def violations(source: str) -> list[str]:
    """The SQL one module of web/ would run itself."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
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


def test_web_modules_issue_no_sql() -> None:
    modules = sorted(WEB.glob("*.py"))
    assert {"shop_pages.py", "seat_pages.py", "ops_pages.py"} <= {p.name for p in modules}
    problems = {p.name: v for p in modules if (v := violations(p.read_text()))}
    assert problems == {}


def test_the_scan_catches_what_it_forbids() -> None:
    bad = '''
async def page(request, db):
    async with db.connection() as conn:
        await conn.fetchrow(queries("holds")["get_hold"], 1)
        await conn.fetchval("SELECT now()")
'''
    found = " ".join(violations(bad))
    for expected in ("queries()", ".connection()", ".fetchrow()", ".fetchval()", "SQL text"):
        assert expected in found, expected
    assert violations("from onsale.core.read_model import hold_document\n") == []


def test_the_import_rule_is_a_contract_make_lint_checks() -> None:
    contracts = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]["contracts"]
    rule = {c["name"]: c for c in contracts}["web reads through core's read model"]
    assert rule["type"] == "forbidden" and rule["source_modules"] == ["onsale.web"]
    assert {"onsale.core", "onsale.edge", "onsale.seatmap", "onsale.psp",
            "asyncpg"} <= set(rule["forbidden_modules"])
