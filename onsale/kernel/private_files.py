"""Files and folders only their owner can read, from the moment they exist.

``onsale dev`` keeps its secrets in ``.onsale/secrets.json`` and the payment simulator
its state (intents, idempotency records, queued webhooks) in ``psp.sqlite3``. Writing
such a file with the default mode and narrowing it afterwards leaves a window in which
another local user can open it (and keep the descriptor). So every file here is created
0600 and every folder 0700 by the call that creates it (the umask can only take bits
away), and an existing one that is broader is narrowed before it is read or written
(docs/security.md#files-on-disk).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path
from typing import BinaryIO

FILE_MODE = 0o600
DIR_MODE = 0o700
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _narrow(path: Path | int, mode: int, current: int) -> None:
    """Set exactly ``mode`` when the permission bits differ (never widens beyond it)."""
    if stat.S_IMODE(current) == mode:
        return
    if isinstance(path, Path):
        os.chmod(path, mode)
    else:
        os.fchmod(path, mode)


def private_dir(path: Path) -> Path:
    """``path`` as a folder only its owner can enter: each missing folder (parents
    included) is created 0700, and the folder itself is narrowed to 0700 if it is
    broader. Existing parents are left as they are."""
    missing = []
    here = path
    while not here.exists():
        missing.append(here)
        if here.parent == here:
            break
        here = here.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=DIR_MODE)
        except FileExistsError:  # made meanwhile by someone else: left as it is
            continue
        # The umask may have taken bits away (never added): 0700 exactly, so the
        # folders below can be made.
        _narrow(folder, DIR_MODE, folder.stat().st_mode)
    info = path.stat()
    if not stat.S_ISDIR(info.st_mode):
        raise NotADirectoryError(f"{path} is not a folder")
    _narrow(path, DIR_MODE, info.st_mode)
    return path


def narrow_file(path: Path) -> None:
    """An existing file made 0600 if it is broader (a file written by an older version)."""
    with contextlib.suppress(FileNotFoundError):
        _narrow(path, FILE_MODE, path.stat().st_mode)


def create_private(path: Path) -> None:
    """Make sure ``path`` exists as a 0600 file (created so, or narrowed), without
    changing its content: for files another program then opens (SQLite's database,
    whose journal files take the database file's mode)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | _NOFOLLOW, FILE_MODE)
    try:
        _narrow(fd, FILE_MODE, os.fstat(fd).st_mode)
    finally:
        os.close(fd)


def open_private_append(path: Path) -> BinaryIO:
    """``path`` opened for appending (a log), created 0600 or narrowed first."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | _NOFOLLOW,
                 FILE_MODE)
    try:
        _narrow(fd, FILE_MODE, os.fstat(fd).st_mode)
        return os.fdopen(fd, "ab")
    except BaseException:
        os.close(fd)
        raise


def write_private(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data``, readable by its owner only at every instant: a
    new file beside it, created 0600 (``O_EXCL``: never an existing file or a link
    someone planted), written and synced, then renamed over ``path`` in one step. A
    reader sees the old content or the new, never a half-written or broader file."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | _NOFOLLOW,
                 FILE_MODE)
    try:
        # The umask may have taken bits away (never added): 0600 exactly.
        _narrow(fd, FILE_MODE, os.fstat(fd).st_mode)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    try:
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
