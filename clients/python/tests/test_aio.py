"""idemstore.aio.Client: the synchronous client's behaviours (test_client, test_client_failures)
for asyncio, against a real idemstored, or a scripted peer (fake_server.py) where the server
cannot be made to misbehave on cue.
"""
import asyncio
import os
import tempfile
import time
import unittest

import wire_builders as wb
from fake_server import FakeServer
from idemstore import OpError, Outcome, StatusCode, TlsOptions, aio, errors, ops
from server_process import ServerProcess
from test_client_failures import found
from test_tls import WRITER_TOKEN, make_ca, make_server_cert, secret_hash


async def wait_for_condition(condition, what, timeout=10.0):
    """Polls something another task or thread causes; never used to wait for time itself."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)


def connected(client):
    conn = client._conn
    return conn is not None and conn.alive


def answers_the_first_request_late():
    """A scripted peer's respond(): the first request gets no answer until the next arrives,
    then its late answer goes out just before the next one's ("LATE", then "ON_TIME")."""
    held = []

    def respond(server, conn, request_id):
        if not held:
            held.append(request_id)
            return
        conn.send(found(held[0], "LATE"))
        conn.send(found(request_id, "ON_TIME"))

    return respond


class AioTestCase(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self):
        # The test runner's debug loop logs callbacks over 0.1 s (a 2,560-op reply decoding):
        # noise here, not a finding.
        asyncio.get_running_loop().slow_callback_duration = 1.0


class AioServerTestCase(AioTestCase):
    """A fresh idemstored per test (started with server_args) and self.client, an aio.Client
    of it (made with connect_options)."""

    server_args = ()
    connect_options = {}

    async def asyncSetUp(self):
        await super().asyncSetUp()
        tmp = tempfile.TemporaryDirectory(prefix="idemstore-py-")
        self.addCleanup(tmp.cleanup)
        self.server = ServerProcess(os.path.join(tmp.name, "db"), self.server_args)
        self.addCleanup(self.server.kill)
        await asyncio.to_thread(self.server.start)
        self.client = await self.connect()

    async def connect(self, **options):
        client = aio.Client(self.server.address, **{**self.connect_options, **options})
        self.addAsyncCleanup(client.close)
        await client.__aenter__()
        return client


class OutcomeTest(AioServerTestCase):
    async def test_records(self):
        c = self.client
        self.assertEqual(Outcome.INSERTED, (await c.insert("pay", "k", status="NEW")).outcome)
        self.assertEqual(Outcome.EXISTS, (await c.insert("pay", "k", status="NEW")).outcome)
        self.assertEqual("NEW", (await c.get("pay", "k")).record.status)
        self.assertEqual(Outcome.APPLIED,
                         (await c.cas("pay", "k", expect_status="NEW", status="PAID")).outcome)
        self.assertEqual(Outcome.CONDITION_FAILED,
                         (await c.cas("pay", "k", expect_status="NEW", status="X")).outcome)
        self.assertEqual(Outcome.DELETED, (await c.delete("pay", "k")).outcome)
        self.assertEqual(Outcome.NOT_FOUND, (await c.get("pay", "k")).outcome)

    async def test_request_lifecycle(self):
        c = self.client
        started = await c.begin("jobs", "j", fingerprint=b"f1", lease_ms=60_000)
        self.assertEqual(Outcome.STARTED, started.outcome)
        fence = started.record.fence
        self.assertEqual(Outcome.APPLIED, (await c.heartbeat("jobs", "j", fence=fence)).outcome)
        self.assertEqual(Outcome.APPLIED,
                         (await c.complete("jobs", "j", fence=fence, payload=b"ok")).outcome)
        replay = await c.begin("jobs", "j", fingerprint=b"f1")
        self.assertEqual((Outcome.COMPLETED, b"ok"), (replay.outcome, replay.record.payload))
        self.assertEqual(Outcome.MISMATCH,
                         (await c.begin("jobs", "j", fingerprint=b"f2")).outcome)

    async def test_an_ops_error_is_raised_by_single_op_methods_and_returned_by_apply(self):
        with self.assertRaises(errors.ServerError) as raised:
            await self.client.get("pay", "k" * 600)
        self.assertEqual(StatusCode.INVALID_ARGUMENT, raised.exception.code)
        answers = await self.client.apply([ops.get("pay", "k" * 600), ops.get("pay", "k")])
        self.assertIsInstance(answers[0], OpError)
        self.assertEqual(Outcome.NOT_FOUND, answers[1].outcome)

    async def test_stats_and_server_info(self):
        await self.client.insert("pay", "k", status="S")
        self.assertGreaterEqual((await self.client.stats())["ops"], 1)
        self.assertEqual(2, self.client.server_info.protocol_version)


class ConcurrencyTest(AioServerTestCase):
    async def test_sixteen_tasks_inserting_one_key_one_wins(self):
        results = await asyncio.gather(
            *(self.client.insert("pay", "contended", status="S") for _ in range(16)))
        outcomes = [r.outcome for r in results]
        self.assertEqual(1, outcomes.count(Outcome.INSERTED))
        self.assertEqual(15, outcomes.count(Outcome.EXISTS))

    async def test_a_token_is_consumed_once(self):
        token = (await self.client.issue_token("forms")).token
        results = await asyncio.gather(
            *(self.client.consume_token("forms", token) for _ in range(16)))
        outcomes = [r.outcome for r in results]
        self.assertEqual(1, outcomes.count(Outcome.CONSUMED))
        self.assertEqual(15, outcomes.count(Outcome.ALREADY_CONSUMED))

    async def test_fencing_after_a_takeover(self):
        # The waiting Begin takes the attempt over the moment its lease ends (the server waits).
        first = await self.client.begin("jobs", "slow", lease_ms=200)
        other = await self.connect()
        second = await other.begin("jobs", "slow", lease_ms=60_000, wait_ms=30_000)
        self.assertEqual(Outcome.STARTED, second.outcome)
        old = first.record.fence
        self.assertEqual(Outcome.FENCE_MISMATCH,
                         (await self.client.heartbeat("jobs", "slow", fence=old)).outcome)
        self.assertEqual(Outcome.FENCE_MISMATCH,
                         (await self.client.complete("jobs", "slow", fence=old)).outcome)


class PipeliningTest(AioServerTestCase):
    async def test_many_tasks_share_one_connection(self):
        tasks, calls = 64, 40
        conn = self.client._conn

        async def work(t):
            for i in range(calls):
                r = await self.client.insert("load", f"{t}-{i}", status="S", payload=b"p" * 100)
                self.assertEqual(Outcome.INSERTED, r.outcome)

        await asyncio.gather(*(work(t) for t in range(tasks)))
        self.assertIs(conn, self.client._conn)
        found_all = await self.client.apply(
            [ops.get("load", f"{t}-{i}") for t in range(tasks) for i in range(calls)])
        self.assertEqual([Outcome.FOUND] * (tasks * calls), [r.outcome for r in found_all])

    async def test_answers_are_matched_by_id_not_by_order(self):
        holder = await self.connect()
        fence = (await holder.begin("jobs", "held", lease_ms=60_000)).record.fence
        waiting = asyncio.ensure_future(self.client.begin("jobs", "held", wait_ms=60_000))
        for i in range(50):
            self.assertEqual(Outcome.INSERTED,
                             (await self.client.insert("pay", f"m-{i}", status="S")).outcome)
        self.assertFalse(waiting.done())
        await holder.complete("jobs", "held", fence=fence, payload=b"done")
        replay = await asyncio.wait_for(waiting, 30)
        self.assertEqual((Outcome.COMPLETED, b"done"), (replay.outcome, replay.record.payload))


class WaitingCallTest(AioServerTestCase):
    async def test_a_call_that_waits_at_the_server_gets_its_wait_on_top_of_the_timeout(self):
        # The server holds the waiting Begin's answer until the holder's 1 s lease ends: past
        # the client's 0.3 s timeout, within timeout + wait_ms.
        await self.client.begin("jobs", "held", lease_ms=1_000)
        impatient = await self.connect(timeout=0.3)
        started = time.monotonic()
        r = await impatient.begin("jobs", "held", wait_ms=20_000)
        self.assertEqual(Outcome.STARTED, r.outcome)
        self.assertGreater(time.monotonic() - started, 0.3)  # it did outlast the timeout


class RestartTest(AioServerTestCase):
    async def test_the_next_call_after_a_restart_reconnects(self):
        await self.client.insert("pay", "k", status="S")
        self.assertEqual(0, await asyncio.to_thread(self.server.stop))
        await wait_for_condition(lambda: not connected(self.client), "the client to see the close")
        await asyncio.to_thread(self.server.start)
        self.assertEqual(Outcome.FOUND, (await self.client.get("pay", "k")).outcome)

    async def test_while_the_server_is_down_calls_fail_at_once(self):
        await asyncio.to_thread(self.server.stop)
        await wait_for_condition(lambda: not connected(self.client), "the client to see the close")
        with self.assertRaises(errors.ConnectionError) as first:
            await self.client.get("pay", "k")
        self.assertNotIn("next attempt", first.exception.message)
        with self.assertRaises(errors.ConnectionError) as second:  # no attempt: backing off
            await self.client.get("pay", "k")
        self.assertIn("next attempt in", second.exception.message)

    async def test_a_call_in_flight_when_the_server_is_killed_has_an_unknown_effect(self):
        holder = await self.connect()
        await holder.begin("jobs", "held", lease_ms=60_000)
        waiting = asyncio.ensure_future(self.client.begin("jobs", "held", wait_ms=60_000))
        await wait_for_condition(lambda: len(self.client._conn._waiting) == 1, "the call to go")
        await asyncio.to_thread(self.server.kill)
        with self.assertRaises(errors.EffectUnknownError):
            await asyncio.wait_for(waiting, 10)  # at once, not after the 60 s wait


class TlsTokenTest(AioServerTestCase):
    @classmethod
    def setUpClass(cls):
        certs = tempfile.TemporaryDirectory(prefix="idemstore-py-certs-")
        cls.addClassCleanup(certs.cleanup)
        cls.ca = make_ca(certs.name, "test-ca")
        cls.other_ca = make_ca(certs.name, "other-ca")
        make_server_cert(certs.name, "test-ca")
        auth = os.path.join(certs.name, "auth")
        with open(auth, "w") as f:
            f.write(f"writer {secret_hash(WRITER_TOKEN)} *:read,write,admin\n")
        os.chmod(auth, 0o600)
        cls.server_args = ("--tls-cert", os.path.join(certs.name, "server.pem"),
                           "--tls-key", os.path.join(certs.name, "server.key"),
                           "--auth-file", auth)
        cls.connect_options = {"tls": TlsOptions(ca_file=cls.ca), "token": WRITER_TOKEN}

    async def test_tasks_share_one_verified_connection_with_an_accepted_token(self):
        conn = self.client._conn
        results = await asyncio.gather(
            *(self.client.insert("pay", f"k{i}", status="S") for i in range(32)))
        self.assertEqual([Outcome.INSERTED] * 32, [r.outcome for r in results])
        self.assertIs(conn, self.client._conn)

    async def test_a_wrong_token_is_refused_then_not_tried_again_at_once(self):
        client = aio.Client(self.server.address, tls=TlsOptions(ca_file=self.ca), token="wrong")
        self.addAsyncCleanup(client.close)
        with self.assertRaises(errors.ServerError) as refused:
            await client.get("pay", "k")
        self.assertEqual(StatusCode.UNAUTHENTICATED, refused.exception.code)
        with self.assertRaises(errors.ConnectionError) as backing_off:
            await client.get("pay", "k")
        self.assertIn("next attempt in", backing_off.exception.message)

    async def test_a_certificate_from_another_ca_is_refused(self):
        with self.assertRaises(errors.ConnectionError) as raised:
            await self.connect(tls=TlsOptions(ca_file=self.other_ca))
        self.assertIn("certificate verify failed", raised.exception.message)


class BadOptionsTest(unittest.TestCase):
    def test_a_token_that_is_not_utf8_is_refused_by_the_constructor(self):
        with self.assertRaises(errors.Error) as raised:
            aio.Client("127.0.0.1:7878", token="\udcff")
        self.assertEqual(StatusCode.INVALID_ARGUMENT, raised.exception.code)
        self.assertIn("token", raised.exception.message)


class ScriptedPeerTest(AioTestCase):
    def serve(self, respond):
        server = FakeServer(respond)
        self.addCleanup(server.close)
        return server

    def client(self, server, **options):
        client = aio.Client(server.address, **options)
        self.addAsyncCleanup(client.close)
        return client

    async def test_a_call_whose_connection_drops_is_not_resent(self):
        def respond(server, conn, request_id):
            if conn.number == 1:
                conn.close()
            else:
                conn.send(found(request_id, "S"))

        server = self.serve(respond)
        client = self.client(server)
        with self.assertRaises(errors.EffectUnknownError):
            await client.get("pay", "first")
        self.assertEqual(Outcome.FOUND, (await client.get("pay", "second")).outcome)
        self.assertEqual([(1, [b"first"]), (2, [b"second"])],
                         [(conn, keys) for conn, _, keys in server.requests])

    async def test_a_connection_the_server_ended_while_idle_is_replaced_before_the_next_call(self):
        # As the server's idle timeout does: an id-0 TIMED_OUT error frame, then close, while
        # no call is in flight. The reader task sees it; the next call goes on a new connection.
        connections = []

        def respond(server, conn, request_id):
            connections.append(conn)
            conn.send(found(request_id, "S"))

        server = self.serve(respond)
        client = self.client(server)
        self.assertEqual(Outcome.FOUND, (await client.get("pay", "first")).outcome)
        connections[0].send(wb.error_frame(0, StatusCode.TIMED_OUT, "idle for 300000 ms"))
        connections[0].close()
        await wait_for_condition(lambda: not connected(client), "the reader to see the close")
        self.assertEqual(Outcome.FOUND, (await client.get("pay", "second")).outcome)
        self.assertEqual([(1, [b"first"]), (2, [b"second"])],
                         [(conn, keys) for conn, _, keys in server.requests])

    async def test_a_timed_out_call_keeps_the_connection_and_its_late_answer_is_dropped(self):
        server = self.serve(answers_the_first_request_late())
        client = self.client(server, timeout=0.3)
        with self.assertRaises(errors.TimeoutError) as raised:
            await client.get("pay", "slow")
        self.assertEqual(StatusCode.TIMED_OUT, raised.exception.code)
        self.assertEqual("ON_TIME", (await client.get("pay", "next")).record.status)
        self.assertEqual(1, server.connections)

    async def test_a_cancelled_call_is_dropped_and_the_connection_stays(self):
        server = self.serve(answers_the_first_request_late())
        client = self.client(server)
        call = asyncio.ensure_future(client.get("pay", "cancelled"))
        await wait_for_condition(lambda: server.requests, "the request to arrive")
        call.cancel()
        with self.assertRaises(asyncio.CancelledError):
            await call
        self.assertEqual("ON_TIME", (await client.get("pay", "next")).record.status)
        self.assertEqual(1, server.connections)

    async def failure_of_a_call_answered_with(self, frame):
        """What a call raises when the peer answers it with `frame`, then closes."""
        def respond(server, conn, request_id):
            conn.send(frame)
            conn.close()

        client = self.client(self.serve(respond))
        with self.assertRaises(errors.EffectUnknownError) as raised:
            await client.get("pay", "k")
        return raised.exception

    async def test_a_connection_error_frame_fails_the_calls_in_flight(self):
        raised = await self.failure_of_a_call_answered_with(
            wb.error_frame(0, StatusCode.BUSY, "server has 1024 connections open"))
        self.assertEqual(StatusCode.BUSY, raised.code)
        self.assertIn("1024 connections", raised.message)

    async def test_a_frame_with_id_0_that_is_not_an_error_fails_the_calls_in_flight(self):
        raised = await self.failure_of_a_call_answered_with(found(0, "S"))
        self.assertEqual(StatusCode.IO_ERROR, raised.code)
        self.assertIn("id 0", raised.message)

    async def test_a_response_that_does_not_decode_drops_the_connection(self):
        def respond(server, conn, request_id):
            if conn.number == 1:
                conn.send(b"\xff" * 64)
            else:
                conn.send(found(request_id, "S"))

        server = self.serve(respond)
        client = self.client(server)
        with self.assertRaises(errors.EffectUnknownError) as raised:
            await client.get("pay", "k")
        self.assertEqual(StatusCode.CORRUPTION, raised.exception.code)
        self.assertEqual(Outcome.FOUND, (await client.get("pay", "k")).outcome)
        self.assertEqual(2, server.connections)

    async def test_close_fails_the_calls_still_waiting(self):
        server = self.serve(lambda server, conn, request_id: None)  # never answers
        client = self.client(server)
        waiting = asyncio.ensure_future(client.get("pay", "k"))
        await wait_for_condition(lambda: len(server.requests) == 1, "the request to arrive")
        await client.close()
        with self.assertRaises(errors.EffectUnknownError) as raised:
            await waiting
        self.assertEqual(StatusCode.SHUTDOWN, raised.exception.code)
        with self.assertRaises(errors.ConnectionError):
            await client.get("pay", "k")


if __name__ == "__main__":
    unittest.main()
