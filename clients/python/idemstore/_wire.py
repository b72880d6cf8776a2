"""FlatBuffers by hand, for the hot path: tables written front to back with struct, and read
with struct.unpack_from at offsets checked against the buffer.

The flatbuffers runtime's Builder and table accessors cost tens of microseconds per op in Python
(a call per byte placed, a call per field read); writing and reading the few tables of a request
and its response directly costs a few. The schema stays the generated code's (_proto, made by
flatc from net/protocol.fbs): a table's slot numbers and scalar types are read here from its
generated Add* functions at import (schema()), never written out again.

Layout written (docs/protocol.md section 1: a plain FlatBuffer, aligned relative to its first
byte): the root offset, then every object after the one that refers to it (uoffsets point
forward, as FlatBuffers requires), each table right after its own vtable. Fields are placed
largest first from a table start 4 bytes before an 8-byte boundary, so every scalar is aligned
to its size; strings end with the NUL the verifier checks; no object is shared.
"""
from __future__ import annotations

import struct
from typing import Dict, List, Tuple

from . import errors

U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
_U16X2 = struct.Struct("<HH")
_ZEROS = bytes(8)

# A generated Add* function's builder call -> the field's struct format ("offset": a reference).
_FORMATS = {
    "PrependBoolSlot": "B", "PrependUint8Slot": "B", "PrependInt8Slot": "b",
    "PrependUint16Slot": "H", "PrependInt16Slot": "h", "PrependUint32Slot": "I",
    "PrependInt32Slot": "i", "PrependUint64Slot": "Q", "PrependInt64Slot": "q",
    "PrependFloat32Slot": "f", "PrependFloat64Slot": "d",
    "PrependUOffsetTRelativeSlot": "offset", "PrependStructSlot": "struct",
}


class _Recorder:
    """Stands in for a flatbuffers.Builder and records what a generated function asks of it."""

    def __init__(self):
        self.calls: List[Tuple[str, tuple]] = []

    def __getattr__(self, name):
        return lambda *args: self.calls.append((name, args))


class Field:
    """A table field: its slot index, its vtable offset (4 + 2 * slot) and struct format."""

    __slots__ = ("slot", "vt", "format", "struct")

    def __init__(self, slot: int, fmt: str):
        self.slot, self.vt, self.format = slot, 4 + 2 * slot, fmt
        self.struct = struct.Struct("<" + fmt) if fmt not in ("offset", "struct") else None


def schema(module, *fields: str) -> Tuple[int, Dict[str, Field]]:
    """(number of slots, {field: Field}) of the generated table module's named fields (schema
    names: "ttl_ms"), from what its Start and Add* functions ask of a builder."""
    r = _Recorder()
    module.Start(r)
    (_, (slots,)), = r.calls
    out = {}
    for name in fields:
        r = _Recorder()
        getattr(module, "Add" + "".join(p.capitalize() for p in name.split("_")))(r, 0)
        (call, args), = r.calls
        if call not in _FORMATS:
            raise ImportError(f"{module.__name__}.{name}: generated code calls {call}, "
                              "which idemstore._wire does not know")
        out[name] = Field(args[0], _FORMATS[call])
    return slots, out


def struct_format(create) -> str:
    """The format of a one-scalar struct, from its generated Create function (e.g. "Q")."""
    r = _Recorder()
    create(r, 0)
    (prep, (size, _)), (prepend, _) = r.calls[:2]  # then Offset()
    fmt = _FORMATS[prepend + "Slot"]
    if prep != "Prep" or struct.calcsize("<" + fmt) != size:
        raise ImportError(f"{create.__name__}: not a struct of one scalar")
    return fmt


# ---------------------------------------------------------------------------------------------
# Writing

_VTABLE = [struct.Struct("<%dH" % (2 + n)) for n in range(64)]


def table(buf: bytearray, fields: List[Tuple[Field, object]]) -> Tuple[int, List[int]]:
    """Appends a table holding `fields`, (Field, value) sorted largest format first, a value of
    None for a reference (patched by ref() once its object is written). Returns the table's
    position and each reference's position, in the order given."""
    slots = max(f.slot for f, _ in fields) + 1 if fields else 0
    entries = [0] * slots
    at = 4
    for f, _ in fields:
        entries[f.slot] = at
        at += 4 if f.struct is None else f.struct.size
    buf += _ZEROS[:-len(buf) % 4]
    vtable = len(buf)
    buf += _VTABLE[slots].pack(4 + 2 * slots, at, *entries)
    # The table starts 4 bytes before an 8-byte boundary, so that its 8-byte fields (first)
    # are aligned; its 4-byte soffset is then aligned too.
    buf += _ZEROS[:(4 - len(buf)) % 8]
    pos = len(buf)
    buf += _I32.pack(pos - vtable)
    refs = []
    for f, value in fields:
        if f.struct is None:
            refs.append(len(buf))
            buf += _ZEROS[:4]
        else:
            buf += f.struct.pack(value)
    return pos, refs


def ref(buf: bytearray, at: int, target: int) -> None:
    """Points the uoffset at `at` to the object at `target` (after it)."""
    U32.pack_into(buf, at, target - at)


def vector(buf: bytearray, data: bytes, nul: bool = False) -> int:
    """Appends a byte vector (a string when `nul`), 4-aligned; returns its position."""
    buf += _ZEROS[:-len(buf) % 4]
    pos = len(buf)
    buf += U32.pack(len(data))
    buf += data
    if nul:
        buf += b"\0"
    return pos


def offsets(buf: bytearray, count: int) -> int:
    """Appends a vector of `count` uoffsets, all 0 (patched by ref()); returns its position."""
    buf += _ZEROS[:-len(buf) % 4]
    pos = len(buf)
    buf += U32.pack(count)
    buf += bytes(4 * count)
    return pos


# ---------------------------------------------------------------------------------------------
# Reading. Every read is bounded by the buffer: a position read from it is checked before use,
# or read with unpack_from, which raises struct.error past the end (the caller maps it).

_ENTRIES = [struct.Struct("<%dH" % n) for n in range(64)]


def fields(buf: bytes, pos: int, slots: int, what: str) -> tuple:
    """The vtable entries (field offsets, 0 = absent) of the table at `pos`: `slots` of them,
    a vtable's missing tail read as absent. Checks that the table and vtable lie in `buf`."""
    n = len(buf)
    if pos < 0 or pos + 4 > n:
        raise errors.ProtocolError(f"{what} at {pos} lies outside the frame of {n} bytes")
    vtable = pos - _I32.unpack_from(buf, pos)[0]
    if vtable < 0 or vtable + 4 > n:
        raise errors.ProtocolError(f"{what}'s vtable at {vtable} lies outside the frame")
    vtable_size, table_size = _U16X2.unpack_from(buf, vtable)
    if vtable_size < 4 or vtable_size % 2 or vtable + vtable_size > n or table_size < 4 or \
            pos + table_size > n:
        raise errors.ProtocolError(f"{what}'s vtable at {vtable} is malformed")
    count = (vtable_size - 4) >> 1
    if count >= slots:
        return _ENTRIES[slots].unpack_from(buf, vtable + 4)
    return _ENTRIES[count].unpack_from(buf, vtable + 4) + (0,) * (slots - count)


def deref(buf: bytes, at: int) -> int:
    """The position the uoffset at `at` points to."""
    return at + U32.unpack_from(buf, at)[0]


def span(buf: bytes, at: int, elem_bytes: int, what: str) -> Tuple[int, int]:
    """(start, count) of the vector the uoffset at `at` points to, checked to lie in `buf`."""
    pos = at + U32.unpack_from(buf, at)[0]
    count = U32.unpack_from(buf, pos)[0]
    if pos + 4 + count * elem_bytes > len(buf):
        raise errors.ProtocolError(f"{what}: {count} elements run past the frame's end")
    return pos + 4, count
