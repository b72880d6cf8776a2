"""Test support: response frames built field by field, as a server (or a hostile peer) would.

The generated builders are used directly, so a test can write what idemstore's own encoder never
would: unknown outcomes and codes, missing results, objects shared by many references.
"""
import struct

import flatbuffers

from idemstore._proto import ApplyResponse, Error, Frame, HelloReply, OpResult, Record
from idemstore._proto import StatsResponse
from idemstore._proto.Body import Body


def framed(body):
    return struct.pack("<I", len(body)) + body


def _finish(b, request_id, body_type=None, body=None, error=None):
    Frame.Start(b)
    Frame.AddId(b, request_id)
    if body is not None:
        Frame.AddBodyType(b, body_type)
        Frame.AddBody(b, body)
    if error is not None:
        Frame.AddError(b, error)
    b.Finish(Frame.End(b))
    return bytes(b.Output())


def _error(b, code, message):
    text = b.CreateString(message)
    Error.Start(b)
    Error.AddCode(b, code)
    Error.AddMessage(b, text)
    return Error.End(b)


def error_frame(request_id, code, message):
    b = flatbuffers.Builder(64)
    return _finish(b, request_id, error=_error(b, code, message))


def hello_reply(request_id, protocol_version=2, server_version="idemstored test",
                max_frame_bytes=4 << 20, max_reply_bytes=4 << 20):
    b = flatbuffers.Builder(128)
    version = b.CreateString(server_version)
    HelloReply.Start(b)
    HelloReply.AddProtocolVersion(b, protocol_version)
    HelloReply.AddServerVersion(b, version)
    HelloReply.AddMaxFrameBytes(b, max_frame_bytes)
    HelloReply.AddMaxBatchOps(b, 10000)
    HelloReply.AddMaxReplyBytes(b, max_reply_bytes)
    return _finish(b, request_id, Body.HelloReply, HelloReply.End(b))


def record(b, status="PENDING", version=1, fence=17, fingerprint=b"", payload=b"",
           owner="", kind=1, created_ms=1700000000000, expires_at_ms=1700086400000,
           lease_until_ms=0, payload_offset=None):
    """A Record table; payload_offset: an existing byte vector to point at (sharing)."""
    status_s = b.CreateString(status)
    fp = b.CreateByteVector(fingerprint)
    pl = payload_offset if payload_offset is not None else b.CreateByteVector(payload)
    owner_s = b.CreateString(owner)
    Record.Start(b)
    Record.AddStatus(b, status_s)
    Record.AddVersion(b, version)
    Record.AddFence(b, fence)
    Record.AddFingerprint(b, fp)
    Record.AddPayload(b, pl)
    Record.AddCreatedMs(b, created_ms)
    Record.AddUpdatedMs(b, created_ms)
    Record.AddExpiresAtMs(b, expires_at_ms)
    Record.AddOwner(b, owner_s)
    Record.AddLeaseUntilMs(b, lease_until_ms)
    Record.AddKind(b, kind)
    return Record.End(b)


def op_result(b, outcome=1, record_offset=None, error=None, fingerprint_matches=True, token=""):
    err = _error(b, *error) if error is not None else None
    token_s = b.CreateString(token) if token else None
    OpResult.Start(b)
    if err is not None:
        OpResult.AddError(b, err)
    else:
        OpResult.AddOutcome(b, outcome)
    if record_offset is not None:
        OpResult.AddRecord(b, record_offset)
    if not fingerprint_matches:
        OpResult.AddFingerprintMatches(b, False)
    if token_s is not None:
        OpResult.AddToken(b, token_s)
    return OpResult.End(b)


def apply_response(request_id, make_results, size=1024):
    """make_results(builder) -> [OpResult offsets] (None: no results vector at all)."""
    b = flatbuffers.Builder(size)
    offsets = make_results(b)
    vector = None
    if offsets is not None:
        ApplyResponse.StartResultsVector(b, len(offsets))
        for o in reversed(offsets):
            b.PrependUOffsetTRelative(o)
        vector = b.EndVector()
    ApplyResponse.Start(b)
    if vector is not None:
        ApplyResponse.AddResults(b, vector)
    return _finish(b, request_id, Body.ApplyResponse, ApplyResponse.End(b))


def stats_response(request_id, durability="sync", ops=7):
    b = flatbuffers.Builder(128)
    d = b.CreateString(durability)
    StatsResponse.Start(b)
    StatsResponse.AddOps(b, ops)
    StatsResponse.AddDurability(b, d)
    return _finish(b, request_id, Body.StatsResponse, StatsResponse.End(b))


def frame_without_body(request_id):
    return _finish(flatbuffers.Builder(32), request_id)


def frame_with_body_type(request_id, body_type):
    """A frame naming `body_type`, with an empty table as its body."""
    b = flatbuffers.Builder(32)
    b.StartObject(0)
    return _finish(b, request_id, body_type, b.EndObject())
