"""``onsale config check --role R`` (docs/configuration.md#checking-a-roles-environment):
the role's environment read exactly as ``onsale serve --role R`` would read it, what it
would use printed with secrets masked, and every ``ONSALE_*`` name no setting reads.

Pure over the environment it is given: the command passes ``os.environ``, the tests a
literal mapping.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from onsale.environment import SECTIONS
from onsale.kernel.config import Settings
from onsale.kernel.http_limits import HttpLimits
from onsale.kernel.logs import LogSettings
from onsale.kernel.ops_listener import OpsSettings
from onsale.kernel.placement import masked_dsn
from onsale.kernel.settings import ConfigError, Section, load, unknown_names, variable_names
from onsale.roles import SECRETLESS_ROLES
from onsale.seatmap.config import SeatmapSettings

# What each role reads besides the settings every server reads (Settings, HttpLimits,
# LogSettings): the seat map's for the roles that capture or fan it out.
_EXTRA: dict[str, tuple[type[Section], ...]] = {"cdc": (SeatmapSettings,),
                                                "seatmap": (SeatmapSettings,),
                                                "dev": (SeatmapSettings,)}
_SECRET_WORDS = ("SECRET", "TOKEN", "PASSWORD", "_KEY")


@dataclass(frozen=True)
class Check:
    ok: bool
    lines: list[str]  # what it would use, one ``NAME = value  (source)`` per setting
    warnings: list[str]  # unknown names
    error: str | None = None


def masked(name: str, value: Any) -> str:
    """A value fit to print: secrets hidden, passwords out of URLs."""
    if value is None or value == "":
        return "(unset)"
    text = str(value)
    if any(word in name for word in _SECRET_WORDS) and "IDEMPOTENCY" not in name:
        return f"*** ({len(text)} characters)"
    if "://" in text:
        return ",".join(masked_dsn(part) for part in text.split(","))
    return text


def check(role: str, env: Mapping[str, str]) -> Check:
    """The role's settings from ``env``, or the first error that would stop it."""
    warnings = unknown_names(env, variable_names(SECTIONS))
    try:
        sections: list[Section] = [
            Settings.from_env(env, require_secrets=role not in SECRETLESS_ROLES,
                              dev=role == "dev"),
            HttpLimits.from_env(env), LogSettings.from_env(env), OpsSettings.from_env(env),
            *(load(cls, env) for cls in _EXTRA.get(role, ()))]
    except ConfigError as exc:
        return Check(False, [], warnings, str(exc))
    lines = []
    for section in sections:
        for name, f, spec in type(section).variables():
            value = getattr(section, f.name)
            source = "set" if any(env.get(n) for n in (name, *spec.aliases)) else "default"
            lines.append(f"{name} = {masked(name, value)}  ({source})")
    return Check(True, lines, warnings)
