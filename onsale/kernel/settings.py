"""Settings declared once (docs/configuration.md).

Each setting is a field of a frozen dataclass whose metadata, written with
:func:`setting`, holds its range, its unit and the line that documents it. From that
one declaration come the environment variable's name (the class's ``ENV_PREFIX`` and
the field's name in capitals), the parsing and range check in :func:`read`, the row of
docs/configuration.md in :func:`table`, and the list of names :func:`unknown_names`
checks the environment against. Checks between settings go in a section's ``check``
method, which :class:`Section` runs after construction.
"""

from __future__ import annotations

import difflib
import inspect
import math
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import MISSING, Field, dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar, TypeVar


class ConfigError(ValueError):
    """A configuration value is missing or malformed; the message is one line, fit for
    the terminal."""


Parse = Callable[[str, str], Any]  # (variable name, raw text) -> value or ConfigError


@dataclass(frozen=True)
class Spec:
    """What a field's metadata says of its variable."""

    doc: str
    lo: float | None = None      # inclusive bounds of a number
    hi: float | None = None
    positive: bool = False       # a number > 0
    unit: str = ""               # shown after the range: "s", "ms", "bytes", "MiB"
    env: str | None = None       # the variable, when it is not ENV_PREFIX + FIELD
    aliases: tuple[str, ...] = ()  # older names, read when the variable is unset
    choices: tuple[str, ...] = ()
    parse: Parse | None = None   # for values that are not a plain number, flag or text
    default_doc: str | None = None
    range_doc: str | None = None


def setting(default: Any, doc: str, **spec: Any) -> Any:
    """A field read from the environment; ``spec``: the other fields of :class:`Spec`."""
    return field(default=default, metadata={"setting": Spec(doc=doc, **spec)})


def spec_of(f: Field[Any]) -> Spec | None:
    found = f.metadata.get("setting")
    return found if isinstance(found, Spec) else None


class Section:
    """A group of settings: a frozen dataclass with an ``ENV_PREFIX``. Sections combine
    by inheritance into one flat settings object; each section's ``check`` runs once."""

    ENV_PREFIX: ClassVar[str] = "ONSALE_"

    def __post_init__(self) -> None:
        for klass in reversed(type(self).__mro__):
            check = vars(klass).get("check")
            if check is not None:
                check(self)

    @classmethod
    def variables(cls) -> list[tuple[str, Field[Any], Spec]]:
        """(variable, field, spec) of every setting, in declaration order."""
        out = []
        for f in fields(cls):  # type: ignore[arg-type]
            spec = spec_of(f)
            if spec is not None:
                out.append((spec.env or cls.ENV_PREFIX + f.name.upper(), f, spec))
        return out


S = TypeVar("S", bound=Section)


def read(cls: type[Section], env: Mapping[str, str]) -> dict[str, Any]:
    """The settings of ``cls`` that ``env`` sets (an empty value counts as unset),
    parsed and range-checked; the rest keep their defaults when ``cls`` is built."""
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for name, f, spec in cls.variables():
        raw = env.get(name) or ""
        for alias in spec.aliases:
            raw = raw or env.get(alias) or ""
        if raw:
            values[f.name] = parse_value(name, raw, hints[f.name], spec)
    return values


def load(cls: type[S], env: Mapping[str, str], **given: Any) -> S:
    """``cls`` from ``env``, with ``given`` values (not from the environment) on top."""
    return cls(**{**read(cls, env), **given})


def parse_value(name: str, raw: str, hint: Any, spec: Spec) -> Any:
    if spec.parse is not None:
        return spec.parse(name, raw)
    if spec.choices:
        if raw not in spec.choices:
            raise ConfigError(f"{name} must be one of {', '.join(spec.choices)}")
        return raw
    kind = _kind(hint)
    if kind is bool:
        return parse_bool(name, raw)
    if kind is int:
        return _int(name, raw, spec)
    if kind is float:
        return _number(name, raw, spec)
    if kind is Path:
        return Path(raw)
    return raw


def _kind(hint: Any) -> Any:
    """The type a hint reads as: ``str | None`` reads as ``str``."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    return args[0] if typing.get_origin(hint) in (typing.Union, _UnionType) and args else hint


_UnionType = type(int | None)


def parse_bool(name: str, raw: str) -> bool:
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name} must be true or false, got {raw!r}")


def _int(name: str, raw: str, spec: Spec) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be an integer, got {raw!r}") from None
    lo = -math.inf if spec.lo is None else spec.lo
    hi = math.inf if spec.hi is None else spec.hi
    if not lo <= value <= hi:
        if spec.hi is None:
            raise ConfigError(f"{name} must be at least {_num(lo)}, got {value}")
        raise ConfigError(f"{name} must be between {_num(lo)} and {_num(hi)}, got {value}")
    return value


def _number(name: str, raw: str, spec: Spec) -> float:
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    low_ok = value > 0 if spec.positive else spec.lo is None or value >= spec.lo
    if not math.isfinite(value) or not low_ok or (spec.hi is not None and value > spec.hi):
        raise ConfigError(f"{name} must be {_number_range(spec)}, got {raw!r}")
    return value


def _number_range(spec: Spec) -> str:
    unit = " seconds" if spec.unit == "s" else ""
    if spec.positive:
        return "a positive number" + (f" at most {_num(spec.hi)}{unit}" if spec.hi else "")
    if spec.lo is not None and spec.hi is not None:
        return f"a number between {_num(spec.lo)} and {_num(spec.hi)}{unit}"
    return f"a number of at least {_num(spec.lo or 0)}{unit}"


def _num(value: float | None) -> str:
    if value is None:
        return ""
    return str(int(value)) if float(value).is_integer() else str(value)


# ---- unknown names -----------------------------------------------------------------

def variable_names(sections: Iterable[type[Section]]) -> set[str]:
    """Every variable (and older alias) the sections read."""
    names: set[str] = set()
    for cls in sections:
        for name, _f, spec in cls.variables():
            names.add(name)
            names.update(spec.aliases)
    return names


def unknown_names(env: Mapping[str, str], known: Iterable[str],
                  prefixes: tuple[str, ...] = ("ONSALE_",)) -> list[str]:
    """One line for each variable in ``env`` under ``prefixes`` that no setting reads,
    with the closest known name when there is one: a typo is reported, not ignored."""
    known = sorted(known)
    lines = []
    for name in sorted(env):
        if name.startswith(prefixes) and name not in known:
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
            hint = f" (did you mean {close[0]}?)" if close else ""
            lines.append(f"{name} is not a setting onsale reads{hint}; it is ignored")
    return lines


# ---- docs ---------------------------------------------------------------------------

def table(cls: type[Section]) -> str:
    """The Markdown table of docs/configuration.md for a section's own settings."""
    hints = typing.get_type_hints(cls)
    rows = ["| Variable | Default | Range / format | What it does |", "|---|---|---|---|"]
    own = set(inspect.get_annotations(cls))  # not the settings it inherits
    for name, f, spec in cls.variables():
        if f.name not in own:
            continue
        rows.append(f"| `{name}` | {_default_doc(f, spec)} | "
                    f"{_range_doc(hints[f.name], spec)} | {spec.doc} |")
    return "\n".join(rows) + "\n"


def _default_doc(f: Field[Any], spec: Spec) -> str:
    if spec.default_doc is not None:
        return spec.default_doc
    default = f.default if f.default is not MISSING else None
    if default is None or default == "" or default == ():
        return "unset"
    if isinstance(default, bool):
        return "`true`" if default else "`false`"
    if isinstance(default, float):
        return f"`{_num(default)}`"
    return f"`{default}`"


_UNITS = {"s": "seconds", "ms": "milliseconds"}


def _range_doc(hint: Any, spec: Spec) -> str:
    if spec.range_doc is not None:
        return spec.range_doc
    if spec.choices:
        return "one of " + ", ".join(f"`{c}`" for c in spec.choices)
    kind = _kind(hint)
    if kind is bool:
        return "`1`/`true`/`yes`/`on` or `0`/`false`/`no`/`off`"
    if kind is int:
        text = (f"integer {_num(spec.lo)}–{_num(spec.hi)}" if spec.hi is not None
                else f"integer ≥ {_num(spec.lo)}")
        return text + (f" ({spec.unit})" if spec.unit else "")
    if kind is float:
        unit = _UNITS.get(spec.unit, "a number")
        if spec.positive:
            return f"{unit}, > 0" + (f", at most {_num(spec.hi)}" if spec.hi else "")
        return f"{unit}, {_num(spec.lo)}–{_num(spec.hi)}"
    return "text"
