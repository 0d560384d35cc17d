"""The catalogue of a database's `public` schema, as comparable text, and a diff of two.

Used by tests/integration/test_migrate.py to require that the migrations (and the
function files) build exactly the schema that core/schema.sql (and the same function
files) declare. Every object
is keyed by its name and described by PostgreSQL's own deparsing functions
(pg_get_constraintdef, pg_get_indexdef, pg_get_triggerdef, pg_get_functiondef...),
so two databases compare equal only if the server sees the same objects.
"""

from __future__ import annotations

from typing import Any

# migrate()'s own bookkeeping: created by core/migrate.py, not declared in schema.sql.
BOOKKEEPING = ("schema_migrations", "schema_functions")

Catalogue = dict[str, dict[str, str]]

_RELATIONS = """
SELECT c.relname, c.relkind, c.relpersistence, c.relreplident, c.relrowsecurity,
       coalesce(array_to_string(c.reloptions, ','), '') AS options,
       coalesce((SELECT string_agg(a.attname, ', ' ORDER BY a.attnum)
                 FROM pg_attribute a
                 WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped), '')
           AS columns,
       CASE WHEN c.relkind IN ('v', 'm') THEN pg_get_viewdef(c.oid, true) END AS viewdef
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'c')
  AND c.relname <> ALL ($1::text[])
"""

_COLUMNS = """
SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod) AS type,
       a.attnotnull, pg_get_expr(d.adbin, d.adrelid) AS default, a.attidentity,
       a.attgenerated, coalesce(co.collname, '') AS collation
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
LEFT JOIN pg_collation co ON co.oid = a.attcollation AND a.attcollation <> 100
WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'c')
  AND a.attnum > 0 AND NOT a.attisdropped AND c.relname <> ALL ($1::text[])
"""

_CONSTRAINTS = """
SELECT coalesce(c.relname, t.typname) AS owner, k.conname, k.contype,
       pg_get_constraintdef(k.oid, true) AS def
FROM pg_constraint k
LEFT JOIN pg_class c ON c.oid = k.conrelid
LEFT JOIN pg_type t ON t.oid = k.contypid
WHERE k.connamespace = 'public'::regnamespace
  AND coalesce(c.relname, '') <> ALL ($1::text[])
"""

_INDEXES = """
SELECT i.relname, pg_get_indexdef(x.indexrelid) AS def
FROM pg_index x
JOIN pg_class i ON i.oid = x.indexrelid
JOIN pg_class t ON t.oid = x.indrelid
WHERE i.relnamespace = 'public'::regnamespace AND t.relname <> ALL ($1::text[])
"""

_TRIGGERS = """
SELECT c.relname, g.tgname, pg_get_triggerdef(g.oid, true) AS def,
       g.tgenabled
FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid
WHERE c.relnamespace = 'public'::regnamespace AND NOT g.tgisinternal
"""

_FUNCTIONS = """
SELECT p.oid::regprocedure::text AS signature,
       CASE WHEN p.prokind = 'a' THEN 'aggregate' ELSE pg_get_functiondef(p.oid) END AS def
FROM pg_proc p
WHERE p.pronamespace = 'public'::regnamespace
  AND NOT EXISTS (SELECT 1 FROM pg_depend d
                  WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid
                    AND d.deptype = 'e')
"""

_SEQUENCES = """
SELECT c.relname, format_type(s.seqtypid, NULL) AS type, s.seqstart, s.seqincrement,
       s.seqmax, s.seqmin, s.seqcache, s.seqcycle,
       coalesce((SELECT o.relname || '.' || a.attname || ' (' || d.deptype::text || ')'
                 FROM pg_depend d
                 JOIN pg_class o ON o.oid = d.refobjid
                 JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
                 WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid
                   AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i')
                 LIMIT 1), '') AS owned_by
FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid
WHERE c.relnamespace = 'public'::regnamespace
"""

_TYPES = """
SELECT t.typname, t.typtype,
       CASE t.typtype
           WHEN 'e' THEN (SELECT string_agg(e.enumlabel, ', ' ORDER BY e.enumsortorder)
                          FROM pg_enum e WHERE e.enumtypid = t.oid)
           WHEN 'd' THEN format_type(t.typbasetype, t.typtypmod) || ' notnull='
                         || t.typnotnull::text || ' default=' || coalesce(t.typdefault, '')
           ELSE '' END AS def
FROM pg_type t
WHERE t.typnamespace = 'public'::regnamespace AND t.typtype IN ('e', 'd', 'r', 'm')
"""

_EXTENSIONS = """
SELECT e.extname, e.extversion, n.nspname
FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
WHERE e.extname <> 'plpgsql'
"""


def _char(value: Any) -> str:
    """A `"char"` column (asyncpg returns bytes), with NUL (unset) as '-'."""
    if isinstance(value, bytes):
        value = value.decode()
    return str(value).strip("\x00") or "-"


async def catalogue(conn: Any, exclude: tuple[str, ...] = BOOKKEEPING) -> Catalogue:
    """Every object of the `public` schema, by kind then name, described as text."""
    skip = list(exclude)
    cat: Catalogue = {kind: {} for kind in (
        "relations", "columns", "constraints", "indexes", "triggers", "functions",
        "sequences", "types", "extensions")}
    for r in await conn.fetch(_RELATIONS, skip):
        cat["relations"][r["relname"]] = (
            f"kind={_char(r['relkind'])} persistence={_char(r['relpersistence'])} "
            f"replica_identity={_char(r['relreplident'])} row_security={r['relrowsecurity']} "
            f"options=[{r['options']}] columns=({r['columns']})"
            + (f" view={r['viewdef']}" if r["viewdef"] is not None else ""))
    for r in await conn.fetch(_COLUMNS, skip):
        cat["columns"][f"{r['relname']}.{r['attname']}"] = (
            f"{r['type']} {'NOT NULL' if r['attnotnull'] else 'NULL'}"
            f" default={r['default']} identity={_char(r['attidentity'])}"
            f" generated={_char(r['attgenerated'])} collation={r['collation'] or '-'}")
    for r in await conn.fetch(_CONSTRAINTS, skip):
        cat["constraints"][f"{r['owner']}.{r['conname']}"] = f"{_char(r['contype'])}: {r['def']}"
    for r in await conn.fetch(_INDEXES, skip):
        cat["indexes"][r["relname"]] = r["def"]
    for r in await conn.fetch(_TRIGGERS):
        cat["triggers"][f"{r['relname']}.{r['tgname']}"] = (
            f"{r['def']} enabled={_char(r['tgenabled'])}")
    for r in await conn.fetch(_FUNCTIONS):
        cat["functions"][r["signature"]] = r["def"]
    for r in await conn.fetch(_SEQUENCES):
        cat["sequences"][r["relname"]] = (
            f"{r['type']} start={r['seqstart']} increment={r['seqincrement']}"
            f" min={r['seqmin']} max={r['seqmax']} cache={r['seqcache']}"
            f" cycle={r['seqcycle']} owned_by={r['owned_by']}")
    for r in await conn.fetch(_TYPES):
        cat["types"][r["typname"]] = f"{_char(r['typtype'])}: {r['def']}"
    for r in await conn.fetch(_EXTENSIONS):
        cat["extensions"][r["extname"]] = f"{r['extversion']} in {r['nspname']}"
    return cat


def diff(left: Catalogue, right: Catalogue, names: tuple[str, str] = ("left", "right")
         ) -> list[str]:
    """One line per object that is missing on one side or described differently."""
    out: list[str] = []
    for kind in sorted(set(left) | set(right)):
        a, b = left.get(kind, {}), right.get(kind, {})
        for key in sorted(set(a) | set(b)):
            if key not in b:
                out.append(f"{kind} {key}: only in {names[0]}: {a[key]}")
            elif key not in a:
                out.append(f"{kind} {key}: only in {names[1]}: {b[key]}")
            elif a[key] != b[key]:
                out.append(f"{kind} {key}: differs\n  {names[0]}: {a[key]}\n"
                           f"  {names[1]}: {b[key]}")
    return out
