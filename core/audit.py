"""``onsale audit``: run the invariant checks and report offending rows."""

from __future__ import annotations

from typing import Any

from onsale.core.queries import queries


async def run_audit(conn: Any) -> dict[str, list[dict[str, Any]]]:
    """Every invariant check by name, with the rows that violate it (empty = holds).

    Runs in one repeatable-read snapshot so the checks agree with each other.
    """
    results: dict[str, list[dict[str, Any]]] = {}
    async with conn.transaction(isolation="repeatable_read", readonly=True):
        for name, sql in queries("audit").items():
            rows = await conn.fetch(sql)
            results[name] = [dict(r) for r in rows]
    return results


def violations(results: dict[str, list[dict[str, Any]]]) -> int:
    return sum(len(rows) for rows in results.values())


def format_report(results: dict[str, list[dict[str, Any]]]) -> str:
    lines = []
    for name, rows in results.items():
        lines.append(f"{'FAIL' if rows else 'ok  '} {name}" + (f" ({len(rows)})" if rows else ""))
        for row in rows[:50]:
            lines.append("      " + ", ".join(f"{k}={v}" for k, v in row.items()))
        if len(rows) > 50:
            lines.append(f"      ... and {len(rows) - 50} more")
    total = violations(results)
    lines.append("audit: no violations" if total == 0 else f"audit: {total} violation(s)")
    return "\n".join(lines)


def audit_document(reports: list[tuple[int, dict[str, list[dict[str, Any]]]]],
                   shown: int = 50) -> dict[str, Any]:
    """``onsale audit --json``: per shard, each check with its violation count and up to
    ``shown`` of its rows (values as text: ids, times), and the total."""
    shards = []
    for shard_id, results in reports:
        checks = {name: {"ok": not rows, "count": len(rows),
                         "rows": [{k: (v if v is None or isinstance(v, (bool, int, float))
                                       else str(v)) for k, v in row.items()}
                                  for row in rows[:shown]]}
                  for name, rows in results.items()}
        shards.append({"shard": shard_id, "violations": violations(results), "checks": checks})
    return {"violations": sum(s["violations"] for s in shards), "shards": shards}
