"""The values a CHECK constraint allows a column, read from PostgreSQL's own text.

The state enums in core (core/seat_state.py, core/hold_state.py,
core/order_state.py, core/payment_state.py) name what the database's CHECK
constraints allow; tests/integration/test_state_enums.py compares the two. The
constraint is read back with pg_get_constraintdef, which does not print what
the migration wrote: ``status IN ('A', 'B')`` comes back as

    CHECK ((status = ANY (ARRAY['A'::text, 'B'::text])))

(``CHECK (status = ANY (ARRAY['A'::text, 'B'::text]))`` when pretty-printed;
a varchar column reads ``((status)::text = ANY ((ARRAY['A'::character varying,
...])::text[]))``; a one-value list reads ``(status = 'A'::text)``). This
parser accepts those forms, the ``IN`` list as written, and an OR of any of
them; anything else (NOT, <> ALL, AND, a function of the column, another
column) raises ConstraintFormatError rather than guess.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# A cast after a literal or an identifier: ::text, ::character varying, ::text[],
# ::varchar(20), ::"Quoted".
_CAST = re.compile(
    r"::\s*(?:character\s+varying|[A-Za-z_][\w.]*|\"[^\"]+\")(?:\s*\(\s*\d+\s*\))?(?:\s*\[\])?")
_WRAPPER = re.compile(r"^\s*CHECK\s*(?P<expr>\(.*\))\s*(?:NO\s+INHERIT\s*)?(?:NOT\s+VALID\s*)?$",
                      re.IGNORECASE | re.DOTALL)
_IDENT = r'(?P<col>"[^"]+"|[A-Za-z_]\w*)'
_ITEMS = r"(?P<items>\$\d+(?: ?, ?\$\d+)*)"
_FORMS = (
    re.compile(rf"^{_IDENT} = ANY ARRAY ?\[ ?{_ITEMS} ?\]$", re.IGNORECASE),
    re.compile(rf"^{_IDENT} IN {_ITEMS}$", re.IGNORECASE),
    re.compile(rf"^{_IDENT} = (?P<items>\$\d+)$"),
)
_OR = re.compile(r"\bOR\b", re.IGNORECASE)


class ConstraintFormatError(ValueError):
    """A constraint that is not a list of allowed values for the column."""


def _hide_literals(text: str) -> tuple[str, list[str]]:
    """Each string literal replaced by `` $n `` (so no quote confuses what
    follows), and the literals' values ('' inside one is a quote). SQL
    comments (a function body has them) are dropped."""
    out: list[str] = []
    values: list[str] = []
    i = 0
    while i < len(text):
        if text.startswith("--", i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise ConstraintFormatError(f"unterminated comment in {text!r}")
            out.append(" ")
            i = end + 2
            continue
        if text[i] != "'":
            out.append(text[i])
            i += 1
            continue
        j, chars = i + 1, []
        while True:
            if j >= len(text):
                raise ConstraintFormatError(f"unterminated string literal in {text!r}")
            if text[j] == "'":
                if text[j + 1:j + 2] == "'":
                    chars.append("'")
                    j += 2
                    continue
                break
            chars.append(text[j])
            j += 1
        out.append(f" ${len(values)} ")
        values.append("".join(chars))
        i = j + 1
    return "".join(out), values


def _strip_parens(expr: str) -> str:
    """``((x))`` -> ``x``: only parentheses that enclose the whole expression."""
    expr = expr.strip()
    while expr.startswith("(") and _closing(expr, 0) == len(expr) - 1:
        expr = expr[1:-1].strip()
    return expr


def _closing(expr: str, start: int) -> int:
    depth = 0
    for i in range(start, len(expr)):
        if expr[i] == "(":
            depth += 1
        elif expr[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    raise ConstraintFormatError(f"unbalanced parentheses in {expr!r}")


def _disjuncts(expr: str) -> list[str]:
    """The operands of the top-level ORs, themselves split the same way."""
    expr = _strip_parens(expr)
    depth, parts, last = 0, [], 0
    for i, ch in enumerate(expr):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and (m := _OR.match(expr, i)) and (i == 0 or not _word(expr[i - 1])):
            parts.append(expr[last:i])
            last = m.end()
    if not parts:
        return [expr]
    parts.append(expr[last:])
    return [d for part in parts for d in _disjuncts(part)]


def _word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _same_column(found: str, column: str) -> bool:
    if found.startswith('"'):
        return found[1:-1] == column
    return found.lower() == column.lower()


def allowed_values(definition: str, column: str) -> tuple[str, ...]:
    """The values ``definition`` (pg_get_constraintdef's text, or the ``CHECK
    (...)`` as written) allows ``column``, in the order listed. For a domain's
    constraint, ``column`` is ``VALUE``."""
    hidden, literals = _hide_literals(definition)
    wrapped = _WRAPPER.match(hidden)
    if wrapped is None:
        raise ConstraintFormatError(f"not a CHECK constraint: {definition!r}")
    values: list[str] = []
    for disjunct in _disjuncts(wrapped["expr"]):
        flat = " ".join(_CAST.sub(" ", disjunct).replace("(", " ").replace(")", " ").split())
        match = next((m for form in _FORMS if (m := form.match(flat))), None)
        if match is None:
            raise ConstraintFormatError(
                f"{disjunct.strip()!r} is not a list of values for {column} in {definition!r}")
        if not _same_column(match["col"], column):
            raise ConstraintFormatError(f"{definition!r} constrains {match['col']}, not {column}")
        values += [literals[int(item.strip()[1:])] for item in match["items"].split(",")]
    return tuple(values)


def mismatch(allowed: Iterable[str], enum_values: Iterable[str]) -> str | None:
    """None when the two sets of values are equal, else what differs."""
    allowed, named = set(allowed), {str(v) for v in enum_values}
    if allowed == named:
        return None
    return (f"only in the database: {sorted(allowed - named)}; "
            f"only in the enum: {sorted(named - allowed)}")


_COMPARED = re.compile(r"\b{param}\s*(?:=\s*(?P<one>\$\d+)|IN\s*\((?P<many>[^)]*)\))",
                       re.IGNORECASE)


def compared_values(source: str, parameter: str) -> frozenset[str]:
    """The string literals a function body compares ``parameter`` with
    (``p = 'X'`` and ``p IN ('X', 'Y')``): the values it handles."""
    hidden, literals = _hide_literals(source)
    pattern = re.compile(_COMPARED.pattern.replace("{param}", re.escape(parameter)),
                         re.IGNORECASE)
    found: set[str] = set()
    for m in pattern.finditer(hidden):
        items = [m["one"]] if m["one"] else m["many"].split(",")
        for item in items:
            item = item.strip()
            if not re.fullmatch(r"\$\d+", item):
                raise ConstraintFormatError(f"{parameter} compared with {item!r}, not a literal")
            found.add(literals[int(item[1:])])
    return frozenset(found)
