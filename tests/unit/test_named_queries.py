"""Every named query (``-- name: x`` in core/sql, edge/sql, seatmap/sql) is used:
some module of the onsale package names it in a string literal, so a query
nobody runs any more cannot stay behind (or come back)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import onsale
import onsale.core
import onsale.core.queries
import onsale.edge
import onsale.edge.queries
import onsale.psp
import onsale.seatmap
import onsale.seatmap.queries
import onsale.web

SQL_DIRS = {
    "core": onsale.core.queries.SQL_DIR,
    "edge": onsale.edge.queries.SQL_DIR,
    "seatmap": onsale.seatmap.queries.SQL_DIR,
}
PACKAGES = [Path(p.__file__).parent for p in (onsale, onsale.core, onsale.edge,
                                                onsale.seatmap, onsale.psp, onsale.web)]
# Files run whole, block by block, never by name: (tier, file stem) -> the code
# that runs every block.
RUN_WHOLE = {("core", "audit"): 'queries("audit").items()'}
_NAME = re.compile(r"^--\s*name:\s*(\w+)\s*$", re.MULTILINE)


def sources() -> dict[Path, str]:
    return {p: p.read_text() for package in PACKAGES for p in package.rglob("*.py")}


def string_literals(texts: dict[Path, str]) -> set[str]:
    return {node.value for text in texts.values() for node in ast.walk(ast.parse(text))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)}


def named_blocks() -> dict[tuple[str, str], list[str]]:
    return {(tier, path.stem): _NAME.findall(path.read_text())
            for tier, folder in SQL_DIRS.items() for path in sorted(folder.glob("*.sql"))}


def test_the_sql_files_are_found() -> None:
    blocks = named_blocks()
    assert {("core", "holds"), ("core", "events"), ("edge", "queue"),
            ("seatmap", "cdc")} <= set(blocks)
    assert sum(len(names) for names in blocks.values()) > 50


def test_names_are_unique_within_a_file() -> None:
    for where, names in named_blocks().items():
        assert len(names) == len(set(names)), where


def test_every_named_query_is_named_by_some_module() -> None:
    texts = sources()
    literals = string_literals(texts)
    unused = []
    for (tier, stem), names in named_blocks().items():
        if (tier, stem) in RUN_WHOLE:
            continue
        unused += [f"{tier}/sql/{stem}.sql: {name}" for name in names if name not in literals]
    assert unused == []


def test_the_files_run_whole_are_run_whole() -> None:
    joined = "\n".join(sources().values())
    for (tier, stem), code in RUN_WHOLE.items():
        assert (SQL_DIRS[tier] / f"{stem}.sql").exists()
        assert code in joined, code
