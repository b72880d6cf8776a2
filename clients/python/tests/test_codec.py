"""idemstore._codec without a server: what the encoder writes, what the decoder makes of
well-formed responses, and that no malformed response gets past it as anything but ProtocolError.
"""
import inspect
import random
import re
import struct
import unittest

import wire_builders as wb
from idemstore import _codec, errors, ops
from idemstore._proto import ApplyRequest, Frame, Hello
from idemstore._proto import MetricFamily, MetricLabel, MetricSample
from idemstore._proto import OpResult as WireOpResult
from idemstore._proto import Record as WireRecord
from idemstore._proto import StatsResponse, HelloReply as WireHelloReply
from idemstore._proto import ApplyResponse as WireApplyResponse
from idemstore._proto import Error as WireError
from idemstore._proto.Body import Body
from idemstore.types import (HelloInfo, OpError, OpResult, OpType, Outcome, Record, RecordKind,
                             StatusCode)


def body_of(frame):
    """The FlatBuffer of a whole frame, checking its length prefix."""
    (n,) = struct.unpack_from("<I", frame)
    assert n == len(frame) - 4, (n, len(frame))
    return frame[4:]


def wire_ops(frame):
    f = Frame.Frame.GetRootAs(body_of(frame))
    assert f.BodyType() == Body.ApplyRequest
    request = ApplyRequest.ApplyRequest()
    request.Init(f.Body().Bytes, f.Body().Pos)
    return f.Id(), [request.Ops(i) for i in range(request.OpsLength())]


def wire_bytes(op, name):
    if getattr(op, name + "IsNone")():
        return None
    return bytes(getattr(op, name)(i) for i in range(getattr(op, name + "Length")()))


def comparable(reply):
    """A Reply as a value (exceptions do not compare equal)."""
    value = reply.value
    if isinstance(value, errors.Error):
        value = (type(value), value.code, value.message)
    return reply.request_id, reply.kind, value


def inserted_response(request_id=2, **record_fields):
    return wb.apply_response(
        request_id, lambda b: [wb.op_result(b, 1, wb.record(b, **record_fields))])


class EncoderTest(unittest.TestCase):
    def test_hello_carries_version_name_and_token_only_when_given(self):
        for token in (None, "s3cret-token-0123456789"):
            f = Frame.Frame.GetRootAs(body_of(_codec.encode_hello(1, token, "tester")))
            self.assertEqual((1, Body.Hello), (f.Id(), f.BodyType()))
            hello = Hello.Hello()
            hello.Init(f.Body().Bytes, f.Body().Pos)
            self.assertEqual(2, hello.ProtocolVersion())
            self.assertEqual(b"tester", hello.ClientName())
            self.assertEqual(None if token is None else token.encode(), hello.Token())

    def test_absent_durations_are_left_out_and_zero_is_sent(self):
        # Absent is "the namespace's default"; 0 is a value the server refuses (protocol.md §4).
        _, (absent, zero, forever) = wire_ops(_codec.encode_apply(2, [
            ops.begin("jobs", "k"),
            ops.begin("jobs", "k", lease_ms=0, wait_ms=0, ttl_ms=0),
            ops.insert("pay", "k", status="S", ttl_ms=ops.FOREVER)]))
        self.assertEqual((None, None, None), (absent.TtlMs(), absent.LeaseMs(), absent.WaitMs()))
        self.assertEqual((0, 0, 0), (zero.TtlMs(), zero.LeaseMs(), zero.WaitMs()))
        self.assertEqual(-1, forever.TtlMs())

    def test_every_field_of_an_op_round_trips(self):
        request_id, (insert, cas, complete, transition) = wire_ops(_codec.encode_apply(9, [
            ops.insert("pay", b"\x00key\xff", status="PENDING", payload=b"\x01\x02",
                       fingerprint="fp", ttl_ms=60_000),
            ops.cas("pay", "k", expect_status=["A", "B"], expect_version=3, status="C",
                    payload=b"", ttl_ms=5_000),
            ops.complete("jobs", "k", fence=2**64 - 1, payload=b"resp", status="DONE"),
            ops.transition("orders", "o1", "PAID", expect_version=4)]))
        self.assertEqual(9, request_id)
        self.assertEqual((OpType.INSERT, b"pay", b"\x00key\xff", b"PENDING", 60_000),
                         (insert.Type(), insert.Ns(), wire_bytes(insert, "Key"), insert.Status(),
                          insert.TtlMs()))
        self.assertEqual((b"\x01\x02", b"fp"),
                         (wire_bytes(insert, "Payload"), wire_bytes(insert, "Fingerprint")))
        self.assertIsNone(insert.Condition())
        self.assertIsNone(insert.Update())

        condition, update = cas.Condition(), cas.Update()
        self.assertEqual([b"A", b"B"],
                         [condition.StatusIn(i) for i in range(condition.StatusInLength())])
        self.assertEqual(3, condition.Version().Value())
        self.assertIsNone(condition.Fence())
        self.assertEqual(b"C", update.Status())
        self.assertEqual(b"", wire_bytes(update, "Payload"))  # present and empty: set it empty
        self.assertEqual(5_000, update.TtlMs().Value())

        self.assertEqual(2**64 - 1, complete.Condition().Fence().Value())
        self.assertEqual((b"resp", b"DONE"), (wire_bytes(complete, "Payload"), complete.Status()))
        self.assertEqual((b"PAID", 4),
                         (transition.Status(), transition.Condition().Version().Value()))
        self.assertIsNone(transition.Update())  # no payload given: the record keeps its own

    def test_an_empty_batch_is_a_request_with_no_ops(self):
        self.assertEqual((3, []), wire_ops(_codec.encode_apply(3, [])))

    def test_request_id_zero_is_refused(self):
        with self.assertRaises(ValueError):
            _codec.encode_stats(0)

    def test_builders_refuse_values_that_cannot_be_sent(self):
        with self.assertRaises(TypeError):
            ops.begin("jobs", "k", lease_ms=1.5)
        with self.assertRaises(ValueError):
            ops.heartbeat("jobs", "k", fence=-1)
        with self.assertRaises(TypeError):
            ops.get("pay", 42)

    def test_longest_wait(self):
        self.assertEqual(0, ops.longest_wait_ms([ops.get("a", "k")]))
        self.assertEqual(700, ops.longest_wait_ms([ops.lock("a", "k", owner="o", wait_ms=700),
                                                   ops.begin("a", "k", wait_ms=20)]))


class DecoderTest(unittest.TestCase):
    def test_the_documented_response_decodes(self):
        # docs/protocol.md section 9, "Decoding a response with a record, byte by byte".
        doc = bytes.fromhex("""
            14 00 00 00 00 00 00 00 00 00 0a 00 1a 00 0c 00
            0b 00 04 00 0a 00 00 00 1c 00 00 00 00 00 00 04
            02 00 00 00 00 00 00 00 00 00 00 00 00 00 06 00
            08 00 04 00 06 00 00 00 04 00 00 00 01 00 00 00
            10 00 00 00 00 00 0a 00 0e 00 00 00 07 00 08 00
            0a 00 00 00 00 00 00 01 1c 00 00 00 00 00 16 00
            40 00 04 00 14 00 1c 00 08 00 0c 00 24 00 2c 00
            34 00 10 00 16 00 00 00 3c 00 00 00 44 00 00 00
            44 00 00 00 44 00 00 00 01 00 00 00 00 00 00 00
            11 00 00 00 00 00 00 00 00 68 e5 cf 8b 01 00 00
            00 68 e5 cf 8b 01 00 00 00 c4 0b d5 8b 01 00 00
            00 00 00 00 07 00 00 00 50 45 4e 44 49 4e 47 00
            00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00""")
        self.assertEqual(208, len(doc))
        reply = _codec.decode_frame(doc)
        self.assertEqual((2, "apply"), (reply.request_id, reply.kind))
        self.assertEqual([OpResult(Outcome.INSERTED, Record(
            status="PENDING", version=1, fence=17, created_ms=1700000000000,
            updated_ms=1700000000000, expires_at_ms=1700086400000))], reply.value)

    def test_a_record_with_every_field(self):
        reply = _codec.decode_frame(inserted_response(
            5, status="IN_PROGRESS", version=3, fence=2**64 - 1, fingerprint=b"\x00fp",
            payload=b"\xffdata", owner="worker-1", kind=2, lease_until_ms=123))
        self.assertEqual(Record(status="IN_PROGRESS", version=3, fence=2**64 - 1,
                                fingerprint=b"\x00fp", payload=b"\xffdata",
                                created_ms=1700000000000, updated_ms=1700000000000,
                                expires_at_ms=1700086400000, owner="worker-1",
                                lease_until_ms=123, kind=RecordKind.ATTEMPT),
                         reply.value[0].record)

    def test_per_op_errors_tokens_and_fingerprint_mismatches(self):
        reply = _codec.decode_frame(wb.apply_response(4, lambda b: [
            wb.op_result(b, error=(1, "key is 600 bytes")),
            wb.op_result(b, 14, token="tok-123"),
            wb.op_result(b, 2, wb.record(b), fingerprint_matches=False),
            wb.op_result(b, 5)]))
        errors_, issued, exists, not_found = reply.value
        self.assertEqual(OpError(StatusCode.INVALID_ARGUMENT, "key is 600 bytes"), errors_)
        self.assertEqual((Outcome.ISSUED, "tok-123", None),
                         (issued.outcome, issued.token, issued.record))
        self.assertEqual((Outcome.EXISTS, False), (exists.outcome, exists.fingerprint_matches))
        self.assertEqual(OpResult(Outcome.NOT_FOUND), not_found)

    def test_an_unknown_outcome_is_that_ops_corruption(self):
        reply = _codec.decode_frame(wb.apply_response(4, lambda b: [wb.op_result(b, 99),
                                                                   wb.op_result(b, 7)]))
        self.assertEqual(OpError(StatusCode.CORRUPTION, "unknown outcome 99"), reply.value[0])
        self.assertEqual(Outcome.FOUND, reply.value[1].outcome)

    def test_an_unknown_record_kind_is_kept(self):
        kind = _codec.decode_frame(inserted_response(kind=9)).value[0].record.kind
        self.assertEqual((9, "UNKNOWN_9"), (int(kind), kind.name))

    def test_a_request_error(self):
        reply = _codec.decode_frame(wb.error_frame(6, 3, "server has 1024 connections open"))
        self.assertEqual((6, "error"), (reply.request_id, reply.kind))
        self.assertIsInstance(reply.value, errors.ServerError)
        self.assertEqual((StatusCode.BUSY, "server has 1024 connections open"),
                         (reply.value.code, reply.value.message))
        with self.assertRaises(errors.ServerError):
            _codec.apply_result(reply, 1)

    def test_hello_reply(self):
        info = _codec.hello_result(_codec.decode_frame(wb.hello_reply(1, max_reply_bytes=8 << 20)))
        self.assertEqual(HelloInfo(protocol_version=2, server_version="idemstored test",
                                   max_frame_bytes=4 << 20, max_batch_ops=10000,
                                   max_reply_bytes=8 << 20), info)
        self.assertEqual(8 << 20, _codec.max_reply_bytes(info))
        self.assertEqual(_codec.DEFAULT_MAX_FRAME_BYTES,
                         _codec.max_reply_bytes(HelloInfo(protocol_version=2)))
        self.assertEqual(_codec.MAX_REPLY_BYTES_CAP,
                         _codec.max_reply_bytes(HelloInfo(max_reply_bytes=2**32 - 1)))

    def test_another_protocol_version_is_not_supported(self):
        with self.assertRaises(errors.ServerError) as raised:
            _codec.hello_result(_codec.decode_frame(wb.hello_reply(1, protocol_version=3)))
        self.assertEqual(StatusCode.NOT_SUPPORTED, raised.exception.code)

    def test_stats(self):
        stats = _codec.stats_result(_codec.decode_frame(wb.stats_response(3, "async", 42)))
        self.assertEqual(("async", 42, 0, False, []),
                         (stats["durability"], stats["ops"], stats["sst_bytes"],
                          stats["write_stalled"], stats["metrics"]))

    def test_the_number_of_results_must_match_the_ops(self):
        reply = _codec.decode_frame(inserted_response())
        self.assertEqual(1, len(_codec.apply_result(reply, 1)))
        with self.assertRaisesRegex(errors.ProtocolError, "expected 2 results, got 1"):
            _codec.apply_result(reply, 2)
        with self.assertRaisesRegex(errors.ProtocolError, "expected a StatsResponse"):
            _codec.stats_result(reply)

    def test_hand_read_fields_use_the_generated_codes_slots(self):
        # _codec reads strings and vectors itself (bounded); its slots must be flatc's.
        for cls, accessor, slot in [
                (WireRecord.Record, "Status", _codec._RECORD_STATUS),
                (WireRecord.Record, "FingerprintLength", _codec._RECORD_FINGERPRINT),
                (WireRecord.Record, "PayloadLength", _codec._RECORD_PAYLOAD),
                (WireRecord.Record, "Owner", _codec._RECORD_OWNER),
                (WireOpResult.OpResult, "Token", _codec._OPRESULT_TOKEN),
                (WireError.Error, "Message", _codec._ERROR_MESSAGE),
                (WireHelloReply.HelloReply, "ServerVersion", _codec._HELLO_REPLY_SERVER_VERSION),
                (WireApplyResponse.ApplyResponse, "ResultsLength", _codec._APPLY_RESPONSE_RESULTS),
                (StatsResponse.StatsResponse, "Durability", _codec._STATS_DURABILITY),
                (StatsResponse.StatsResponse, "MetricsLength", _codec._STATS_METRICS),
                (MetricFamily.MetricFamily, "Name", _codec._FAMILY_NAME),
                (MetricFamily.MetricFamily, "Help", _codec._FAMILY_HELP),
                (MetricFamily.MetricFamily, "SamplesLength", _codec._FAMILY_SAMPLES),
                (MetricSample.MetricSample, "LabelsLength", _codec._SAMPLE_LABELS),
                (MetricSample.MetricSample, "BucketsLength", _codec._SAMPLE_BUCKETS),
                (MetricLabel.MetricLabel, "Name", _codec._LABEL_NAME),
                (MetricLabel.MetricLabel, "Value", _codec._LABEL_VALUE)]:
            source = inspect.getsource(getattr(cls, accessor))
            self.assertEqual(str(slot), re.search(r"Offset\((\d+)\)", source).group(1),
                             f"{cls.__name__}.{accessor}")


class HostileFrameTest(unittest.TestCase):
    """Whatever the bytes, decode_frame returns a Reply or raises ProtocolError."""

    def assertRefused(self, body, pattern=""):
        with self.assertRaisesRegex(errors.ProtocolError, pattern):
            _codec.decode_frame(body)

    def valid_bodies(self):
        return [
            inserted_response(2, payload=b"p" * 40, fingerprint=b"f", owner="o"),
            wb.apply_response(3, lambda b: [wb.op_result(b, error=(1, "bad key")),
                                            wb.op_result(b, 14, token="t")]),
            wb.hello_reply(1),
            wb.error_frame(4, 3, "busy"),
            wb.stats_response(5),
        ]

    def test_every_truncation_is_refused_or_reads_the_same(self):
        for body in self.valid_bodies():
            whole = _codec.decode_frame(body)
            for n in range(len(body)):
                try:
                    reply = _codec.decode_frame(body[:n])
                except errors.ProtocolError:
                    continue
                # Only a cut inside trailing bytes nothing refers to can leave it readable.
                self.assertEqual(comparable(whole), comparable(reply), f"{n} of {len(body)} bytes")

    def test_random_corruption_never_escapes_as_another_exception(self):
        rng = random.Random(21)
        for body in self.valid_bodies():
            for _ in range(1500):
                mutated = bytearray(body)
                for _ in range(rng.randint(1, 4)):
                    at = rng.randrange(len(mutated))
                    mutated[at] = rng.choice([0, 0xFF, 0x7F, 0x80, rng.randrange(256)])
                try:
                    _codec.decode_frame(bytes(mutated))
                except errors.ProtocolError:
                    pass

    def test_too_short_for_a_flatbuffer(self):
        for body in (b"", b"\x00", b"\x04\x00\x00\x00"):
            self.assertRefused(body)

    def test_a_root_offset_past_the_end(self):
        self.assertRefused(struct.pack("<I", 10_000) + bytes(60), "outside the frame")

    def test_a_vtable_before_the_start(self):
        # The root table's soffset points its vtable before byte 0.
        self.assertRefused(struct.pack("<Ii", 4, 1000) + bytes(24), "vtable")

    def test_a_results_count_far_beyond_the_body(self):
        body = bytearray(inserted_response())
        f = Frame.Frame.GetRootAs(bytes(body))
        response = WireApplyResponse.ApplyResponse()
        response.Init(f.Body().Bytes, f.Body().Pos)
        count_at = response._tab.Vector(response._tab.Offset(4)) - 4
        struct.pack_into("<I", body, count_at, 0x7FFFFFFF)
        self.assertRefused(bytes(body), "run past the frame's end")

    def test_a_payload_length_beyond_the_body(self):
        body = bytearray(inserted_response(payload=b"ABCDEFGH"))
        at = bytes(body).find(b"ABCDEFGH") - 4
        struct.pack_into("<I", body, at, 1 << 30)
        self.assertRefused(bytes(body), "Record.payload")

    def test_results_sharing_one_payload_cannot_multiply_the_frame(self):
        # 400 results, each a reference to one record with a 10 KB payload: a 12 KB frame that
        # would decode into 4 MB. The C++ client refuses it as CORRUPTION too.
        def shared(b):
            record = wb.record(b, payload=b"x" * 10_000)
            one = wb.op_result(b, 7, record)
            return [one] * 400
        body = wb.apply_response(8, shared, size=16_384)
        self.assertLess(len(body), 16_384)
        self.assertRefused(body, "share")

    def test_an_error_with_code_zero_or_unknown(self):
        self.assertRefused(wb.error_frame(3, 0, "ok?"), "status code 0")
        self.assertRefused(wb.error_frame(3, 42, "new"), "status code 42")

    def test_a_response_without_body_or_results(self):
        self.assertRefused(wb.frame_without_body(3), "neither a body nor an error")
        self.assertRefused(wb.apply_response(3, lambda b: None), "without results")

    def test_a_body_type_the_client_never_asks_for(self):
        self.assertRefused(wb.frame_with_body_type(3, Body.BackupResponse), "body type 8")
        self.assertRefused(wb.frame_with_body_type(3, 200), "body type 200")


class FrameReaderTest(unittest.TestCase):
    def test_frames_split_anywhere_come_out_whole_and_in_order(self):
        stream = b"".join(wb.framed(b) for b in (b"first-body", b"2", b"third" * 100))
        reader = _codec.FrameReader()
        out = []
        for i in range(len(stream)):
            out += reader.feed(stream[i:i + 1])
        self.assertEqual([b"first-body", b"2", b"third" * 100], out)
        self.assertEqual([b"a", b"bb"],
                         _codec.FrameReader().feed(wb.framed(b"a") + wb.framed(b"bb")))

    def test_a_zero_length_is_refused(self):
        with self.assertRaisesRegex(errors.ProtocolError, "length 0 is outside 1..16"):
            _codec.FrameReader(16).feed(struct.pack("<I", 0))

    def test_a_length_over_the_limit_is_refused_from_the_prefix_alone(self):
        reader = _codec.FrameReader(1024)
        self.assertEqual([], reader.feed(struct.pack("<I", 1024)[:3]))
        with self.assertRaisesRegex(errors.ProtocolError, "length 4294967295 is outside 1..1024"):
            _codec.FrameReader(1024).feed(struct.pack("<I", 2**32 - 1))
        self.assertEqual([], reader.feed(struct.pack("<I", 1024)[3:]))  # at the limit: waits


if __name__ == "__main__":
    unittest.main()
