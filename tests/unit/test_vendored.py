"""The vendored browser files are exactly the locked npm package's (package-lock.json):
upgrading the renderer is `npm install swagger-ui-dist@X` and copying the files again,
and a copy edited by hand, or left behind by an upgrade, fails here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENDOR = ROOT / "web/static/vendor/swagger_ui"
PACKAGE = ROOT / "node_modules/swagger-ui-dist"


def test_swagger_ui_is_the_locked_package() -> None:
    if not PACKAGE.is_dir():
        pytest.fail("npm ci installs swagger-ui-dist (package.json); make test runs it")
    locked = json.loads((ROOT / "package-lock.json").read_text())
    version = locked["packages"]["node_modules/swagger-ui-dist"]["version"]
    assert json.loads((PACKAGE / "package.json").read_text())["version"] == version
    files = sorted(p.name for p in VENDOR.iterdir())
    assert files == ["LICENSE", "NOTICE", "swagger-ui-bundle.js",
                     "swagger-ui-bundle.js.LICENSE.txt", "swagger-ui.css"]
    for name in files:
        assert (VENDOR / name).read_bytes() == (PACKAGE / name).read_bytes(), name
    docs = " ".join((ROOT / "docs/api.md").read_text().split())
    assert f"Swagger UI {version.rsplit('.', 1)[0]}" in docs  # the version the docs name
