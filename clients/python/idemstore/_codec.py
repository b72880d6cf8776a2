"""The wire protocol without I/O: frames to bytes and bytes to frames (docs/protocol.md).

Shared by the threaded client (client.py) and the asyncio client (aio.py), which add only the
socket. Everything here is a pure function of its arguments, except FrameReader, which holds the
bytes of a frame not yet complete.

    encode_hello(request_id, token) -> bytes            a whole frame, length prefix included
    encode_apply(request_id, ops) -> bytes
    encode_stats(request_id) -> bytes
    FrameReader(max_frame_bytes).feed(data) -> [body]   complete frame bodies, in order
    decode_frame(body) -> Reply                         Reply(request_id, kind, value)
    hello_result / apply_result / stats_result(reply)   a reply's value, or its error raised

Reading is defensive: the generated Python code has no FlatBuffers verifier, so every table,
string and vector is checked against the body's size before it is read, and the bytes a
response's results copy out are bounded by the body's size (a response whose results share one
large payload is refused, as the C++ client refuses it). Whatever a malformed body holds,
decode_frame raises errors.ProtocolError, never IndexError or struct.error.
"""
from __future__ import annotations

import dataclasses
import struct
from typing import Any, Dict, List, Optional, Sequence

import flatbuffers

from . import errors
from ._proto import ApplyRequest as _ApplyRequest
from ._proto import Condition as _Condition
from ._proto import Frame as _Frame
from ._proto import Hello as _Hello
from ._proto import Op as _Op
from ._proto import OptionalInt64 as _OptionalInt64
from ._proto import OptionalUint64 as _OptionalUint64
from ._proto import StatsRequest as _StatsRequest
from ._proto import Update as _Update
from ._proto.ApplyResponse import ApplyResponse as _ApplyResponse
from ._proto.Body import Body as _Body
from ._proto.HelloReply import HelloReply as _HelloReply
from ._proto.MetricFamily import MetricFamily as _MetricFamily
from ._proto.MetricLabel import MetricLabel as _MetricLabel
from ._proto.MetricSample import MetricSample as _MetricSample
from ._proto.OpResult import OpResult as _OpResult
from ._proto.StatsResponse import StatsResponse as _StatsResponse
from .ops import Op
from .types import HelloInfo, OpAnswer, OpError, OpResult, Outcome, Record, RecordKind, StatusCode

PROTOCOL_VERSION = 2
CLIENT_NAME = "idemstore-python"
# Until the HelloReply says otherwise (max_reply_bytes), the largest response accepted; the
# C++ client's ClientOptions::max_frame_bytes.
DEFAULT_MAX_FRAME_BYTES = 4 << 20
# Responses are never accepted above this, whatever a server announces (the C++ client's
# ClientOptions::max_reply_bytes).
MAX_REPLY_BYTES_CAP = 64 << 20

_LENGTH = struct.Struct("<I")
_I32 = struct.Struct("<i")
_U32 = struct.Struct("<I")
_U16X2 = struct.Struct("<HH")

# Vtable slots of the fields read by hand below: 4 + 2 * the field's index in its table in
# net/protocol.fbs. Fields are only ever appended there, so these never change.
_RECORD_STATUS, _RECORD_FINGERPRINT, _RECORD_PAYLOAD, _RECORD_OWNER = 4, 10, 12, 20
_OPRESULT_TOKEN = 12
_ERROR_MESSAGE = 6
_HELLO_REPLY_SERVER_VERSION = 6
_APPLY_RESPONSE_RESULTS = 4
_STATS_DURABILITY = 18
_STATS_METRICS = 56
_FAMILY_NAME, _FAMILY_HELP, _FAMILY_SAMPLES = 4, 6, 10
_SAMPLE_LABELS, _SAMPLE_BUCKETS = 4, 8
_LABEL_NAME, _LABEL_VALUE = 4, 6
_BUCKET_BYTES = 16  # struct MetricBucket { le: double; count: ulong; }

_HELLO_REPLY_NUMBERS = [f.name for f in dataclasses.fields(HelloInfo) if f.name != "server_version"]
_STATS_NUMBERS = [
    "estimated_live_records", "sst_bytes", "memtable_bytes", "wal_bytes", "next_fence", "ops",
    "writes", "user_bytes_written", "flush_bytes_written", "compaction_bytes_read",
    "compaction_bytes_written", "compactions", "records_dropped_by_compaction", "live_sst_bytes",
    "wal_syncs", "block_cache_bytes", "block_cache_capacity_bytes", "table_readers_bytes",
    "admin_overrides", "pending_compaction_bytes", "write_stalls", "write_stalled",
    "background_errors", "expired_unreclaimed_records", "clock_steps"]
_METRIC_TYPES = {0: "counter", 1: "gauge", 2: "histogram"}


def _accessor(field: str) -> str:
    """The generated accessor's name of a schema field: max_frame_bytes -> MaxFrameBytes."""
    return "".join(part.capitalize() for part in field.split("_"))


# ---------------------------------------------------------------------------------------------
# Encoding

def _finish(b: flatbuffers.Builder, request_id: int, body_type: int, body: int) -> bytes:
    if not 1 <= request_id < 2**64:
        raise ValueError(f"request id {request_id} is outside 1..2^64-1 (0 is reserved)")
    _Frame.Start(b)
    _Frame.AddId(b, request_id)
    _Frame.AddBodyType(b, body_type)
    _Frame.AddBody(b, body)
    b.Finish(_Frame.End(b))
    # Finish, then the length in front: the body stays a plain FlatBuffer aligned relative to its
    # own first byte, which is what the server verifies (never a size-prefixed buffer).
    out = b.Output()
    return _LENGTH.pack(len(out)) + out


def encode_hello(request_id: int, token: Optional[str] = None,
                 client_name: str = CLIENT_NAME) -> bytes:
    """The Hello that opens every connection; `token` is the principal's secret (None: none)."""
    b = flatbuffers.Builder(128)
    name = b.CreateString(client_name)
    secret = b.CreateString(token) if token else None
    _Hello.Start(b)
    _Hello.AddProtocolVersion(b, PROTOCOL_VERSION)
    _Hello.AddClientName(b, name)
    if secret is not None:
        _Hello.AddToken(b, secret)
    return _finish(b, request_id, _Body.Hello, _Hello.End(b))


def _string(b: flatbuffers.Builder, s: str) -> int:
    return b.CreateString(s, errors="surrogateescape")


def _op(b: flatbuffers.Builder, op: Op) -> int:
    # Every field given is written whatever the op's type; which fields a type reads is the
    # server's business, as in the C++ encoder (net/src/protocol_codec.cc, MakeOp).
    condition = None
    if not op.condition.empty():
        statuses = [_string(b, s) for s in op.condition.status_in]
        status_in = None
        if statuses:
            _Condition.StartStatusInVector(b, len(statuses))
            for s in reversed(statuses):
                b.PrependUOffsetTRelative(s)
            status_in = b.EndVector()
        _Condition.Start(b)
        if status_in is not None:
            _Condition.AddStatusIn(b, status_in)
        if op.condition.version is not None:
            _Condition.AddVersion(b, _OptionalUint64.CreateOptionalUint64(b, op.condition.version))
        if op.condition.fence is not None:
            _Condition.AddFence(b, _OptionalUint64.CreateOptionalUint64(b, op.condition.fence))
        condition = _Condition.End(b)
    update = None
    if not op.update.empty():
        status = None if op.update.status is None else _string(b, op.update.status)
        payload = None if op.update.payload is None else b.CreateByteVector(op.update.payload)
        _Update.Start(b)
        if status is not None:
            _Update.AddStatus(b, status)
        if payload is not None:
            _Update.AddPayload(b, payload)
        if op.update.ttl_ms is not None:
            _Update.AddTtlMs(b, _OptionalInt64.CreateOptionalInt64(b, op.update.ttl_ms))
        update = _Update.End(b)
    ns = _string(b, op.ns)
    key = b.CreateByteVector(op.key)
    status = _string(b, op.status) if op.status else None
    payload = b.CreateByteVector(op.payload) if op.payload else None
    fingerprint = b.CreateByteVector(op.fingerprint) if op.fingerprint else None
    owner = _string(b, op.owner) if op.owner else None
    _Op.Start(b)
    _Op.AddType(b, int(op.type))
    _Op.AddNs(b, ns)
    _Op.AddKey(b, key)
    for add, value in ((_Op.AddStatus, status), (_Op.AddPayload, payload),
                       (_Op.AddFingerprint, fingerprint), (_Op.AddTtlMs, op.ttl_ms),
                       (_Op.AddCondition, condition), (_Op.AddUpdate, update),
                       (_Op.AddOwner, owner), (_Op.AddLeaseMs, op.lease_ms),
                       (_Op.AddWaitMs, op.wait_ms)):
        if value is not None:  # absent, not a default: ttl_ms etc. are optional scalars
            add(b, value)
    return _Op.End(b)


def encode_apply(request_id: int, ops: Sequence[Op]) -> bytes:
    """An ApplyRequest: the ops run in order and commit as one unit."""
    size = 64 + sum(96 + len(op.key) + len(op.payload) + len(op.fingerprint) for op in ops)
    b = flatbuffers.Builder(size)
    offsets = [_op(b, op) for op in ops]
    _ApplyRequest.StartOpsVector(b, len(offsets))
    for o in reversed(offsets):
        b.PrependUOffsetTRelative(o)
    vector = b.EndVector()
    _ApplyRequest.Start(b)
    _ApplyRequest.AddOps(b, vector)
    return _finish(b, request_id, _Body.ApplyRequest, _ApplyRequest.End(b))


def encode_stats(request_id: int) -> bytes:
    b = flatbuffers.Builder(64)
    _StatsRequest.Start(b)
    return _finish(b, request_id, _Body.StatsRequest, _StatsRequest.End(b))


# ---------------------------------------------------------------------------------------------
# Framing

class FrameReader:
    """Splits a byte stream into frame bodies. A length prefix of 0 or above max_frame_bytes
    raises errors.ProtocolError as soon as its 4 bytes are in, before anything is buffered for
    it; after that the reader must not be fed again (the connection is to be dropped)."""

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES):
        self.max_frame_bytes = max_frame_bytes
        self._buf = bytearray()

    def feed(self, data: bytes) -> List[bytes]:
        self._buf += data
        bodies = []
        at = 0
        while len(self._buf) - at >= 4:
            (n,) = _LENGTH.unpack_from(self._buf, at)
            if n == 0 or n > self.max_frame_bytes:
                raise errors.ProtocolError(
                    f"response frame length {n} is outside 1..{self.max_frame_bytes}")
            if len(self._buf) - at - 4 < n:
                break
            bodies.append(bytes(self._buf[at + 4:at + 4 + n]))
            at += 4 + n
        if at:
            del self._buf[:at]
        return bodies


# ---------------------------------------------------------------------------------------------
# Decoding

@dataclasses.dataclass(frozen=True)
class Reply:
    """A decoded frame. kind and value:
        "hello_reply"  HelloInfo
        "apply"        list of OpResult | OpError, one per op
        "stats"        dict (stats_result's)
        "error"        errors.ServerError: the whole request failed; request_id 0: the server
                       closes the connection after it (docs/protocol.md section 5)
    """

    request_id: int
    kind: str
    value: Any


class _Budget:
    """The bytes a response's decoded values copy out of its body: at most the body's size, so
    objects shared by many references cannot multiply a frame's memory."""

    def __init__(self, limit: int):
        self.left = limit

    def take(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            raise errors.ProtocolError("the response's values hold more bytes than its frame: "
                                       "they share objects")


def _table(obj, what: str):
    """Checks that the table `obj` (a generated object) and its vtable lie inside the body."""
    tab = obj._tab
    buf, pos, n = tab.Bytes, tab.Pos, len(tab.Bytes)
    if pos < 0 or pos + 4 > n:
        raise errors.ProtocolError(f"{what} at {pos} lies outside the frame of {n} bytes")
    vtable = pos - _I32.unpack_from(buf, pos)[0]
    if vtable < 0 or vtable + 4 > n:
        raise errors.ProtocolError(f"{what}'s vtable at {vtable} lies outside the frame")
    vtable_size, table_size = _U16X2.unpack_from(buf, vtable)
    if vtable_size < 4 or vtable_size % 2 or vtable + vtable_size > n or table_size < 4 or \
            pos + table_size > n:
        raise errors.ProtocolError(f"{what}'s vtable at {vtable} is malformed")
    return obj


def _vector(obj, slot: int, elem_bytes: int, what: str):
    """(start, count) of the vector in field `slot`, checked to lie inside the body; None when
    the field is absent."""
    tab = obj._tab
    o = tab.Offset(slot)
    if o == 0:
        return None
    start, count = tab.Vector(o), tab.VectorLen(o)
    if start + count * elem_bytes > len(tab.Bytes):
        raise errors.ProtocolError(f"{what}: {count} elements run past the frame's end")
    return start, count


def _bytes(obj, slot: int, what: str, budget: _Budget) -> bytes:
    v = _vector(obj, slot, 1, what)
    if v is None:
        return b""
    budget.take(v[1])
    return bytes(obj._tab.Bytes[v[0]:v[0] + v[1]])


def _str(obj, slot: int, what: str, budget: _Budget) -> str:
    return _bytes(obj, slot, what, budget).decode("utf-8", "surrogateescape")


def _tables(obj, slot: int, cls, what: str):
    """The tables of the vector of tables in field `slot` (absent: None), each checked."""
    v = _vector(obj, slot, 4, what)
    if v is None:
        return None
    tab = obj._tab
    out = []
    for i in range(v[1]):
        t = cls()
        t.Init(tab.Bytes, tab.Indirect(v[0] + 4 * i))
        out.append(_table(t, what))
    return out


def _status_code(code: int) -> StatusCode:
    try:
        if code != 0:
            return StatusCode(code)
    except ValueError:
        pass
    raise errors.ProtocolError(f"error with status code {code}, which is not a known error")


def _error(e, budget: _Budget):
    """(code, message) of an Error table."""
    _table(e, "Error")
    return _status_code(e.Code()), _str(e, _ERROR_MESSAGE, "Error.message", budget)


def _record(r, budget: _Budget) -> Record:
    _table(r, "Record")
    return Record(
        status=_str(r, _RECORD_STATUS, "Record.status", budget),
        version=r.Version(),
        fence=r.Fence(),
        fingerprint=_bytes(r, _RECORD_FINGERPRINT, "Record.fingerprint", budget),
        payload=_bytes(r, _RECORD_PAYLOAD, "Record.payload", budget),
        created_ms=r.CreatedMs(),
        updated_ms=r.UpdatedMs(),
        expires_at_ms=r.ExpiresAtMs(),
        owner=_str(r, _RECORD_OWNER, "Record.owner", budget),
        lease_until_ms=r.LeaseUntilMs(),
        kind=RecordKind(r.Kind()))


def _op_answer(r, budget: _Budget) -> OpAnswer:
    e = r.Error()
    if e is not None:
        _table(e, "Error")
        message = _str(e, _ERROR_MESSAGE, "Error.message", budget)
        try:
            return OpError(_status_code(e.Code()), message)
        except errors.ProtocolError as unknown:
            # A well-formed error with a code this client does not know: that op's CORRUPTION.
            return OpError(StatusCode.CORRUPTION, f"{unknown.message}: {message}")
    outcome = r.Outcome()
    try:
        outcome = Outcome(outcome)
    except ValueError:
        # A newer server's outcome: that op's answer is unknown here (the C++ client: the same).
        return OpError(StatusCode.CORRUPTION, f"unknown outcome {outcome}")
    record = r.Record()
    return OpResult(outcome=outcome,
                    record=None if record is None else _record(record, budget),
                    fingerprint_matches=bool(r.FingerprintMatches()),
                    token=_str(r, _OPRESULT_TOKEN, "OpResult.token", budget))


def _apply(body_table, budget: _Budget) -> List[OpAnswer]:
    response = _ApplyResponse()
    response.Init(body_table.Bytes, body_table.Pos)
    _table(response, "ApplyResponse")
    results = _tables(response, _APPLY_RESPONSE_RESULTS, _OpResult, "ApplyResponse.results")
    if results is None:
        raise errors.ProtocolError("ApplyResponse without results")
    return [_op_answer(r, budget) for r in results]


def _hello_reply(body_table, budget: _Budget) -> HelloInfo:
    reply = _HelloReply()
    reply.Init(body_table.Bytes, body_table.Pos)
    _table(reply, "HelloReply")
    values = {name: getattr(reply, _accessor(name))() for name in _HELLO_REPLY_NUMBERS}
    return HelloInfo(server_version=_str(reply, _HELLO_REPLY_SERVER_VERSION,
                                         "HelloReply.server_version", budget), **values)


def _metric_sample(s, budget: _Budget) -> Dict[str, Any]:
    labels = {}
    for label in _tables(s, _SAMPLE_LABELS, _MetricLabel, "MetricSample.labels") or []:
        labels[_str(label, _LABEL_NAME, "MetricLabel.name", budget)] = \
            _str(label, _LABEL_VALUE, "MetricLabel.value", budget)
    buckets = []
    v = _vector(s, _SAMPLE_BUCKETS, _BUCKET_BYTES, "MetricSample.buckets")
    if v is not None:
        budget.take(v[1] * _BUCKET_BYTES)
        buckets = list(struct.iter_unpack("<dQ", s._tab.Bytes[v[0]:v[0] + v[1] * _BUCKET_BYTES]))
    return {"labels": labels, "value": s.Value(), "buckets": buckets, "sum": s.Sum(),
            "count": s.Count()}


def _stats(body_table, budget: _Budget) -> Dict[str, Any]:
    stats = _StatsResponse()
    stats.Init(body_table.Bytes, body_table.Pos)
    _table(stats, "StatsResponse")
    out: Dict[str, Any] = {name: getattr(stats, _accessor(name))() for name in _STATS_NUMBERS}
    out["write_stalled"] = bool(out["write_stalled"])
    out["durability"] = _str(stats, _STATS_DURABILITY, "StatsResponse.durability", budget)
    families = []
    for f in _tables(stats, _STATS_METRICS, _MetricFamily, "StatsResponse.metrics") or []:
        families.append({
            "name": _str(f, _FAMILY_NAME, "MetricFamily.name", budget),
            "help": _str(f, _FAMILY_HELP, "MetricFamily.help", budget),
            "type": _METRIC_TYPES.get(f.Type(), f"type {f.Type()}"),
            "samples": [_metric_sample(s, budget) for s in
                        _tables(f, _FAMILY_SAMPLES, _MetricSample, "MetricFamily.samples") or []],
        })
    out["metrics"] = families
    return out


_BODIES = {
    _Body.HelloReply: ("hello_reply", _hello_reply),
    _Body.ApplyResponse: ("apply", _apply),
    _Body.StatsResponse: ("stats", _stats),
}


def _decode(body: bytes) -> Reply:
    if len(body) < 8:
        raise errors.ProtocolError(f"a frame of {len(body)} bytes is too short for a FlatBuffer")
    budget = _Budget(len(body))
    frame = _Frame.Frame()
    frame.Init(body, _U32.unpack_from(body, 0)[0])
    _table(frame, "Frame")
    request_id = frame.Id()
    e = frame.Error()
    if e is not None:
        code, message = _error(e, budget)
        return Reply(request_id, "error", errors.ServerError(code, message))
    body_type = frame.BodyType()
    body_table = frame.Body()
    if body_table is None:
        raise errors.ProtocolError(f"response {request_id} has neither a body nor an error")
    if body_type not in _BODIES:
        raise errors.ProtocolError(f"response {request_id} has body type {body_type}, "
                                   "which this client never asks for")
    kind, decode = _BODIES[body_type]
    return Reply(request_id, kind, decode(body_table, budget))


def decode_frame(body: bytes) -> Reply:
    """Decodes one frame body (without its length prefix). Raises errors.ProtocolError for any
    body that is not a well-formed response."""
    try:
        return _decode(bytes(body))
    except errors.ProtocolError:
        raise
    except Exception as e:  # noqa: BLE001 - any failure to read the server's bytes is theirs
        raise errors.ProtocolError(
            f"response frame does not decode ({type(e).__name__}: {e})") from None


# ---------------------------------------------------------------------------------------------
# A reply's value for the request it answers

def hello_result(reply: Reply) -> HelloInfo:
    """The server's HelloInfo, or raises: ServerError (e.g. UNAUTHENTICATED, NOT_SUPPORTED),
    ProtocolError (not a HelloReply), ServerError NOT_SUPPORTED for another protocol version."""
    if reply.kind == "error":
        raise reply.value
    if reply.kind != "hello_reply":
        raise errors.ProtocolError(f"expected a HelloReply, got {reply.kind}")
    info = reply.value
    if info.protocol_version != PROTOCOL_VERSION:
        raise errors.ServerError(StatusCode.NOT_SUPPORTED,
                                 f"server speaks protocol version {info.protocol_version}; "
                                 f"this client speaks {PROTOCOL_VERSION}")
    return info


def max_reply_bytes(info: HelloInfo) -> int:
    """The FrameReader limit once the server's HelloReply is in: what it announced, capped."""
    announced = info.max_reply_bytes or DEFAULT_MAX_FRAME_BYTES
    return min(announced, MAX_REPLY_BYTES_CAP)


def apply_result(reply: Reply, expected: int) -> List[OpAnswer]:
    """One answer per op; raises the request's ServerError, or ProtocolError for a reply of
    another kind or with another number of results."""
    if reply.kind == "error":
        raise reply.value
    if reply.kind != "apply":
        raise errors.ProtocolError(f"expected an ApplyResponse, got {reply.kind}")
    if len(reply.value) != expected:
        raise errors.ProtocolError(f"expected {expected} results, got {len(reply.value)}")
    return reply.value


def stats_result(reply: Reply) -> Dict[str, Any]:
    if reply.kind == "error":
        raise reply.value
    if reply.kind != "stats":
        raise errors.ProtocolError(f"expected a StatsResponse, got {reply.kind}")
    return reply.value
