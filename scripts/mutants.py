"""Mutation testing of the invariant-bearing code (issue 22, part 5).

Applies one small mutation at a time to the hold, limit, expiry, release, payment and GA
functions (core/sql/functions/*.sql) and to the Python rules (core/*_rules.py,
core/*_state.py, the GA quota plan and batcher), runs the tests that guard that file
(``pytest -x``: the first failure kills the mutant), and prints a table: where, what,
killed or survived. docs/invariants.md#mutation-testing lists the survivors we keep and
why.

    .venv/bin/python scripts/mutants.py --list                     # the mutants, no run
    .venv/bin/python scripts/mutants.py --only onsale_sweep.sql    # one file's mutants
    .venv/bin/python scripts/mutants.py --only onsale_payment_apply.sql --ops rel --limit 20
    .venv/bin/python scripts/mutants.py --id onsale_sweep.sql:26:and:1

The mutations: a comparison swapped (``<`` ``<=``, ``>`` ``>=``, ``=`` ``<>``; in Python
also ``==`` ``!=``, ``in`` ``not in``, ``is`` ``is not``), one conjunct dropped from an
AND (``and``) or one disjunct from an OR (``or``), a NOT removed (``not``), a state
literal swapped for a neighbouring one ('HELD' -> 'EXPIRED'...) (``lit``), True and False
swapped (``bool``).

The repository is never written. The script copies the source tree (the packages as the
wheel lays them out, ``onsale/core``... as in the Makefile's .typecheck, and tests/) to a
temporary directory once, mutates the copy there, and runs pytest in it with that copy
first on the import path (the editable install's finder comes after it): the test
database is migrated from the copy's function files, so a mutated SQL function really is
the one the tests call, and engineers running tests or committing in the working tree
meanwhile never see a mutant. Every mutant is restored in the copy (try/finally) before
the next one; the copy is deleted at the end. It still refuses to start when a target
file has uncommitted changes (``--allow-dirty`` to mutate them anyway): the table is
meant to describe committed code.

Before the first mutant of a test set, that set runs once unmutated: a set that fails
without a mutant would kill everything, so the script stops. A killed mutant names the
first test that failed, to tell a real kill from a flaky one (re-run it with ``--id``).
Results: killed (a test failed), timeout (counted as killed), survived (every test
passed), invalid (the mutant is not valid SQL: the migration refused it; not counted).
Exit status 1 when a mutant survived.
"""

from __future__ import annotations

import argparse
import ast
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tokenize
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIERS = ("core", "edge", "seatmap", "web", "psp")  # mapped into onsale/ (pyproject.toml)
FUNCTIONS = "core/sql/functions"
IT = "tests/integration"

# The narrowest tests that guard each target: the fence tests first (fast kills).
_EXPIRY = (f"{IT}/test_expiry.py", f"{IT}/test_expiry_function_paths.py",
           f"{IT}/test_ga_expiry.py", f"{IT}/test_ga_holds.py")
_HOLDS = (f"{IT}/test_hold_neighbours.py", f"{IT}/test_hold_function_paths.py",
          f"{IT}/test_holds_api.py", f"{IT}/test_expiry.py", f"{IT}/test_hold_limits.py")
_PAYMENT = (f"{IT}/test_payment_paths.py", f"{IT}/test_checkout_function_paths.py",
            f"{IT}/test_payment_apply_paths.py",
            f"{IT}/test_payment_apply.py",
            f"{IT}/test_ga_expiry.py", f"{IT}/test_checkout.py", f"{IT}/test_ga_checkout.py")
_GA = (f"{IT}/test_ga_expiry.py", f"{IT}/test_ga_holds.py", f"{IT}/test_ga_batch.py",
       f"{IT}/test_ga_checkout.py")
TARGETS: dict[str, tuple[str, ...]] = {
    f"{FUNCTIONS}/onsale_sweep.sql": _EXPIRY,
    f"{FUNCTIONS}/onsale_expire_hold.sql": _EXPIRY,
    f"{FUNCTIONS}/onsale_hold.sql": _HOLDS,
    f"{FUNCTIONS}/onsale_hold_best.sql": (f"{IT}/test_hold_best_paths.py", *_HOLDS),
    f"{FUNCTIONS}/onsale_hold_commit.sql": _HOLDS,
    f"{FUNCTIONS}/onsale_hold_limit.sql": (f"{IT}/test_hold_limits.py", *_HOLDS[:2]),
    f"{FUNCTIONS}/onsale_owned.sql": (f"{IT}/test_hold_limits.py", f"{IT}/test_seat_batch.py",
                                      f"{IT}/test_checkout_function_paths.py",
                                      f"{IT}/test_ga_holds.py", f"{IT}/test_ga_batch.py"),
    f"{FUNCTIONS}/onsale_hold_prelude.sql": _HOLDS,
    f"{FUNCTIONS}/onsale_release.sql": (f"{IT}/test_release.py", f"{IT}/test_hold_neighbours.py",
                                        f"{IT}/test_holds_api.py",
                                        f"{IT}/test_ga_holds.py"),
    f"{FUNCTIONS}/onsale_checkout_begin.sql": _PAYMENT,
    f"{FUNCTIONS}/onsale_payment_apply.sql": _PAYMENT,
    f"{FUNCTIONS}/onsale_payment_abandon.sql": _PAYMENT,
    f"{FUNCTIONS}/onsale_release_paid_hold.sql": _PAYMENT,
    f"{FUNCTIONS}/onsale_ga_hold.sql": (f"{IT}/test_ga_hold_function_paths.py", *_GA),
    f"{FUNCTIONS}/onsale_ga_hold_batch.sql": (f"{IT}/test_ga_batch_function_paths.py",
                                              f"{IT}/test_ga_batch.py", *_GA[:2]),
    f"{FUNCTIONS}/onsale_ga_take.sql": (f"{IT}/test_ga_take_paths.py", *_GA),
    f"{FUNCTIONS}/onsale_ga_move.sql": (f"{IT}/test_ga_move_locks.py", *_GA),
    f"{FUNCTIONS}/onsale_ga_expire_due.sql": _GA,
    f"{FUNCTIONS}/onsale_ga_short.sql": _GA[:2],
    f"{FUNCTIONS}/onsale_ga_rebalance.sql": (f"{IT}/test_ga_holds.py",),
    f"{FUNCTIONS}/onsale_ga_set_stripes.sql": (f"{IT}/test_ga_holds.py",),
    "core/hold_rules.py": ("tests/unit/test_hold_rules.py", "tests/unit/test_ga_rules.py"),
    "core/payment_rules.py": ("tests/unit/test_payment_answer_edges.py",
                              "tests/unit/test_payment_rules.py",
                              "tests/unit/test_payment_mismatch.py",
                              "tests/unit/test_webhook_events.py"),
    "core/hold_state.py": ("tests/unit/test_state_enums.py", f"{IT}/test_state_enums.py"),
    "core/seat_state.py": ("tests/unit/test_state_enums.py", f"{IT}/test_state_enums.py"),
    "core/order_state.py": ("tests/unit/test_state_enums.py", f"{IT}/test_state_enums.py"),
    "core/payment_state.py": ("tests/unit/test_state_enums.py", f"{IT}/test_state_enums.py"),
    "core/ga_quota.py": ("tests/unit/test_ga_rules.py", "tests/unit/test_ga_quota_loop.py",
                         f"{IT}/test_ga_holds.py"),
    "core/hold_batch.py": ("tests/unit/test_ga_batch_take.py",
                           "tests/unit/test_ga_batch_lanes.py", f"{IT}/test_ga_batch.py",
                           f"{IT}/test_seat_batch.py"),
    f"{FUNCTIONS}/onsale_hold_batch.sql": (f"{IT}/test_seat_batch.py", *_HOLDS[:2]),
    "core/in_flight.py": ("tests/unit/test_in_flight.py", f"{IT}/test_checkout.py"),
}

# A state literal and the neighbour it is swapped for (a plausible slip).
LITERALS = {
    "HELD": "EXPIRED", "EXPIRED": "HELD", "RELEASED": "EXPIRED", "AVAILABLE": "HELD",
    "PAYMENT_PENDING": "HELD", "CONFIRMED": "PAYMENT_PENDING", "SOLD": "HELD",
    "RETURNED": "HELD", "PENDING": "UNKNOWN", "UNKNOWN": "PENDING",
    "REQUIRES_ACTION": "PENDING", "SUCCEEDED": "FAILED", "FAILED": "SUCCEEDED",
    "AUTHORIZED": "CAPTURED", "DECLINED": "NO_AUTHORIZATION", "NO_AUTHORIZATION": "DECLINED",
    "CAPTURED": "AUTHORIZED", "CAPTURE_FAILED": "CAPTURED", "VOIDED": "VOID_FAILED",
    "VOID_FAILED": "VOIDED", "CANCELLED": "FAILED", "AUTHORIZE": "CAPTURE",
    "CAPTURE": "VOID", "VOID": "CAPTURE",
    "expired": "released", "released": "expired", "reclaimed": "expired",
    "payment_failed": "compensated", "compensated": "payment_failed",
    "requires_capture": "requires_action", "requires_action": "requires_capture",
    "succeeded": "canceled", "canceled": "succeeded",
}
SQL_SWAPS = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "=": "<>", "<>": "="}
PY_SWAPS = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "=="}
OPS = ("rel", "and", "or", "not", "lit", "bool")


@dataclass(frozen=True)
class Mutant:
    path: str  # relative to the repository
    line: int
    op: str
    start: int  # the replaced span of the file's text
    end: int
    replacement: str
    ordinal: int = 0  # among the mutants of this line and op

    @property
    def id(self) -> str:
        return f"{Path(self.path).name}:{self.line}:{self.op}:{self.ordinal}"

    def apply(self, text: str) -> str:
        return text[:self.start] + self.replacement + text[self.end:]

    def describe(self, text: str) -> str:
        before = " ".join(text[self.start:self.end].split())
        after = " ".join(self.replacement.split())
        return f"{before or '∅'} -> {after or '∅'}"


def _numbered(found: list[Mutant]) -> list[Mutant]:
    """Ordinals per (line, op), in the order found, so ids are stable."""
    seen: dict[tuple[int, str], int] = {}
    out = []
    for m in sorted(found, key=lambda m: (m.line, m.start, m.op)):
        n = seen.get((m.line, m.op), 0) + 1
        seen[(m.line, m.op)] = n
        out.append(Mutant(m.path, m.line, m.op, m.start, m.end, m.replacement, n))
    return out


# --- SQL ------------------------------------------------------------------------------------

_SQL_TOKEN = re.compile(r"""
    (?P<str>'(?:[^']|'')*')
  | (?P<comment>--[^\n]*)
  | (?P<qid>"[^"\n]*")
  | (?P<dollar>\$\$)
  | (?P<op><=|>=|<>|!=|:=|=>|->>|->|::|\|\||[<>=])
  | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<num>\d+)
  | (?P<space>\s+)
  | (?P<other>.)
""", re.VERBOSE | re.DOTALL)


@dataclass(frozen=True)
class _Tok:
    kind: str
    text: str
    start: int
    end: int

    @property
    def upper(self) -> str:
        return self.text.upper() if self.kind == "word" else self.text


def _sql_tokens(text: str) -> list[_Tok]:
    """The code tokens (no spaces, no comments) of a function file."""
    toks = []
    for m in _SQL_TOKEN.finditer(text):
        kind = m.lastgroup or "other"
        if kind not in ("space", "comment"):
            toks.append(_Tok(kind, m.group(), m.start(), m.end()))
    return toks


# Where a conjunct ends (at its own depth) and where a chain of them begins.
_ENDS = {"AND", "OR", "THEN", "LOOP", "ELSE", "WHEN", "ORDER", "GROUP", "LIMIT", "RETURNING",
         "FOR", "INTO", "HAVING", "WINDOW", "UNION", "SELECT", "UPDATE", "INSERT", "WITH",
         "END", "ELSIF", "EXIT", "CONTINUE", "RETURN", "SET", "WHERE", "JOIN", "LEFT",
         "CROSS", "FROM", ";", ","}
_STARTS = {"WHERE", "ON", "WHEN", "IF", "ELSIF", "HAVING", "("}
_ASSIGN_BEFORE = {"SET", ",", "ERRCODE", "MESSAGE", "DETAIL", "HINT"}


def _is_assignment(toks: list[_Tok], i: int, text: str) -> bool:
    """``=`` that assigns rather than compares: ``SET a = ...``, ``, b = ...`` in a SET
    list, a SET list's continuation line, ``USING MESSAGE = ...``, ``GET DIAGNOSTICS``."""
    j = i - 1
    if j >= 0 and toks[j].kind == "word" and toks[j].upper in _ASSIGN_BEFORE:
        return True  # ERRCODE = ...
    while j >= 1 and toks[j].kind == "word" and toks[j - 1].text == ".":
        j -= 2  # a qualified name: si.status
    if j < 0 or toks[j].kind != "word":
        return False
    before = toks[j - 1] if j >= 1 else None
    if before is None:
        return True
    if before.upper in _ASSIGN_BEFORE or before.upper == "DIAGNOSTICS":
        return True
    # first on its line: a SET list continued (a comparison line starts with AND/OR...)
    line_start = text.rfind("\n", 0, toks[j].start) + 1
    return text[line_start:toks[j].start].strip() == ""


def _conjunct_after(toks: list[_Tok], i: int) -> int | None:
    """The index of the last token of the operand that follows the AND/OR at ``i``
    (a CASE ... END inside it counts as one level, like parentheses)."""
    depth = 0
    last = None
    for k in range(i + 1, len(toks)):
        t = toks[k]
        if depth == 0 and (t.upper in _ENDS or t.text == ")" or t.kind == "dollar") \
                and not (t.upper == "FROM" and toks[k - 1].upper == "DISTINCT"):
            break
        if t.text == "(" or t.upper == "CASE":
            depth += 1
        elif t.text == ")" or t.upper == "END":
            depth -= 1
        last = k
    return last if depth == 0 else None


def _conjunct_before(toks: list[_Tok], i: int) -> int | None:
    """The index of the first token of the operand before the AND/OR at ``i``, when it
    is the first of its chain (after WHERE, ON, WHEN, IF, HAVING or an open paren)."""
    depth = 0
    for k in range(i - 1, -1, -1):
        t = toks[k]
        if t.text == ")" or (t.upper == "END" and t.kind == "word"):
            depth += 1
        elif t.text == "(" or t.upper == "CASE":
            if depth == 0:
                return k + 1 if t.text == "(" and k + 1 < i else None
            depth -= 1
        elif depth == 0 and t.upper in _STARTS:
            return k + 1 if k + 1 < i else None
        elif depth == 0 and (t.upper in _ENDS or t.kind == "dollar"):
            return None
    return None


def sql_mutants(path: str, text: str) -> list[Mutant]:
    toks = _sql_tokens(text)
    body = [k for k, t in enumerate(toks) if t.kind == "dollar"]
    lo, hi = (body[0], body[-1]) if len(body) >= 2 else (0, len(toks))
    found: list[Mutant] = []

    def add(op: str, start: int, end: int, replacement: str) -> None:
        found.append(Mutant(path, text.count("\n", 0, start) + 1, op, start, end, replacement))

    for k in range(lo + 1, hi):
        t = toks[k]
        if t.kind == "op" and t.text in SQL_SWAPS:
            if t.text == "=" and _is_assignment(toks, k, text):
                continue
            add("rel", t.start, t.end, SQL_SWAPS[t.text])
        elif t.kind == "str" and t.text[1:-1] in LITERALS:
            add("lit", t.start, t.end, f"'{LITERALS[t.text[1:-1]]}'")
        elif t.kind == "word" and t.upper == "NOT":
            add("not", t.start, toks[k + 1].start, "")
        elif t.kind == "word" and t.upper in ("AND", "OR"):
            if any(x.upper == "BETWEEN" for x in toks[max(lo, k - 6):k]):
                continue  # BETWEEN a AND b
            op = t.upper.lower()
            after = _conjunct_after(toks, k)
            if after is not None:
                add(op, toks[k - 1].end, toks[after].end, "")
            before = _conjunct_before(toks, k)
            if before is not None:
                add(op, toks[before].start, toks[k + 1].start, "")
    return _numbered(found)


# --- Python ---------------------------------------------------------------------------------


def _offsets(text: str) -> list[int]:
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    return starts


def _parenthesised(text: str, start: int, end: int) -> tuple[int, int]:
    """The span of an operand with the parentheses that wrap it (the AST leaves them out)."""
    while True:
        s = len(text[:start].rstrip())
        e = end + len(text[end:]) - len(text[end:].lstrip())
        if s == 0 or text[s - 1] != "(" or e >= len(text) or text[e] != ")":
            return start, end
        start, end = s - 1, e + 1


def py_mutants(path: str, text: str) -> list[Mutant]:
    starts = _offsets(text)

    def at(row: int, col: int) -> int:
        return starts[row - 1] + col

    found: list[Mutant] = []

    def add(op: str, start: int, end: int, replacement: str) -> None:
        found.append(Mutant(path, text.count("\n", 0, start) + 1, op, start, end, replacement))

    toks = [t for t in tokenize.generate_tokens(io.StringIO(text).readline)
            if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT,
                              tokenize.INDENT, tokenize.DEDENT)]
    for k, t in enumerate(toks):
        start, end = at(*t.start), at(*t.end)
        nxt = toks[k + 1] if k + 1 < len(toks) else None
        prev = toks[k - 1] if k else None
        if t.type == tokenize.OP and t.string in PY_SWAPS:
            add("rel", start, end, PY_SWAPS[t.string])
        elif t.type == tokenize.NAME and t.string == "in" and not (prev and prev.string == "not"):
            add("rel", start, end, "not in")
        elif t.type == tokenize.NAME and t.string == "is":
            if nxt is not None and nxt.string == "not":
                add("rel", end, at(*nxt.end), "")
            else:
                add("rel", start, end, "is not")
        elif t.type == tokenize.NAME and t.string == "not" and nxt is not None \
                and not (prev and prev.string == "is"):
            add("rel" if nxt.string == "in" else "not", start, at(*nxt.start), "")
        elif t.type == tokenize.NAME and t.string in ("True", "False") \
                and not t.line.lstrip().startswith("@"):  # not @dataclass(frozen=True)
            add("bool", start, end, "False" if t.string == "True" else "True")
        elif t.type == tokenize.STRING:
            try:
                value = ast.literal_eval(t.string)
            except (ValueError, SyntaxError):
                continue
            if isinstance(value, str) and value in LITERALS:
                quote = t.string[-1]
                add("lit", start, end, f"{quote}{LITERALS[value]}{quote}")
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.BoolOp):
            continue
        op = "and" if isinstance(node.op, ast.And) else "or"
        spans = [_parenthesised(text, at(v.lineno, v.col_offset),
                                at(v.end_lineno or v.lineno, v.end_col_offset or 0))
                 for v in node.values]
        for i, (s, e) in enumerate(spans):
            # drop operand i with the operator that joins it to its neighbour
            if i + 1 < len(spans):
                add(op, s, spans[i + 1][0], "")
            else:
                add(op, spans[i - 1][1], e, "")
    valid = []
    for m in found:
        try:
            compile(m.apply(text), path, "exec")
        except SyntaxError:
            continue  # e.g. ``for x not in y``
        valid.append(m)
    return _numbered(valid)


def mutants_of(path: str) -> list[Mutant]:
    text = (ROOT / path).read_text()
    return sql_mutants(path, text) if path.endswith(".sql") else py_mutants(path, text)


# --- running --------------------------------------------------------------------------------


def shadow_path(shadow: Path, path: str) -> Path:
    """Where a repository file lives in the copy (the wheel's layout)."""
    top, _, rest = path.partition("/")
    return shadow / "onsale" / top / rest if top in TIERS else shadow / path


def make_shadow() -> Path:
    shadow = Path(tempfile.mkdtemp(prefix="onsale-mutants-"))
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "artifacts")
    shutil.copytree(ROOT / "onsale", shadow / "onsale", ignore=ignore)
    for tier in TIERS:
        shutil.copytree(ROOT / tier, shadow / "onsale" / tier, ignore=ignore)
    shutil.copytree(ROOT / "tests", shadow / "tests", ignore=ignore)
    shutil.copy2(ROOT / "pyproject.toml", shadow / "pyproject.toml")
    return shadow


def _env(shadow: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(shadow)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # no cached bytecode of a mutant, ever
    return env


def check_shadow(shadow: Path) -> None:
    """The copy, not the working tree, is what the tests import and migrate from."""
    out = subprocess.run(
        [sys.executable, "-c", "import onsale.core.migrate as m; print(m.FUNCTIONS_DIR)"],
        cwd=shadow, env=_env(shadow), capture_output=True, text=True, check=True).stdout
    if not Path(out.strip()).is_relative_to(shadow):
        raise SystemExit(f"the copy is not imported first: functions from {out.strip()}")


@dataclass(frozen=True)
class Outcome:
    result: str  # killed | timeout | survived | invalid | error
    seconds: float
    detail: str = ""


_FAILED = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.MULTILINE)
_INVALID = ("PostgresSyntaxError", "syntax error at or near", "InvalidFunctionDefinition")


def run_tests(shadow: Path, tests: Sequence[str], timeout: float) -> Outcome:
    t0 = time.monotonic()
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
           "--no-header", "-o", "addopts=--strict-markers", "-rfE", *tests]
    try:
        proc = subprocess.run(cmd, cwd=shadow, env=_env(shadow), capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return Outcome("timeout", time.monotonic() - t0, f"over {timeout:.0f} s")
    seconds = time.monotonic() - t0
    out = proc.stdout + proc.stderr
    if proc.returncode == 0:
        return Outcome("survived", seconds)
    failed = _FAILED.search(out)
    first = failed.group(1) if failed else ""
    if any(marker in out for marker in _INVALID):
        return Outcome("invalid", seconds, "the migration refused it")
    if proc.returncode == 1:
        return Outcome("killed", seconds, first.removeprefix(f"{IT}/").removeprefix("tests/"))
    tail = out.strip().splitlines()[-1:] or [""]
    return Outcome("error", seconds, f"pytest exit {proc.returncode}: {tail[0][:80]}")


def dirty(paths: Sequence[str]) -> list[str]:
    """Targets with uncommitted changes (``git status``, read-only)."""
    out = subprocess.run(["git", "status", "--porcelain", "--", *paths], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    return [line[3:] for line in out.splitlines()]


def _select_targets(only: Sequence[str]) -> list[str]:
    if not only:
        return list(TARGETS)
    chosen: list[str] = []
    for name in only:
        hits = [p for p in TARGETS if name in (p, Path(p).name, Path(p).stem)]
        if not hits:
            raise SystemExit(f"--only {name}: not a target ({', '.join(TARGETS)})")
        chosen.extend(h for h in hits if h not in chosen)
    return chosen


def _selected(args: argparse.Namespace) -> Iterator[Mutant]:
    ids = set(args.id)
    targets = _select_targets(args.only) if not ids else [
        p for p in TARGETS if any(i.split(":")[0] == Path(p).name for i in ids)]
    ops = set(args.ops.split(",")) if args.ops else set(OPS)
    for path in targets:
        for m in mutants_of(path):
            if (ids and m.id not in ids) or (not ids and m.op not in ops):
                continue
            if args.match:
                line = (ROOT / path).read_text().splitlines()[m.line - 1]
                if args.match not in line:
                    continue
            yield m


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--only", action="append", default=[], metavar="FILE",
                        help="a target file (path, name or stem); repeatable")
    parser.add_argument("--id", action="append", default=[], metavar="ID",
                        help="one mutant by id (file:line:op:n, as listed); repeatable")
    parser.add_argument("--ops", help=f"comma-separated mutation kinds ({','.join(OPS)})")
    parser.add_argument("--match", help="only mutants on lines containing this text")
    parser.add_argument("--skip", type=int, default=0, help="skip the first N mutants")
    parser.add_argument("--limit", type=int, help="run at most N mutants")
    parser.add_argument("--tests", action="append", default=[], metavar="FILE",
                        help="run these test files instead of the target's own")
    parser.add_argument("--timeout", type=float, default=600, help="seconds per test run")
    parser.add_argument("--list", action="store_true", help="list the mutants, run nothing")
    parser.add_argument("--allow-dirty", action="store_true",
                        help="mutate targets that have uncommitted changes")
    args = parser.parse_args(argv)

    chosen = list(_selected(args))[args.skip:]
    if args.limit is not None:
        chosen = chosen[:args.limit]
    texts = {p: (ROOT / p).read_text() for p in {m.path for m in chosen}}
    if args.list:
        for m in chosen:
            print(f"{m.id:42} {m.describe(texts[m.path])}")
        print(f"{len(chosen)} mutant(s)")
        return 0
    if not chosen:
        print("no mutant selected")
        return 0
    changed = dirty(sorted(texts))
    if changed and not args.allow_dirty:
        print("refusing: uncommitted changes in " + ", ".join(changed)
              + " (commit them, or --allow-dirty)", file=sys.stderr)
        return 2

    shadow = make_shadow()
    results: list[tuple[Mutant, Outcome]] = []
    try:
        check_shadow(shadow)
        baseline: dict[tuple[str, ...], Outcome] = {}
        print(f"{'mutant':42} {'mutation':44} {'result':9} {'s':>5}  killed by")
        for m in chosen:
            tests = tuple(args.tests) or TARGETS[m.path]
            if tests not in baseline:
                baseline[tests] = run_tests(shadow, tests, args.timeout)
                if baseline[tests].result != "survived":
                    print(f"the tests fail without a mutant ({baseline[tests].detail}): "
                          + " ".join(tests), file=sys.stderr)
                    return 2
            target = shadow_path(shadow, m.path)
            original = texts[m.path]
            try:
                target.write_text(m.apply(original))
                outcome = run_tests(shadow, tests, args.timeout)
            finally:
                target.write_text(original)
            results.append((m, outcome))
            print(f"{m.id:42} {m.describe(original)[:44]:44} {outcome.result:9} "
                  f"{outcome.seconds:5.0f}  {outcome.detail}", flush=True)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
    finally:
        shutil.rmtree(shadow, ignore_errors=True)

    counted = [o for _, o in results if o.result != "invalid"]
    killed = sum(o.result in ("killed", "timeout") for o in counted)
    survivors = [m for m, o in results if o.result == "survived"]
    print(f"\n{len(results)} run, {len(results) - len(counted)} invalid, {killed} killed, "
          f"{len(survivors)} survived, "
          f"{sum(o.result == 'error' for o in counted)} error(s)")
    for m in survivors:
        print(f"  survived: {m.id}  {m.describe(texts[m.path])}")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
