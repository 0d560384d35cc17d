"""core.migrate: loading numbered migrations and function files, checksums, ordering,
and the apply loop (driven with a fake connection; the real database path is an
integration test). Also the shape of core/schema.sql and the catalogue diff."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from onsale.core.migrate import (
    FUNCTIONS_DIR,
    MIGRATIONS_DIR,
    SCHEMA_FILE,
    FunctionFile,
    MigrateResult,
    Migration,
    MigrationError,
    Step,
    forgotten,
    function_steps,
    is_current,
    load_functions,
    load_migrations,
    migration_step,
    pending_migrations,
)
from tests.schema_catalogue import diff


def write(directory: Path, files: dict[str, str]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, sql in files.items():
        (directory / name).write_text(sql)
    return directory


def fn(name: str, body: str = "SELECT 1", header: str = "") -> str:
    """A function file's text."""
    return (f"{header}CREATE OR REPLACE FUNCTION {name}() RETURNS integer "
            f"LANGUAGE sql AS $$ {body} $$;\n")


# --- the real directories ------------------------------------------------------------------


def test_real_migrations_are_numbered_one_to_n() -> None:
    found = load_migrations()
    assert found, "no migrations found"
    assert [m.version for m in found] == list(range(1, len(found) + 1))


def test_real_migrations_match_their_files() -> None:
    found = load_migrations(MIGRATIONS_DIR)
    files = sorted(p for p in MIGRATIONS_DIR.glob("*.sql"))
    assert [f"{m.version:04d}_{m.name}.sql" for m in found] == [p.name for p in files]
    for m, path in zip(found, files, strict=True):
        assert m.sql == path.read_text()
        assert m.sql.strip()


def test_real_migrations_start_with_inventory() -> None:
    first = load_migrations()[0]
    assert (first.version, first.name) == (1, "inventory")
    assert "CREATE TABLE" in first.sql


def test_real_migrations_define_no_functions() -> None:
    """Migrations hold DDL and data changes; functions live in core/sql/functions/."""
    create = re.compile(r"\bCREATE\s+(OR\s+REPLACE\s+)?(FUNCTION|PROCEDURE)\b", re.IGNORECASE)
    for m in load_migrations():
        assert not create.search(m.sql), f"{m.version:04d}_{m.name} creates a function"


def test_real_migration_requirements_are_function_files() -> None:
    names = {f.name for f in load_functions()}
    for m in load_migrations():
        assert set(m.requires) <= names


def test_real_function_files() -> None:
    files = load_functions()
    assert files, "no function files found"
    paths = sorted(FUNCTIONS_DIR.glob("*.sql"))
    assert sorted(f.name for f in files) == [p.stem for p in paths]
    for f in files:
        assert f.name.startswith("onsale_")
        assert f.sql.startswith(f"-- {f.name}"), f"{f.name}.sql: start with what it is"
        assert f.name in f.defines
    defined = [name for f in files for name in f.defines]
    assert len(defined) == len(set(defined)), "a function is defined in two files"


def test_named_queries_and_functions_do_not_mix() -> None:
    """core/sql/*.sql are `-- name:` query files; functions only in sql/functions/."""
    for path in FUNCTIONS_DIR.glob("*.sql"):
        assert "-- name:" not in path.read_text(), path.name
    for path in FUNCTIONS_DIR.parent.glob("*.sql"):
        assert not re.search(r"CREATE\s+(OR\s+REPLACE\s+)?FUNCTION", path.read_text(),
                             re.IGNORECASE), path.name


# --- core/schema.sql: each object once ------------------------------------------------------

_DECLARED = re.compile(
    r"^CREATE\s+(?:UNIQUE\s+)?(TABLE|INDEX|FUNCTION|TRIGGER|VIEW|TYPE|SEQUENCE)\s+(\w+)",
    re.MULTILINE | re.IGNORECASE)


def _declared() -> list[tuple[str, str]]:
    return [(kind.upper(), name) for kind, name in _DECLARED.findall(SCHEMA_FILE.read_text())]


def test_schema_declares_each_object_once() -> None:
    declared = _declared()
    assert len(declared) == len(set(declared)), [d for d in declared if declared.count(d) > 1]
    kinds = {kind for kind, _ in declared}
    assert {"TABLE", "INDEX"} <= kinds


def test_schema_is_a_declaration_not_a_history() -> None:
    text = re.sub(r"\$\$.*?\$\$", "$$ $$", SCHEMA_FILE.read_text(), flags=re.DOTALL)
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))
    for word in ("ALTER", "DROP", "CREATE OR REPLACE", "INSERT", "UPDATE", "DELETE"):
        statements = re.findall(rf"^\s*{word}\b", code, re.MULTILINE | re.IGNORECASE)
        assert not statements, f"schema.sql has {word} statements"


def test_a_function_body_lives_only_in_its_file() -> None:
    """schema.sql copies no function: the catalogue test applies the files after it."""
    assert not [name for kind, name in _declared() if kind == "FUNCTION"]
    assert load_functions()  # and the files are there


def test_schema_declares_every_table_the_migrations_create() -> None:
    created = set()
    for m in load_migrations():
        created |= set(re.findall(r"^CREATE TABLE (\w+)", m.sql, re.MULTILINE))
    assert created == {name for kind, name in _declared() if kind == "TABLE"}


# --- temporary directories: migrations -----------------------------------------------------


def test_loads_in_version_order(tmp_path: Path) -> None:
    write(tmp_path, {"0002_b.sql": "B;", "0001_a.sql": "A;", "0003_c.sql": "C;"})
    found = load_migrations(tmp_path)
    assert found == [Migration(1, "a", "A;"), Migration(2, "b", "B;"), Migration(3, "c", "C;")]


def test_order_is_numeric_not_by_name(tmp_path: Path) -> None:
    files = {f"{i:04d}_{'z' * (12 - i)}.sql": f"-- {i}" for i in range(1, 12)}
    write(tmp_path, files)
    assert [m.version for m in load_migrations(tmp_path)] == list(range(1, 12))


def test_other_files_are_ignored(tmp_path: Path) -> None:
    write(tmp_path, {
        "0001_a.sql": "A;",
        "README.md": "notes",
        "0002_b.sql.bak": "old",
        "0002_b.txt": "txt",
        "2_b.sql": "short number",
        "00002_b.sql": "long number",
        "0002-b.sql": "dash",
        "0002_.sql": "no name",
        "0002_b c.sql": "space",
    })
    (tmp_path / "0003_dir.sql.d").mkdir()
    assert load_migrations(tmp_path) == [Migration(1, "a", "A;")]


def test_empty_directory(tmp_path: Path) -> None:
    assert load_migrations(tmp_path) == []


@pytest.mark.parametrize(
    "names",
    [
        ["0001_a.sql", "0003_c.sql"],
        ["0002_b.sql"],
        ["0002_b.sql", "0003_c.sql"],
        ["0000_zero.sql", "0001_a.sql"],
        ["0001_a.sql", "0002_b.sql", "0004_d.sql"],
        ["0001_a.sql", "0001_again.sql"],
        ["0001_a.sql", "0002_b.sql", "0002_c.sql"],
    ],
    ids=["gap", "no-first", "starts-at-two", "zero", "gap-at-end", "duplicate-first",
         "duplicate"],
)
def test_bad_numbering_is_refused(tmp_path: Path, names: list[str]) -> None:
    write(tmp_path, dict.fromkeys(names, "SELECT 1;"))
    with pytest.raises(MigrationError) as info:
        load_migrations(tmp_path)
    assert "without gaps" in str(info.value)


def test_gap_error_lists_the_versions(tmp_path: Path) -> None:
    write(tmp_path, {"0001_a.sql": "", "0002_b.sql": "", "0005_e.sql": ""})
    with pytest.raises(MigrationError, match=r"\[1, 2, 5\]"):
        load_migrations(tmp_path)


def test_missing_directory_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_migrations(tmp_path / "nope")


# --- requires: lines -----------------------------------------------------------------------


def test_requires_come_from_the_leading_comment() -> None:
    sql = ("-- 0009: a trigger\n--\n-- requires: onsale_a, onsale_b\n\n--requires:onsale_c\n"
           "CREATE TABLE t (id int);\n-- requires: onsale_not_this\n")
    assert Migration(9, "t", sql).requires == ("onsale_a", "onsale_b", "onsale_c")
    assert FunctionFile("x", sql).requires == ("onsale_a", "onsale_b", "onsale_c")


def test_no_requires() -> None:
    assert Migration(1, "a", "CREATE TABLE t (id int);").requires == ()
    assert Migration(1, "a", "").requires == ()


# --- temporary directories: function files -------------------------------------------------


def test_functions_load_in_name_order(tmp_path: Path) -> None:
    write(tmp_path, {"b.sql": fn("b"), "a.sql": fn("a"), "c.sql": fn("c")})
    assert [f.name for f in load_functions(tmp_path)] == ["a", "b", "c"]


def test_a_required_file_comes_first(tmp_path: Path) -> None:
    write(tmp_path, {
        "a.sql": fn("a", header="-- requires: c\n"),
        "b.sql": fn("b"),
        "c.sql": fn("c", header="-- requires: d\n"),
        "d.sql": fn("d"),
    })
    assert [f.name for f in load_functions(tmp_path)] == ["b", "d", "c", "a"]


def test_a_group_file_defines_several(tmp_path: Path) -> None:
    write(tmp_path, {"touch.sql": fn("touch") + fn("touch_trigger")})
    [f] = load_functions(tmp_path)
    assert f.defines == ("touch", "touch_trigger")


def test_function_file_names(tmp_path: Path) -> None:
    write(tmp_path, {"a.sql": fn("a"), "README.md": "notes", "a.sql.bak": fn("a"),
                     "B.sql": fn("B"), "0001_x.sql": fn("x"), "c-d.sql": fn("c")})
    (tmp_path / "dir.sql").mkdir()
    assert [f.name for f in load_functions(tmp_path)] == ["a"]


def test_function_files_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_functions(tmp_path / "nope")


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"a.sql": fn("b")}, "must CREATE OR REPLACE FUNCTION a"),
        ({"a.sql": "CREATE FUNCTION a() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;"},
         "must CREATE OR REPLACE FUNCTION a"),
        ({"a.sql": fn("a") + "CREATE FUNCTION a2() RETURNS int LANGUAGE sql AS $$ 1 $$;"},
         "not CREATE FUNCTION"),
        ({"a.sql": fn("a", header="-- requires: zz\n")}, "requires unknown"),
        ({"a.sql": fn("a", header="-- requires: a\n")}, "requires unknown"),
        ({"a.sql": fn("a", header="-- requires: b\n"),
          "b.sql": fn("b", header="-- requires: c\n"),
          "c.sql": fn("c", header="-- requires: a\n")}, r"cycle: \['a', 'b', 'c'\]"),
    ],
    ids=["misnamed", "plain-create-only", "plain-create", "unknown", "itself", "cycle"],
)
def test_bad_function_files_are_refused(tmp_path: Path, files: dict[str, str],
                                        message: str) -> None:
    write(tmp_path, files)
    with pytest.raises(MigrationError, match=message):
        load_functions(tmp_path)


# --- checksums -----------------------------------------------------------------------------


def test_checksum_is_sha256_of_the_sql() -> None:
    m = Migration(1, "a", "CREATE TABLE t (id int);")
    assert m.checksum == hashlib.sha256(b"CREATE TABLE t (id int);").hexdigest()
    assert FunctionFile("a", fn("a")).checksum == hashlib.sha256(fn("a").encode()).hexdigest()


def test_checksum_changes_when_the_sql_changes() -> None:
    base = Migration(1, "a", "CREATE TABLE t (id int);")
    for sql in ["CREATE TABLE t (id bigint);", "CREATE TABLE t (id int); ",
                "CREATE TABLE t (id int);\n", ""]:
        assert Migration(1, "a", sql).checksum != base.checksum


def test_checksum_depends_only_on_the_sql() -> None:
    assert Migration(1, "a", "X").checksum == Migration(7, "other", "X").checksum


def test_checksum_follows_the_file(tmp_path: Path) -> None:
    write(tmp_path, {"0001_a.sql": "CREATE TABLE t (id int);"})
    before = load_migrations(tmp_path)[0].checksum
    assert load_migrations(tmp_path)[0].checksum == before
    write(tmp_path, {"0001_a.sql": "CREATE TABLE t (id bigint);"})
    assert load_migrations(tmp_path)[0].checksum != before


def test_real_checksums_are_distinct() -> None:
    sums = [m.checksum for m in load_migrations()] + [f.checksum for f in load_functions()]
    assert len(set(sums)) == len(sums)


# --- the result ----------------------------------------------------------------------------


def test_result_describes_what_was_applied() -> None:
    assert not MigrateResult()
    assert MigrateResult().describe() == "schema is up to date"
    assert MigrateResult([1, 2]).describe() == "applied migrations [1, 2]"
    assert MigrateResult([], ["a", "b"]).describe() == "applied functions a, b"
    both = MigrateResult([3], ["a"])
    assert both and both.describe() == "applied migrations [3]; functions a"


# --- the plan: pure steps from literal files and database state ---------------------------


def mig(version: int, sql: str = "", name: str = "m") -> Migration:
    return Migration(version, name, sql or f"SELECT '{version}';")


def ff(name: str, body: str = "SELECT 1", requires: str = "") -> FunctionFile:
    return FunctionFile(name, fn(name, body, f"-- requires: {requires}\n" if requires else ""))


A, B, C = ff("f_a"), ff("f_b"), ff("f_c")
FILES = [A, B, C]
ALL = {"f_a", "f_b", "f_c"}


def sums(*files: FunctionFile) -> dict[str, str]:
    return {f.name: f.checksum for f in files}


def names(steps: list[Step]) -> list[list[str]]:
    return [[f.name for f in step.functions] for step in steps]


def test_every_migration_is_pending_on_a_new_database() -> None:
    ms = [mig(1), mig(2), mig(3)]
    assert pending_migrations(ms, [], {}) == ms


def test_applied_migrations_are_skipped() -> None:
    ms = [mig(1), mig(2), mig(3)]
    assert pending_migrations(ms, [], {1: ms[0].checksum, 2: ms[1].checksum}) == [ms[2]]
    assert pending_migrations(ms, [], {m.version: m.checksum for m in ms}) == []


def test_an_edited_applied_migration_is_refused() -> None:
    ms = [mig(1, name="a"), mig(2, name="b"), mig(3, name="c")]
    applied = {1: ms[0].checksum, 2: hashlib.sha256(b"the old text").hexdigest()}
    with pytest.raises(MigrationError, match="0002_b was changed after it was applied"):
        pending_migrations(ms, [], applied)


def test_a_migration_requiring_an_unknown_function_file_is_refused() -> None:
    ms = [mig(1), mig(2, "-- requires: f_zz\nSELECT 1;", name="t")]
    with pytest.raises(MigrationError, match=r"0002_t requires unknown function files \['f_zz'\]"):
        pending_migrations(ms, FILES, {})


def test_the_function_phase_applies_every_file_on_a_new_database() -> None:
    steps = function_steps(FILES, {}, set())
    assert names(steps) == [["f_a"], ["f_b"], ["f_c"]]  # one transaction each, in order
    assert all(step.migration is None for step in steps)


def test_current_files_are_not_applied() -> None:
    assert function_steps(FILES, sums(*FILES), ALL) == []
    assert is_current(A, sums(A), {"f_a"})


def test_only_a_changed_file_is_applied() -> None:
    recorded = sums(*FILES)
    changed = [A, ff("f_b", "SELECT 2"), C]
    assert names(function_steps(changed, recorded, ALL)) == [["f_b"]]


def test_a_new_file_is_applied() -> None:
    new = ff("f_new")
    assert names(function_steps([*FILES, new], sums(*FILES), ALL)) == [["f_new"]]


def test_a_recorded_function_missing_from_the_database_is_applied_again() -> None:
    """Recorded as current, but gone (a migration dropped it): created again."""
    assert names(function_steps(FILES, sums(*FILES), {"f_a", "f_c"})) == [["f_b"]]
    assert not is_current(B, sums(B), {"f_a"})


def test_a_removed_file_is_forgotten() -> None:
    assert forgotten({**sums(*FILES), "f_gone": "0" * 64}, FILES) == ["f_gone"]
    assert forgotten(sums(*FILES), FILES) == []


def test_the_function_phase_follows_the_files_order() -> None:
    """load_functions puts a file after those it requires; the steps keep that order."""
    a_after_c = ff("f_a", requires="f_c")
    assert names(function_steps([B, C, a_after_c], {}, set())) == [["f_b"], ["f_c"], ["f_a"]]


def test_a_migration_applies_the_functions_it_requires_first() -> None:
    """In its own transaction, just before its SQL (a trigger's function, say)."""
    b = ff("f_b", requires="f_c")
    files = [A, C, b]
    m = mig(2, "-- requires: f_b\nCREATE TABLE t (id int);")
    step = migration_step(m, files, {}, set())
    assert [f.name for f in step.functions] == ["f_c", "f_b"] and step.migration == m
    # what it applied is then current: the function phase leaves it alone
    assert names(function_steps(files, sums(C, b), {"f_c", "f_b"})) == [["f_a"]]


def test_a_migration_does_not_reapply_a_current_function() -> None:
    m = mig(1, "-- requires: f_b\nCREATE TABLE t (id int);")
    assert migration_step(m, FILES, sums(*FILES), ALL) == Step((), m)
    assert migration_step(mig(2), FILES, {}, set()) == Step((), mig(2))  # requires none


# --- the catalogue diff (tests/schema_catalogue.py) ----------------------------------------


def test_diff_of_equal_catalogues_is_empty() -> None:
    cat = {"columns": {"t.id": "integer NOT NULL"}, "functions": {"f()": "body"}}
    assert diff(cat, {k: dict(v) for k, v in cat.items()}) == []


def test_diff_reports_missing_extra_and_changed_objects() -> None:
    left = {"columns": {"t.id": "integer NOT NULL", "t.gone": "text NULL"},
            "functions": {"f()": "CREATE OR REPLACE FUNCTION f() ... v1"},
            "indexes": {}}
    right = {"columns": {"t.id": "bigint NOT NULL", "t.extra": "text NULL"},
             "functions": {"f()": "CREATE OR REPLACE FUNCTION f() ... v2"},
             "triggers": {"t.touch": "CREATE TRIGGER touch ..."}}
    lines = diff(left, right, ("migrated", "declared"))
    assert lines == [
        "columns t.extra: only in declared: text NULL",
        "columns t.gone: only in migrated: text NULL",
        "columns t.id: differs\n  migrated: integer NOT NULL\n  declared: bigint NOT NULL",
        "functions f(): differs\n  migrated: CREATE OR REPLACE FUNCTION f() ... v1\n"
        "  declared: CREATE OR REPLACE FUNCTION f() ... v2",
        "triggers t.touch: only in declared: CREATE TRIGGER touch ...",
    ]
