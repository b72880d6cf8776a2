"""idemstore.Client's failure contract (the C++ client's, net/include/idem/client.h): a server
that cannot be reached, restarts, dies mid-call, answers late or not at all, or sends bytes that
do not decode. The real idemstored where it can be made to fail on cue, a scripted peer
(fake_server.py) where it cannot, or where what it received must be counted.
"""
import concurrent.futures
import gc
import socket
import threading
import time
import unittest
import warnings

import idemstore
import wire_builders as wb
from fake_server import FakeServer
from idemstore import Outcome, StatusCode, _codec, errors
from idemstore import client as client_module
from server_process import ServerTestCase, wait_until


def found(request_id, status):
    return wb.apply_response(request_id,
                             lambda b: [wb.op_result(b, 7, wb.record(b, status=status))])


def connected(client):
    """Whether the client's connection is up, having read what the server sent meanwhile."""
    conn = client._conn
    return conn is not None and conn.usable()


class UnreachableServerTest(unittest.TestCase):
    def test_connecting_to_a_closed_port_is_a_connection_error(self):
        with socket.socket() as bound_not_listening:
            bound_not_listening.bind(("127.0.0.1", 0))
            port = bound_not_listening.getsockname()[1]
            with self.assertRaises(errors.ConnectionError) as raised:
                idemstore.Client(f"127.0.0.1:{port}", timeout=5)
        self.assertEqual(StatusCode.IO_ERROR, raised.exception.code)
        self.assertIn(f"127.0.0.1:{port}", raised.exception.message)

    def test_an_address_without_a_port_is_refused(self):
        with self.assertRaises(ValueError):
            idemstore.Client("localhost")


class BadOptionsTest(unittest.TestCase):
    def test_a_token_that_is_not_utf8_is_refused_before_connecting(self):
        server = FakeServer(lambda server, conn, request_id: None)
        self.addCleanup(server.close)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ResourceWarning)
            with self.assertRaises(errors.Error) as raised:
                idemstore.Client(server.address, token="\udcff")
            gc.collect()
        self.assertEqual(StatusCode.INVALID_ARGUMENT, raised.exception.code)
        self.assertIn("token", raised.exception.message)
        self.assertEqual([], [str(w.message) for w in caught])  # no socket left unclosed


class RestartTest(ServerTestCase):
    def test_the_next_call_after_a_restart_reconnects(self):
        self.assertEqual(Outcome.INSERTED,
                         self.client.insert("pay", "k", status="S").outcome)
        self.assertEqual(0, self.server.stop())
        wait_until(lambda: not connected(self.client), what="the client to see the close")
        self.server.start()
        self.assertEqual(Outcome.FOUND, self.client.get("pay", "k").outcome)

    def test_while_the_server_is_down_calls_fail_at_once_then_it_reconnects(self):
        self.server.stop()
        wait_until(lambda: not connected(self.client), what="the client to see the close")
        with self.assertRaises(errors.ConnectionError) as first:
            self.client.get("pay", "k")
        self.assertNotIn("next attempt", first.exception.message)
        with self.assertRaises(errors.ConnectionError) as second:  # no attempt: backing off
            self.client.get("pay", "k")
        self.assertIn("next attempt in", second.exception.message)

        self.server.start()

        def answered():
            try:
                return self.client.get("pay", "k").outcome is Outcome.NOT_FOUND
            except errors.ConnectionError:
                return False  # still backing off

        wait_until(answered, what="a call after the backoff")

    def test_a_call_in_flight_when_the_server_is_killed_has_an_unknown_effect(self):
        holder = self.connect()
        holder.begin("jobs", "held", lease_ms=60_000)
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(self.client.begin, "jobs", "held", wait_ms=60_000)
            wait_until(lambda: len(self.client._conn._calls) == 1, what="the call to be sent")
            self.server.kill()
            with self.assertRaises(errors.EffectUnknownError) as raised:
                waiting.result(timeout=10)  # at once, not after the 65 s the call may wait
        self.assertEqual(StatusCode.IO_ERROR, raised.exception.code)
        self.server.start()
        self.assertEqual(Outcome.IN_PROGRESS, self.client.begin("jobs", "held").outcome)


class WaitingCallTest(ServerTestCase):
    def test_a_call_that_waits_at_the_server_gets_its_wait_on_top_of_the_timeout(self):
        # The server holds the waiting Begin's answer until the holder's 1 s lease ends: past
        # the client's 0.3 s timeout, within timeout + wait_ms.
        self.client.begin("jobs", "held", lease_ms=1_000)
        impatient = self.connect(timeout=0.3)
        started = time.monotonic()
        r = impatient.begin("jobs", "held", wait_ms=20_000)
        self.assertEqual(Outcome.STARTED, r.outcome)
        self.assertGreater(time.monotonic() - started, 0.3)  # it did outlast the timeout


class NotResentTest(unittest.TestCase):
    def serve(self, respond):
        server = FakeServer(respond)
        self.addCleanup(server.close)
        return server

    def client(self, server, **options):
        client = idemstore.Client(server.address, **options)
        self.addCleanup(client.close)
        return client

    def test_a_call_whose_connection_drops_is_not_resent(self):
        def respond(server, conn, request_id):
            if conn.number == 1:
                conn.close()  # the first connection ends with the request unanswered
            else:
                conn.send(found(request_id, "S"))

        server = self.serve(respond)
        client = self.client(server)
        with self.assertRaises(errors.EffectUnknownError):
            client.get("pay", "first")
        self.assertEqual(Outcome.FOUND, client.get("pay", "second").outcome)
        self.assertEqual([(1, [b"first"]), (2, [b"second"])],
                         [(conn, keys) for conn, _, keys in server.requests])

    def test_a_connection_the_server_ended_while_idle_is_replaced_before_the_next_call(self):
        # As the server's idle timeout does: an id-0 TIMED_OUT error frame, then close, while
        # no call is in flight. The next call must not go out on that connection.
        connections = []

        def respond(server, conn, request_id):
            connections.append(conn)
            conn.send(found(request_id, "S"))

        server = self.serve(respond)
        client = self.client(server)
        self.assertEqual(Outcome.FOUND, client.get("pay", "first").outcome)
        connections[0].send(wb.error_frame(0, StatusCode.TIMED_OUT, "idle for 300000 ms"))
        connections[0].close()
        self.assertEqual(Outcome.FOUND, client.get("pay", "second").outcome)
        self.assertEqual([(1, [b"first"]), (2, [b"second"])],
                         [(conn, keys) for conn, _, keys in server.requests])

    def test_a_timed_out_call_keeps_the_connection_and_its_late_answer_is_dropped(self):
        held = []

        def respond(server, conn, request_id):
            if not held:
                held.append(request_id)  # never answered in time
                return
            conn.send(found(held[0], "LATE"))  # the late answer first, then this request's
            conn.send(found(request_id, "ON_TIME"))

        server = self.serve(respond)
        client = self.client(server, timeout=0.3)
        with self.assertRaises(errors.TimeoutError) as raised:
            client.get("pay", "slow")
        self.assertEqual(StatusCode.TIMED_OUT, raised.exception.code)
        self.assertEqual("ON_TIME", client.get("pay", "next").record.status)
        self.assertEqual(1, server.connections)

    def test_a_connection_error_frame_fails_the_calls_in_flight(self):
        def respond(server, conn, request_id):
            conn.send(wb.error_frame(0, StatusCode.BUSY, "server has 1024 connections open"))
            conn.close()

        client = self.client(self.serve(respond))
        with self.assertRaises(errors.EffectUnknownError) as raised:
            client.get("pay", "k")
        self.assertEqual(StatusCode.BUSY, raised.exception.code)
        self.assertIn("1024 connections", raised.exception.message)

    def test_a_frame_with_id_0_that_is_not_an_error_fails_the_calls_in_flight(self):
        # Id 0 is reserved for connection errors; anything else there is the server's fault
        # (the C++ client: IOError "server sent a frame with id 0").
        def respond(server, conn, request_id):
            conn.send(found(0, "S"))

        client = self.client(self.serve(respond))
        with self.assertRaises(errors.EffectUnknownError) as raised:
            client.get("pay", "k")
        self.assertEqual(StatusCode.IO_ERROR, raised.exception.code)
        self.assertIn("id 0", raised.exception.message)

    def test_a_response_that_does_not_decode_drops_the_connection(self):
        def respond(server, conn, request_id):
            if conn.number == 1:
                conn.send(b"\xff" * 64)
            else:
                conn.send(found(request_id, "S"))

        server = self.serve(respond)
        client = self.client(server)
        with self.assertRaises(errors.EffectUnknownError) as raised:
            client.get("pay", "k")
        self.assertEqual(StatusCode.CORRUPTION, raised.exception.code)
        self.assertEqual(Outcome.FOUND, client.get("pay", "k").outcome)
        self.assertEqual(2, server.connections)

    def test_a_response_length_over_the_announced_limit_drops_the_connection(self):
        def respond(server, conn, request_id):
            conn.send_raw((64 << 20).to_bytes(4, "little"))  # over 4 MiB: refused from the prefix

        client = self.client(self.serve(respond))
        with self.assertRaises(errors.EffectUnknownError) as raised:
            client.get("pay", "k")
        self.assertIn("outside 1..4194304", raised.exception.message)

    def test_results_not_matching_the_ops_are_a_protocol_error(self):
        def respond(server, conn, request_id):
            conn.send(found(request_id, "S"))  # one result, whatever was asked

        client = self.client(self.serve(respond))
        with self.assertRaises(errors.ProtocolError):
            client.apply([idemstore.ops.get("pay", "a"), idemstore.ops.get("pay", "b")])

    def test_the_socket_is_closed_only_once_no_one_polls_it(self):
        # A reader blocked in poll on a socket that another thread closes sleeps on whatever
        # socket gets that fd number next (here at once, as a reconnect would), and through
        # its own call's end: the socket is shut down to wake the reader, and closed after.
        server = self.serve(lambda server, conn, request_id: None)  # never answers
        client = self.client(server, timeout=30)
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(client.get, "pay", "k")
            wait_until(lambda: len(server.requests) == 1, what="the request to arrive")
            conn = client._conn
            read_while_closing, reused = [], []

            class ReusedOnClose(socket.socket):
                __slots__ = ()

                def close(self):
                    read_while_closing.append(conn._reading)
                    super().close()
                    reused.extend(socket.socketpair())  # takes the lowest free fd: this one's

            conn._sock.__class__ = ReusedOnClose
            client.close()
            with self.assertRaises(errors.EffectUnknownError):
                waiting.result(timeout=5)  # at once, not after its 30 s
        for s in reused:
            s.close()
        self.assertEqual([False], read_while_closing)

    def test_a_request_the_server_does_not_take_fails_the_connection_after_the_timeout(self):
        unblock = threading.Event()
        self.addCleanup(unblock.set)
        server = self.serve(lambda server, conn, request_id: unblock.wait())  # reads no more
        client = self.client(server, timeout=0.5)
        client._conn._sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            stuck = pool.submit(client.get, "pay", "first")
            wait_until(lambda: len(server.requests) == 1, what="the request to arrive")
            big = [idemstore.ops.insert("pay", f"k{i}", status="S", payload=b"x" * (1 << 20))
                   for i in range(3)]
            with self.assertRaises(errors.EffectUnknownError) as raised:
                client.apply(big)
            self.assertIn("took no bytes for 0.5 s", raised.exception.message)
            with self.assertRaises((errors.TimeoutError, errors.EffectUnknownError)):
                stuck.result(timeout=10)

    def test_close_fails_the_calls_still_waiting(self):
        server = self.serve(lambda server, conn, request_id: None)  # never answers
        client = self.client(server)
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(client.get, "pay", "k")
            wait_until(lambda: len(server.requests) == 1, what="the request to arrive")
            client.close()
            with self.assertRaises(errors.EffectUnknownError) as raised:
                waiting.result(timeout=10)
        self.assertEqual(StatusCode.SHUTDOWN, raised.exception.code)
        with self.assertRaises(errors.ConnectionError):
            client.get("pay", "k")


class SendTest(unittest.TestCase):
    def test_a_send_that_finds_the_servers_buffers_full_waits_for_room(self):
        ours, theirs = socket.socketpair()
        self.addCleanup(theirs.close)
        ours.setblocking(False)
        try:
            while True:  # fills both socket buffers: the next send finds no room at all
                ours.send(b"\0" * 65536)
        except BlockingIOError:
            pass
        conn = client_module._Connection(ours, None, None, None, _codec.FrameReader(), [],
                                         "peer", send_timeout=10)
        self.addCleanup(conn.fail, errors.EffectUnknownError("test over"))
        waiting, drained = threading.Event(), []

        class ReadOnceWaiting:  # the peer reads once the client waits for room
            def poll(self, timeout):
                waiting.set()
                return poll.poll(timeout)

        def drain():
            if waiting.wait(10):
                while sum(drained) < 65536 * 3:
                    drained.append(len(theirs.recv(1 << 20)))

        poll, conn._send_poll = conn._send_poll, ReadOnceWaiting()
        drainer = threading.Thread(target=drain)
        drainer.start()
        call = conn.send(1, b"request")
        drainer.join(10)
        self.assertIsNone(call.error)
        self.assertTrue(waiting.is_set())


if __name__ == "__main__":
    unittest.main()
