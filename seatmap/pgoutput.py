"""A sans-I/O decoder for PostgreSQL's pgoutput logical replication protocol.

``decode(payload)`` turns the payload of one XLogData message (what
psycopg2's ``ReplicationMessage.payload`` holds, or one row of
``pg_logical_slot_get_binary_changes``) into a frozen message object. Only
protocol version 1 is spoken (no in-progress streaming, no two-phase):
Begin, Commit, Relation, Type, Origin, Insert, Update, Delete, Truncate and
logical decoding Messages (``pg_logical_emit_message``).

Tuple values come as the server sends them: ``None`` for SQL NULL,
``UNCHANGED`` for an unchanged TOASTed value, ``str`` for the text format and
``bytes`` for the binary format. Nothing here knows about seats; the
sequencer interprets rows. Reference: "Logical Replication Message Formats"
in the PostgreSQL documentation.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

# Microseconds between the Unix epoch and PostgreSQL's epoch (2000-01-01 UTC).
PG_EPOCH_US: Final = 946_684_800_000_000


class DecodeError(ValueError):
    """A payload that is not a well-formed pgoutput v1 message."""


class _Unchanged:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNCHANGED"


UNCHANGED: Final = _Unchanged()
Value = str | bytes | None | _Unchanged
Tuple = tuple[Value, ...]


@dataclass(frozen=True, slots=True)
class Begin:
    final_lsn: int  # the LSN of the commit record
    commit_time: int  # microseconds since the Unix epoch
    xid: int


@dataclass(frozen=True, slots=True)
class Commit:
    flags: int
    commit_lsn: int
    end_lsn: int  # the LSN just past the commit record
    commit_time: int


@dataclass(frozen=True, slots=True)
class Column:
    key: bool  # part of the replica identity
    name: str
    type_oid: int
    type_modifier: int


@dataclass(frozen=True, slots=True)
class Relation:
    oid: int
    namespace: str  # "" means pg_catalog
    name: str
    replica_identity: str  # d, n, f or i
    columns: tuple[Column, ...]


@dataclass(frozen=True, slots=True)
class Type:
    oid: int
    namespace: str
    name: str


@dataclass(frozen=True, slots=True)
class Origin:
    lsn: int
    name: str


@dataclass(frozen=True, slots=True)
class Insert:
    oid: int
    new: Tuple


@dataclass(frozen=True, slots=True)
class Update:
    oid: int
    old: Tuple | None  # the replica identity (K) or the whole old row (O), when sent
    new: Tuple
    old_is_key: bool = False


@dataclass(frozen=True, slots=True)
class Delete:
    oid: int
    old: Tuple
    old_is_key: bool


@dataclass(frozen=True, slots=True)
class Truncate:
    options: int  # 1 = CASCADE, 2 = RESTART IDENTITY
    oids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Message:
    transactional: bool
    lsn: int
    prefix: str
    content: bytes


PgOutput = Begin | Commit | Relation | Type | Origin | Insert | Update | Delete | Truncate | Message

_I8 = struct.Struct("!B")
_I16 = struct.Struct("!h")
_I32 = struct.Struct("!I")
_I32S = struct.Struct("!i")
_I64 = struct.Struct("!Q")
_I64S = struct.Struct("!q")
_BEGIN = struct.Struct("!QqI")
_COMMIT = struct.Struct("!BQQq")


class _Reader:
    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.pos = 1  # past the message type byte

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if end > len(self.buf):
            raise DecodeError(f"truncated message: wanted {n} bytes at offset {self.pos}")
        out = self.buf[self.pos:end]
        self.pos = end
        return out

    def unpack(self, s: struct.Struct) -> tuple[int, ...]:
        return tuple(s.unpack(self.take(s.size)))

    def byte(self) -> int:
        return self.unpack(_I8)[0]

    def int16(self) -> int:
        return self.unpack(_I16)[0]

    def int32(self) -> int:
        return self.unpack(_I32)[0]

    def string(self) -> str:
        end = self.buf.find(b"\x00", self.pos)
        if end < 0:
            raise DecodeError(f"unterminated string at offset {self.pos}")
        out = self.buf[self.pos:end].decode()
        self.pos = end + 1
        return out

    def tuple_data(self) -> Tuple:
        values: list[Value] = []
        for _ in range(self.int16()):
            kind = self.take(1)
            if kind == b"n":
                values.append(None)
            elif kind == b"u":
                values.append(UNCHANGED)
            elif kind in (b"t", b"b"):
                data = self.take(self.unpack(_I32S)[0])
                values.append(data.decode() if kind == b"t" else data)
            else:
                raise DecodeError(f"unknown tuple value kind {kind!r}")
        return tuple(values)

    def done(self) -> None:
        if self.pos != len(self.buf):
            raise DecodeError(f"{len(self.buf) - self.pos} trailing bytes")


def _begin(r: _Reader) -> Begin:
    lsn, ts, xid = r.unpack(_BEGIN)
    return Begin(lsn, ts + PG_EPOCH_US, xid)


def _commit(r: _Reader) -> Commit:
    flags, lsn, end, ts = r.unpack(_COMMIT)
    return Commit(flags, lsn, end, ts + PG_EPOCH_US)


def _relation(r: _Reader) -> Relation:
    oid, namespace, name = r.int32(), r.string(), r.string()
    identity = chr(r.byte())
    columns = []
    for _ in range(r.int16()):
        flags, col = r.byte(), r.string()
        type_oid, typmod = r.int32(), r.unpack(_I32S)[0]
        columns.append(Column(bool(flags & 1), col, type_oid, typmod))
    return Relation(oid, namespace, name, identity, tuple(columns))


def _type(r: _Reader) -> Type:
    return Type(r.int32(), r.string(), r.string())


def _origin(r: _Reader) -> Origin:
    return Origin(r.unpack(_I64)[0], r.string())


def _tagged(r: _Reader, expected: bytes) -> Tuple:
    tag = r.take(1)
    if tag not in expected:
        raise DecodeError(f"expected one of {expected!r}, got {tag!r}")
    return r.tuple_data()


def _insert(r: _Reader) -> Insert:
    oid = r.int32()
    return Insert(oid, _tagged(r, b"N"))


def _update(r: _Reader) -> Update:
    oid = r.int32()
    tag = r.take(1)
    if tag == b"N":
        return Update(oid, None, r.tuple_data())
    if tag not in (b"K", b"O"):
        raise DecodeError(f"unexpected update tag {tag!r}")
    old = r.tuple_data()
    return Update(oid, old, _tagged(r, b"N"), old_is_key=tag == b"K")


def _delete(r: _Reader) -> Delete:
    oid = r.int32()
    tag = r.take(1)
    if tag not in (b"K", b"O"):
        raise DecodeError(f"unexpected delete tag {tag!r}")
    return Delete(oid, r.tuple_data(), old_is_key=tag == b"K")


def _truncate(r: _Reader) -> Truncate:
    count = r.int32()
    options = r.byte()
    return Truncate(options, tuple(r.int32() for _ in range(count)))


def _message(r: _Reader) -> Message:
    flags = r.byte()
    lsn = r.unpack(_I64)[0]
    prefix = r.string()
    content = r.take(r.int32())
    return Message(bool(flags & 1), lsn, prefix, content)


_DECODERS: dict[int, Callable[[_Reader], PgOutput]] = {
    ord("B"): _begin, ord("C"): _commit, ord("R"): _relation, ord("Y"): _type,
    ord("O"): _origin, ord("I"): _insert, ord("U"): _update, ord("D"): _delete,
    ord("T"): _truncate, ord("M"): _message,
}


def decode(payload: bytes | bytearray | memoryview) -> PgOutput:
    """One pgoutput message. Raises DecodeError on anything malformed or unknown."""
    buf = bytes(payload)
    if not buf:
        raise DecodeError("empty message")
    decoder = _DECODERS.get(buf[0])
    if decoder is None:
        raise DecodeError(f"unknown or unsupported message type {chr(buf[0])!r}")
    r = _Reader(buf)
    out: PgOutput = decoder(r)
    r.done()
    return out


def format_lsn(lsn: int) -> str:
    """PostgreSQL's text form of an LSN: ``16/B374D848``."""
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def parse_lsn(text: str) -> int:
    """The inverse of format_lsn; raises ValueError on anything else."""
    if not _LSN.fullmatch(text):
        raise ValueError(f"not an LSN: {text!r}")
    hi, _, lo = text.partition("/")
    return (int(hi, 16) << 32) | int(lo, 16)


_LSN = re.compile(r"[0-9A-Fa-f]{1,8}/[0-9A-Fa-f]{1,8}")
