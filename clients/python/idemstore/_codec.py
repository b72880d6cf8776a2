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

Requests and the ApplyResponse, on every call's path, are written and read by hand (_wire),
with the slots and types the generated code (_proto) gives; the rare HelloReply and
StatsResponse are read through the generated accessors.

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

from . import _wire, errors
from ._proto import ApplyRequest as _ApplyRequest
from ._proto import Condition as _Condition
from ._proto import Frame as _Frame
from ._proto import Hello as _Hello
from ._proto import Op as _Op
from ._proto import OptionalInt64 as _OptionalInt64
from ._proto import OptionalUint64 as _OptionalUint64
from ._proto import Update as _Update
from ._proto import ApplyResponse as _ApplyResponseTable
from ._proto import Error as _Error
from ._proto import OpResult as _OpResultTable
from ._proto import Record as _RecordTable
from ._proto.Body import Body as _Body
from ._proto.HelloReply import HelloReply as _HelloReply
from ._proto.MetricFamily import MetricFamily as _MetricFamily
from ._proto.MetricLabel import MetricLabel as _MetricLabel
from ._proto.MetricSample import MetricSample as _MetricSample
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
_U32 = struct.Struct("<I")

# Vtable slots of the fields of the rare responses (HelloReply, StatsResponse) read by hand
# below: 4 + 2 * the field's index in its table in net/protocol.fbs. Fields are only ever
# appended there, so these never change.
_HELLO_REPLY_SERVER_VERSION = 6
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
    "background_errors", "expired_unreclaimed_records", "clock_steps", "expiry_windows",
    "reclaim_failures"]
_METRIC_TYPES = {0: "counter", 1: "gauge", 2: "histogram"}


def _accessor(field: str) -> str:
    """The generated accessor's name of a schema field: max_frame_bytes -> MaxFrameBytes."""
    return "".join(part.capitalize() for part in field.split("_"))


# ---------------------------------------------------------------------------------------------
# Encoding

# The tables a request is made of, as the generated code describes them (_wire.schema).
_FRAME_SLOTS, _FRAME = _wire.schema(_Frame, "id", "body_type", "body", "error")
_, _HELLO = _wire.schema(_Hello, "protocol_version", "client_name", "token")
_, _APPLY_REQUEST = _wire.schema(_ApplyRequest, "ops")
_, _OP = _wire.schema(_Op, "type", "ns", "key", "status", "payload", "fingerprint", "ttl_ms",
                      "condition", "update", "owner", "lease_ms", "wait_ms")
_, _CONDITION = _wire.schema(_Condition, "status_in", "version", "fence")
_, _UPDATE = _wire.schema(_Update, "status", "payload", "ttl_ms")
# Struct fields are written inline, as the scalar their struct holds.
_CONDITION_VERSION = _wire.Field(_CONDITION["version"].slot,
                                 _wire.struct_format(_OptionalUint64.CreateOptionalUint64))
_CONDITION_FENCE = _wire.Field(_CONDITION["fence"].slot,
                               _wire.struct_format(_OptionalUint64.CreateOptionalUint64))
_UPDATE_TTL_MS = _wire.Field(_UPDATE["ttl_ms"].slot,
                             _wire.struct_format(_OptionalInt64.CreateOptionalInt64))


def _text(s: str) -> bytes:
    return s.encode("utf-8", "surrogateescape")


def _utf8(s) -> bytes:
    """A str as UTF-8 (strict: a token is not to be altered), bytes as they are."""
    return s if isinstance(s, bytes) else s.encode("utf-8")


def _frame(request_id: int, body_type: int):
    """A Frame's bytes so far (its body to follow) and where the body's offset goes."""
    if not 1 <= request_id < 2**64:
        raise ValueError(f"request id {request_id} is outside 1..2^64-1 (0 is reserved)")
    buf = bytearray(4)  # the root offset
    pos, (body,) = _wire.table(buf, [(_FRAME["id"], request_id), (_FRAME["body"], None),
                                     (_FRAME["body_type"], body_type)])
    _wire.ref(buf, 0, pos)
    return buf, body


def _framed(buf: bytearray) -> bytes:
    # The length in front of a plain FlatBuffer aligned relative to its own first byte, which
    # is what the server verifies (never a size-prefixed buffer).
    return _LENGTH.pack(len(buf)) + buf


def encode_hello(request_id: int, token: Optional[str] = None,
                 client_name: str = CLIENT_NAME) -> bytes:
    """The Hello that opens every connection; `token` is the principal's secret (None: none)."""
    buf, body = _frame(request_id, _Body.Hello)
    fields = [(_HELLO["protocol_version"], PROTOCOL_VERSION), (_HELLO["client_name"], None)]
    strings = [_utf8(client_name)]
    if token:
        fields.append((_HELLO["token"], None))
        strings.append(_utf8(token))
    pos, refs = _wire.table(buf, fields)
    _wire.ref(buf, body, pos)
    for at, data in zip(refs, strings):
        _wire.ref(buf, at, _wire.vector(buf, data, nul=True))
    return _framed(buf)


def _condition(buf: bytearray, condition) -> int:
    fields = []
    if condition.version is not None:
        fields.append((_CONDITION_VERSION, condition.version))
    if condition.fence is not None:
        fields.append((_CONDITION_FENCE, condition.fence))
    if condition.status_in:
        fields.append((_CONDITION["status_in"], None))
    pos, refs = _wire.table(buf, fields)
    if condition.status_in:
        vector = _wire.offsets(buf, len(condition.status_in))
        _wire.ref(buf, refs[0], vector)
        for i, status in enumerate(condition.status_in):
            _wire.ref(buf, vector + 4 + 4 * i, _wire.vector(buf, _text(status), nul=True))
    return pos


def _update(buf: bytearray, update) -> int:
    fields, children = [], []
    if update.ttl_ms is not None:
        fields.append((_UPDATE_TTL_MS, update.ttl_ms))
    if update.status is not None:
        fields.append((_UPDATE["status"], None))
        children.append((_text(update.status), True))
    if update.payload is not None:
        fields.append((_UPDATE["payload"], None))
        children.append((update.payload, False))
    pos, refs = _wire.table(buf, fields)
    for at, (data, nul) in zip(refs, children):
        _wire.ref(buf, at, _wire.vector(buf, data, nul))
    return pos


def _op(buf: bytearray, op: Op) -> int:
    # Every field given is written whatever the op's type; which fields a type reads is the
    # server's business, as in the C++ encoder (net/src/protocol_codec.cc, MakeOp). Absent
    # durations are left out (not a default: ttl_ms etc. are optional scalars).
    fields = []
    if op.ttl_ms is not None:
        fields.append((_OP["ttl_ms"], op.ttl_ms))
    if op.lease_ms is not None:
        fields.append((_OP["lease_ms"], op.lease_ms))
    if op.wait_ms is not None:
        fields.append((_OP["wait_ms"], op.wait_ms))
    fields.append((_OP["ns"], None))
    fields.append((_OP["key"], None))
    children = [(_text(op.ns), True), (op.key, False)]
    if op.status:
        fields.append((_OP["status"], None))
        children.append((_text(op.status), True))
    if op.payload:
        fields.append((_OP["payload"], None))
        children.append((op.payload, False))
    if op.fingerprint:
        fields.append((_OP["fingerprint"], None))
        children.append((op.fingerprint, False))
    if op.owner:
        fields.append((_OP["owner"], None))
        children.append((_text(op.owner), True))
    if not op.condition.empty():
        fields.append((_OP["condition"], None))
        children.append((op.condition, _condition))
    if not op.update.empty():
        fields.append((_OP["update"], None))
        children.append((op.update, _update))
    fields.append((_OP["type"], int(op.type)))
    pos, refs = _wire.table(buf, fields)
    for at, (data, how) in zip(refs, children):
        if how is True or how is False:
            _wire.ref(buf, at, _wire.vector(buf, data, how))
        else:
            _wire.ref(buf, at, how(buf, data))
    return pos


def encode_apply(request_id: int, ops: Sequence[Op]) -> bytes:
    """An ApplyRequest: the ops run in order and commit as one unit."""
    buf, body = _frame(request_id, _Body.ApplyRequest)
    pos, (ops_at,) = _wire.table(buf, [(_APPLY_REQUEST["ops"], None)])
    _wire.ref(buf, body, pos)
    vector = _wire.offsets(buf, len(ops))
    _wire.ref(buf, ops_at, vector)
    at = vector + 4
    for op in ops:
        _wire.ref(buf, at, _op(buf, op))
        at += 4
    return _framed(buf)


def encode_stats(request_id: int) -> bytes:
    buf, body = _frame(request_id, _Body.StatsRequest)
    pos, _ = _wire.table(buf, [])
    _wire.ref(buf, body, pos)
    return _framed(buf)


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
    _wire.fields(obj._tab.Bytes, obj._tab.Pos, 0, what)
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


# The tables of an ApplyResponse, read by hand (_wire) as the generated code describes them.
_ERROR_SLOTS, _ERROR = _wire.schema(_Error, "code", "message")
_RESULT_SLOTS, _RESULT = _wire.schema(_OpResultTable, "error", "outcome", "record",
                                      "fingerprint_matches", "token")
_RECORD_SLOTS, _RECORD = _wire.schema(_RecordTable, "status", "version", "fence", "fingerprint",
                                      "payload", "created_ms", "updated_ms", "expires_at_ms",
                                      "owner", "lease_until_ms", "kind")
_APPLY_RESPONSE_SLOTS, _APPLY_RESPONSE = _wire.schema(_ApplyResponseTable, "results")
# The vtable offsets of hand-read fields, which test_codec checks against the accessors'.
_RECORD_STATUS, _RECORD_FINGERPRINT, _RECORD_PAYLOAD, _RECORD_OWNER = (
    _RECORD[name].vt for name in ("status", "fingerprint", "payload", "owner"))
_OPRESULT_TOKEN = _RESULT["token"].vt
_ERROR_MESSAGE = _ERROR["message"].vt
_APPLY_RESPONSE_RESULTS = _APPLY_RESPONSE["results"].vt
_OUTCOMES = {int(o): o for o in Outcome}
_KINDS = {int(k): k for k in RecordKind}


def _scalar(buf: bytes, pos: int, offset: int, field: _wire.Field, default):
    return field.struct.unpack_from(buf, pos + offset)[0] if offset else default


def _bytes_at(buf: bytes, pos: int, offset: int, what: str, budget: _Budget) -> bytes:
    """The byte vector (or string) of a field at `offset` in the table at `pos`; b"" absent."""
    if not offset:
        return b""
    start, count = _wire.span(buf, pos + offset, 1, what)
    budget.take(count)
    return buf[start:start + count]


def _text_at(buf: bytes, pos: int, offset: int, what: str, budget: _Budget) -> str:
    return _bytes_at(buf, pos, offset, what, budget).decode("utf-8", "surrogateescape")


def _error(buf: bytes, pos: int, budget: _Budget):
    """(code: int, message) of the Error table at `pos`."""
    f = _wire.fields(buf, pos, _ERROR_SLOTS, "Error")
    return (_scalar(buf, pos, f[_ERROR["code"].slot], _ERROR["code"], 0),
            _text_at(buf, pos, f[_ERROR["message"].slot], "Error.message", budget))


_R_STATUS, _R_VERSION, _R_FENCE, _R_FINGERPRINT, _R_PAYLOAD, _R_CREATED, _R_UPDATED, \
    _R_EXPIRES, _R_OWNER, _R_LEASE, _R_KIND = (_RECORD[name] for name in (
        "status", "version", "fence", "fingerprint", "payload", "created_ms", "updated_ms",
        "expires_at_ms", "owner", "lease_until_ms", "kind"))


def _record(buf: bytes, pos: int, budget: _Budget) -> Record:
    f = _wire.fields(buf, pos, _RECORD_SLOTS, "Record")
    kind = _scalar(buf, pos, f[_R_KIND.slot], _R_KIND, 0)
    return Record(
        status=_text_at(buf, pos, f[_R_STATUS.slot], "Record.status", budget),
        version=_scalar(buf, pos, f[_R_VERSION.slot], _R_VERSION, 0),
        fence=_scalar(buf, pos, f[_R_FENCE.slot], _R_FENCE, 0),
        fingerprint=_bytes_at(buf, pos, f[_R_FINGERPRINT.slot], "Record.fingerprint", budget),
        payload=_bytes_at(buf, pos, f[_R_PAYLOAD.slot], "Record.payload", budget),
        created_ms=_scalar(buf, pos, f[_R_CREATED.slot], _R_CREATED, 0),
        updated_ms=_scalar(buf, pos, f[_R_UPDATED.slot], _R_UPDATED, 0),
        expires_at_ms=_scalar(buf, pos, f[_R_EXPIRES.slot], _R_EXPIRES, 0),
        owner=_text_at(buf, pos, f[_R_OWNER.slot], "Record.owner", budget),
        lease_until_ms=_scalar(buf, pos, f[_R_LEASE.slot], _R_LEASE, 0),
        kind=_KINDS.get(kind) or RecordKind(kind))


def _op_answer(buf: bytes, pos: int, budget: _Budget) -> OpAnswer:
    f = _wire.fields(buf, pos, _RESULT_SLOTS, "ApplyResponse.results")
    error = f[_RESULT["error"].slot]
    if error:
        code, message = _error(buf, _wire.deref(buf, pos + error), budget)
        try:
            return OpError(_status_code(code), message)
        except errors.ProtocolError as unknown:
            # A well-formed error with a code this client does not know: that op's CORRUPTION.
            return OpError(StatusCode.CORRUPTION, f"{unknown.message}: {message}")
    outcome = _scalar(buf, pos, f[_RESULT["outcome"].slot], _RESULT["outcome"], 0)
    if outcome not in _OUTCOMES:
        # A newer server's outcome: that op's answer is unknown here (the C++ client: the same).
        return OpError(StatusCode.CORRUPTION, f"unknown outcome {outcome}")
    record = f[_RESULT["record"].slot]
    matches = f[_RESULT["fingerprint_matches"].slot]
    return OpResult(outcome=_OUTCOMES[outcome],
                    record=_record(buf, _wire.deref(buf, pos + record), budget) if record else None,
                    fingerprint_matches=bool(buf[pos + matches]) if matches else True,
                    token=_text_at(buf, pos, f[_RESULT["token"].slot], "OpResult.token", budget))


def _apply(buf: bytes, pos: int, budget: _Budget) -> List[OpAnswer]:
    f = _wire.fields(buf, pos, _APPLY_RESPONSE_SLOTS, "ApplyResponse")
    results = f[_APPLY_RESPONSE["results"].slot]
    if not results:
        raise errors.ProtocolError("ApplyResponse without results")
    start, count = _wire.span(buf, pos + results, 4, "ApplyResponse.results")
    return [_op_answer(buf, _wire.deref(buf, at), budget)
            for at in range(start, start + 4 * count, 4)]


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


def _generated(decode):
    """A body decoder of the generated accessors' kind (HelloReply, StatsResponse: rare)."""
    return lambda buf, pos, budget: decode(flatbuffers.table.Table(buf, pos), budget)


_BODIES = {
    _Body.HelloReply: ("hello_reply", _generated(_hello_reply)),
    _Body.ApplyResponse: ("apply", _apply),
    _Body.StatsResponse: ("stats", _generated(_stats)),
}


def _decode(body: bytes) -> Reply:
    if len(body) < 8:
        raise errors.ProtocolError(f"a frame of {len(body)} bytes is too short for a FlatBuffer")
    budget = _Budget(len(body))
    pos = _U32.unpack_from(body, 0)[0]
    f = _wire.fields(body, pos, _FRAME_SLOTS, "Frame")
    request_id = _scalar(body, pos, f[_FRAME["id"].slot], _FRAME["id"], 0)
    error = f[_FRAME["error"].slot]
    if error:
        code, message = _error(body, _wire.deref(body, pos + error), budget)
        return Reply(request_id, "error", errors.ServerError(_status_code(code), message))
    body_type = _scalar(body, pos, f[_FRAME["body_type"].slot], _FRAME["body_type"], 0)
    table = f[_FRAME["body"].slot]
    if not table:
        raise errors.ProtocolError(f"response {request_id} has neither a body nor an error")
    if body_type not in _BODIES:
        raise errors.ProtocolError(f"response {request_id} has body type {body_type}, "
                                   "which this client never asks for")
    kind, decode = _BODIES[body_type]
    return Reply(request_id, kind, decode(body, _wire.deref(body, pos + table), budget))


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
