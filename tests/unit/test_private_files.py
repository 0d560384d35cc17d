"""Secrets and the simulator's state are private from the moment they exist
(onsale/kernel/private_files.py; onsale dev's secrets.json, psp/store.py).

Each test runs under a permissive umask (``os.umask(0)``), where a file created with the
default mode would be world-readable, and an audit hook looks at every file of the
folder whenever the code under test opens, renames, chmods or creates something: a
file or folder that is ever broader than 0600/0700, even for the moment between a write
and a chmod, is caught deterministically."""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from onsale.cli import dev_secrets
from onsale.kernel.private_files import (
    create_private,
    open_private_append,
    private_dir,
    write_private,
)
from onsale.psp.store import Store

_EVENTS = frozenset({"open", "os.chmod", "os.rename", "os.mkdir", "os.remove",
                     "sqlite3.connect", "os.replace"})


class Watch:
    """What the audit hook saw: (event, name, mode) of anything broader than private."""

    def __init__(self) -> None:
        self.root: Path | None = None
        self.broader: list[tuple[str, str, str]] = []
        self.looks = 0
        self._busy = False

    def __call__(self, event: str, args: Any) -> None:
        if self.root is None or self._busy or event not in _EVENTS:
            return
        self._busy = True  # os.scandir raises its own audit event
        try:
            self.look(event)
        finally:
            self._busy = False

    def look(self, event: str) -> None:
        assert self.root is not None
        self.looks += 1
        for folder, dirs, files in os.walk(self.root):
            for name in dirs + files:
                path = os.path.join(folder, name)
                try:
                    mode = stat.S_IMODE(os.lstat(path).st_mode)
                except FileNotFoundError:
                    continue
                if mode & 0o077:
                    self.broader.append((event, os.path.relpath(path, self.root), oct(mode)))


WATCH = Watch()
sys.addaudithook(WATCH)  # cannot be removed: inert while WATCH.root is None


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[Watch]:
    """A permissive umask, and the audit hook looking at everything under tmp_path/w."""
    root = tmp_path / "w"
    root.mkdir(mode=0o700)
    old = os.umask(0)
    WATCH.root, WATCH.broader, WATCH.looks = root, [], 0
    try:
        yield WATCH
    finally:
        WATCH.root = None
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_dev_secrets_are_never_readable_by_others(watched: Watch) -> None:
    assert watched.root is not None
    folder = watched.root / "nested" / ".onsale"
    stored = dev_secrets(folder)
    watched.look("end")
    assert watched.looks > 1  # the hook did see the writes
    assert watched.broader == []
    assert (mode(folder), mode(folder / "secrets.json")) == (0o700, 0o600)
    assert mode(folder.parent) == 0o700  # a folder it had to create on the way
    assert json.loads((folder / "secrets.json").read_text()) == stored
    assert sorted(p.name for p in folder.iterdir()) == ["secrets.json"]  # no temp file left
    assert dev_secrets(folder) == stored  # stable across runs


def test_an_older_broader_folder_and_file_are_narrowed(tmp_path: Path) -> None:
    folder = tmp_path / ".onsale"
    folder.mkdir()
    os.chmod(folder, 0o755)
    path = folder / "secrets.json"
    path.write_text(json.dumps({"ONSALE_SECRET_KEY": "kept-0123456789abcdef"}))
    os.chmod(path, 0o644)
    stored = dev_secrets(folder)
    assert stored["ONSALE_SECRET_KEY"] == "kept-0123456789abcdef"
    assert (mode(folder), mode(path)) == (0o700, 0o600)
    # Nothing missing this time: the file is not rewritten, but still narrowed.
    os.chmod(path, 0o640)
    os.chmod(folder, 0o750)
    assert dev_secrets(folder) == stored
    assert (mode(folder), mode(path)) == (0o700, 0o600)


def test_write_private_creates_the_file_0600_before_any_byte(
        watched: Watch, monkeypatch: pytest.MonkeyPatch) -> None:
    assert watched.root is not None
    target = watched.root / "secret"
    fd = os.open(target, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, b"old")  # replaced, not rewritten in place
    os.close(fd)
    modes_at_creation: list[int] = []
    real_open = os.open

    def spying_open(path: Any, flags: int, mode: int = 0o777, **kw: Any) -> int:
        fd = real_open(path, flags, mode, **kw)
        modes_at_creation.append(stat.S_IMODE(os.fstat(fd).st_mode))
        return fd

    monkeypatch.setattr(os, "open", spying_open)
    write_private(target, b"new secret")
    monkeypatch.undo()
    assert modes_at_creation == [0o600]
    assert (target.read_bytes(), mode(target)) == (b"new secret", 0o600)
    assert watched.broader == []
    assert [p.name for p in watched.root.iterdir()] == ["secret"]


def test_a_strict_umask_still_gives_exactly_0600_and_0700(tmp_path: Path) -> None:
    old = os.umask(0o277)
    try:
        folder = private_dir(tmp_path / "a" / "b")
        write_private(folder / "f", b"x")
        create_private(folder / "db")
    finally:
        os.umask(old)
    assert (mode(tmp_path / "a"), mode(folder)) == (0o700, 0o700)
    assert (mode(folder / "f"), mode(folder / "db")) == (0o600, 0o600)
    assert (folder / "f").read_bytes() == b"x"


def test_private_dir_refuses_a_file(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    with pytest.raises(NotADirectoryError):
        private_dir(tmp_path / "f")


def test_a_log_is_appended_to_privately(watched: Watch) -> None:
    assert watched.root is not None
    log = watched.root / "psp.log"
    with open_private_append(log) as f:
        f.write(b"one\n")
    os.chmod(log, 0o644)  # as an older version left it
    with open_private_append(log) as f:
        f.write(b"two\n")
    assert (log.read_bytes(), mode(log)) == (b"one\ntwo\n", 0o600)


def test_the_simulators_state_is_private(watched: Watch) -> None:
    """psp/store.py: the folder 0700 and psp.sqlite3 with its -wal and -shm 0600."""
    assert watched.root is not None
    path = watched.root / "psp" / "psp.sqlite3"
    store = Store(path)
    try:
        with store.transaction():  # a write: the WAL exists
            store._db.execute("INSERT INTO payment_methods (id, data) VALUES ('pm_x', '{}')")
        names = sorted(p.name for p in path.parent.iterdir())
        assert names == ["psp.sqlite3", "psp.sqlite3-shm", "psp.sqlite3-wal"]
        watched.look("end")
        assert watched.broader == []
        assert mode(path.parent) == 0o700
        assert {name: mode(path.parent / name) for name in names} == dict.fromkeys(names, 0o600)
    finally:
        store.close()


def test_the_simulators_older_broader_state_is_narrowed(tmp_path: Path) -> None:
    folder = tmp_path / "psp"
    Store(folder / "psp.sqlite3").close()
    os.chmod(folder, 0o755)
    for name in ("psp.sqlite3", "psp.sqlite3-wal"):
        (folder / name).touch()
        os.chmod(folder / name, 0o644)
    Store(folder / "psp.sqlite3").close()
    assert mode(folder) == 0o700
    assert {p.name: mode(p) for p in folder.iterdir()} == \
        {p.name: 0o600 for p in folder.iterdir()}
