"""The built wheel: exactly one top-level package, ``onsale``, with every module and
data file of the tier folders that pyproject.toml maps into it, and importable from
the wheel alone (the package data is found where the modules are)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
FOLDERS: dict[str, str] = PYPROJECT["tool"]["setuptools"]["package-dir"]


def shipped_sources() -> set[str]:
    """Every file of the mapped folders, named as the wheel names it."""
    out = set()
    for package, folder in FOLDERS.items():
        base = ROOT / folder
        prefix = package.replace(".", "/")
        for path in base.rglob("*"):
            rel = path.relative_to(base)
            if path.is_file() and "__pycache__" not in rel.parts and path.suffix != ".pyc":
                out.add(f"{prefix}/{rel.as_posix()}")
    return out


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built from a copy holding only what the Dockerfile copies (no build/ litter
    in the working tree)."""
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md", *sorted(set(FOLDERS.values()))):
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy(path, src / name)
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--wheel-dir", str(out), str(src)], check=True)
    (found,) = out.glob("onsale-*.whl")
    return found


def test_the_wheel_has_one_top_level_package(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/", 1)[0] for n in names}
    assert tops == {"onsale", wheel.name.split("-py")[0] + ".dist-info"}
    top_level = next(n for n in names if n.endswith(".dist-info/top_level.txt"))
    assert zipfile.ZipFile(wheel).read(top_level).decode().split() == ["onsale"]


def test_the_wheel_carries_every_module_and_data_file(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    wanted = shipped_sources()
    # Not vacuous: modules of every tier, migrations, functions, Lua, templates, scripts.
    for sample in ("onsale/compose.py", "onsale/kernel/db.py", "onsale/core/holds.py",
                   "onsale/edge/queue_store.lua", "onsale/edge/sql/queue.sql",
                   "onsale/core/migrations/0001_inventory.sql", "onsale/core/schema.sql",
                   "onsale/core/sql/functions/onsale_hold.sql", "onsale/web/templates/base.html",
                   "onsale/web/static/onsale.css", "onsale/seatmap/sql/cdc.sql",
                   "onsale/psp/app.py"):
        assert sample in wanted
    assert sorted(wanted - names) == []
    assert sorted(n for n in names - wanted if not n.startswith("onsale-")) == []


def test_the_unpacked_wheel_finds_its_package_data(wheel: Path, tmp_path: Path) -> None:
    zipfile.ZipFile(wheel).extractall(tmp_path)
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "import onsale.compose, onsale.core.migrate as m, onsale.web.templating as t\n"
        "from onsale.core.queries import queries\n"
        "from onsale.edge.queries import queries as edge_queries\n"
        "assert onsale.compose.__file__.startswith(sys.argv[1]), onsale.compose.__file__\n"
        "assert m.load_migrations() and m.load_functions()\n"
        "assert queries('holds') and edge_queries('queue')\n"
        "assert (t.HERE / 'templates' / 'base.html').is_file()\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-I", "-c", probe, str(tmp_path)],
                          capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"
