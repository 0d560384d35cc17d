"""The vendored browser files are exactly the locked npm package's (package-lock.json):
upgrading the renderer is `npm install swagger-ui-dist@X` and copying the files again,
and a copy edited by hand, or left behind by an upgrade, fails here."""

from __future__ import annotations

import json
import subprocess
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


NOBLE = ROOT / "web/static/vendor/noble_bls"


def test_the_bls_bundle_is_the_locked_packages_bundled_again(tmp_path: Path) -> None:
    """web/static/vendor/noble_bls/bls12-381.js is noble-curves' BLS12-381 and the
    noble-hashes it imports, bundled by the locked esbuild (`npm run vendor-bls`): the
    same command, run again here, gives the same bytes, and the licences are the
    packages' own."""
    esbuild = ROOT / "node_modules/.bin/esbuild"
    if not esbuild.exists():
        pytest.fail("npm ci installs esbuild and @noble/curves (package.json); make test runs it")
    locked = json.loads((ROOT / "package-lock.json").read_text())["packages"]
    for package in ("@noble/curves", "@noble/hashes", "esbuild"):
        found = json.loads((ROOT / "node_modules" / package / "package.json").read_text())
        assert found["version"] == locked[f"node_modules/{package}"]["version"], package
    script = json.loads((ROOT / "package.json").read_text())["scripts"]["vendor-bls"]
    out = tmp_path / "bls12-381.js"
    args = script.split()[1:]
    args = [a if not a.startswith("--outfile=") else f"--outfile={out}" for a in args]
    subprocess.run([str(esbuild), *args, "--log-level=warning"], cwd=ROOT, check=True,
                   timeout=120)
    assert (NOBLE / "bls12-381.js").read_bytes() == out.read_bytes()
    assert sorted(p.name for p in NOBLE.iterdir()) == [
        "LICENSE.noble-curves", "LICENSE.noble-hashes", "bls12-381.js"]
    for package in ("curves", "hashes"):
        assert (NOBLE / f"LICENSE.noble-{package}").read_bytes() == (
            ROOT / f"node_modules/@noble/{package}/LICENSE").read_bytes()
