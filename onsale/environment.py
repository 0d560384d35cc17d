"""Every setting onsale reads, in one list: the start-up check that reports unknown
``ONSALE_*`` names, and the tables of docs/configuration.md and docs/psp.md, which are
generated from the declarations (``python -m onsale.environment --write``; a unit test
fails when they are stale)."""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from pathlib import Path

from onsale.kernel.config import (
    BackgroundSettings,
    CommandSettings,
    DependencySettings,
    HoldDefaults,
    OutboxSettings,
    PoolSettings,
    ServiceSettings,
)
from onsale.kernel.config_payments import PaymentSettings
from onsale.kernel.config_sessions import SecuritySettings, SessionSettings
from onsale.kernel.config_waiting_room import WaitingRoomSettings
from onsale.kernel.http_limits import HttpLimits
from onsale.kernel.logs import LogSettings
from onsale.kernel.ops_listener import OpsSettings
from onsale.kernel.settings import Section, table, unknown_names, variable_names
from onsale.psp.config import PspConfig
from onsale.seatmap.config import SeatmapSettings

SECTIONS: tuple[type[Section], ...] = (
    ServiceSettings, HoldDefaults, PoolSettings, DependencySettings, BackgroundSettings,
    OutboxSettings, PaymentSettings, WaitingRoomSettings, SeatmapSettings, HttpLimits,
    SessionSettings, SecuritySettings, CommandSettings, LogSettings, OpsSettings,
    PspConfig,
)
DOCS = ("docs/configuration.md", "docs/psp.md")
_BLOCK = re.compile(r"(<!-- settings: (\w+) -->\n)(.*?)(<!-- /settings -->)", re.S)


def report_unknown(env: Mapping[str, str], program: str) -> list[str]:
    """Warn on stderr of every ``ONSALE_*`` variable no setting reads (a typo would
    otherwise be ignored without a word); returns the lines."""
    lines = unknown_names(env, variable_names(SECTIONS))
    for line in lines:
        print(f"{program}: warning: {line}", file=sys.stderr)
    return lines


def render(text: str) -> str:
    """``text`` with every ``<!-- settings: Name -->`` block regenerated."""
    by_name = {cls.__name__: cls for cls in SECTIONS}

    def block(match: re.Match[str]) -> str:
        cls = by_name.get(match.group(2))
        if cls is None:
            raise KeyError(f"no settings section named {match.group(2)}")
        return match.group(1) + table(cls) + match.group(4)

    return _BLOCK.sub(block, text)


def main(argv: list[str]) -> int:
    """``--write``: regenerate the tables in place; ``--check``: exit 1 when stale."""
    root = Path(__file__).resolve().parent.parent
    stale = []
    for name in DOCS:
        path = root / name
        text = path.read_text()
        fresh = render(text)
        if fresh != text:
            stale.append(name)
            if "--write" in argv:
                path.write_text(fresh)
    if stale and "--write" not in argv:
        print(f"stale settings tables in {', '.join(stale)}: run "
              "python -m onsale.environment --write", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
