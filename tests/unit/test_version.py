"""The version is written once (pyproject.toml) and read back everywhere it is shown."""

from __future__ import annotations

import tomllib
from pathlib import Path

from onsale.compose import CORE_API, EDGE_API
from onsale.kernel.openapi import document
from onsale.kernel.version import onsale_version

ROOT = Path(__file__).resolve().parents[2]


def test_one_version_in_the_package_and_the_api_documents() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert onsale_version() == declared
    assert document([CORE_API, EDGE_API])["info"]["version"] == declared
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert f"## {declared}" in changelog, "the CHANGELOG names the version being released"
