"""The @idempotent decorator and Idempotency context managers against a real idemstored."""

import asyncio
import json
import tempfile
import threading
import time
import unittest
import uuid

import idemstore
from idemstore import aio
from idemstore.idempotent import (AsyncIdempotency, FenceError, Idempotency, InProgressError,
                                  MismatchError, ReplayedFailureError, idempotent)
from idemstore.types import Outcome

from server_process import ServerProcess, wait_until


# Namespace "failing" keeps a failed attempt's record (Abort stores FAILED, Begin replays it).
SERVER_ARGS = ["--lifecycle", "failing=remember-failures"]


def start_server(test_class) -> ServerProcess:
    """An idemstored for the class's tests, stopped (and its data removed) after them."""
    data = tempfile.TemporaryDirectory(prefix="idem-py-test-")
    test_class.addClassCleanup(data.cleanup)
    server = ServerProcess(data.name, SERVER_ARGS).start()
    test_class.addClassCleanup(server.stop)
    return server


def unique_key() -> str:
    return uuid.uuid4().hex


class Counter:
    def __init__(self):
        self._lock = threading.Lock()
        self.value = 0

    def add(self) -> int:
        with self._lock:
            self.value += 1
            return self.value


class IdempotentTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        server = start_server(cls)
        cls.client = idemstore.Client(server.address, timeout=10.0)
        cls.addClassCleanup(cls.client.close)
        cls.other = idemstore.Client(server.address, timeout=10.0)
        cls.addClassCleanup(cls.other.close)

    def setUp(self):
        self.calls = Counter()

        @idempotent(self.client, "orders", key_args=("order_id",))
        def charge(order_id, amount):
            self.calls.add()
            return {"order": order_id, "charged": amount}

        self.charge = charge

    def stored(self, key):
        return self.client.get("orders", key).record

    def test_the_first_call_runs_and_stores_its_result(self):
        key = unique_key()
        self.assertEqual({"order": key, "charged": 10}, self.charge(key, 10))
        self.assertEqual(1, self.calls.value)
        record = self.stored(key)
        self.assertEqual("COMPLETED", record.status)
        self.assertEqual({"order": key, "charged": 10}, json.loads(record.payload))

    def test_a_repeat_replays_the_result_without_running(self):
        key = unique_key()
        first = self.charge(key, 10)
        self.assertEqual(first, self.charge(key, 10))
        self.assertEqual(1, self.calls.value)

    def test_the_same_key_with_other_arguments_is_a_mismatch(self):
        key = unique_key()
        self.charge(key, 10)
        with self.assertRaises(MismatchError) as raised:
            self.charge(key, 20)
        self.assertIn("fingerprint mismatch", str(raised.exception))
        self.assertEqual(1, self.calls.value)

    def test_an_exception_aborts_the_attempt_so_a_retry_runs(self):
        key = unique_key()
        failures = [RuntimeError("card declined")]

        @idempotent(self.client, "orders", key_args=("order_id",))
        def flaky(order_id):
            self.calls.add()
            if failures:
                raise failures.pop()
            return "charged"

        with self.assertRaisesRegex(RuntimeError, "card declined"):
            flaky(key)
        self.assertEqual(Outcome.NOT_FOUND, self.client.get("orders", key).outcome)
        self.assertEqual("charged", flaky(key))
        self.assertEqual(2, self.calls.value)

    def test_a_failure_the_namespace_remembers_is_raised_to_retries_without_running(self):
        key = unique_key()

        @idempotent(self.client, "failing", key_args=("order_id",))
        def declined(order_id):
            self.calls.add()
            raise ValueError("card declined")

        with self.assertRaisesRegex(ValueError, "card declined"):
            declined(key)
        with self.assertRaises(ReplayedFailureError) as raised:
            declined(key)
        self.assertEqual({"error": "ValueError", "message": "card declined"},
                         json.loads(raised.exception.record.payload))
        self.assertEqual(1, self.calls.value)

    def test_sixteen_concurrent_duplicates_run_once(self):
        key = unique_key()
        start = threading.Barrier(16)
        results = []

        def call():
            start.wait()
            results.append(self.charge(key, 10))

        threads = [threading.Thread(target=call) for _ in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(1, self.calls.value)
        self.assertEqual([{"order": key, "charged": 10}] * 16, results)

    def hold(self, key):
        """Runs charge-like work for `key` in a thread until released; returns (entered,
        release, thread, outcome list)."""
        entered, release, outcome = threading.Event(), threading.Event(), []

        @idempotent(self.client, "orders", key_args=("order_id",))
        def slow(order_id):
            entered.set()
            release.wait(10)
            return "done"

        thread = threading.Thread(target=lambda: outcome.append(slow(key)))
        thread.start()
        self.assertTrue(entered.wait(10))
        return release, thread, outcome

    def test_a_duplicate_of_a_running_call_raises_in_progress_when_told_not_to_wait(self):
        key = unique_key()
        release, thread, _ = self.hold(key)

        @idempotent(self.client, "orders", key_args=("order_id",), in_progress="raise")
        def impatient(order_id):
            self.calls.add()

        with self.assertRaises(InProgressError) as raised:
            impatient(key)
        self.assertGreater(raised.exception.record.lease_until_ms, 0)
        release.set()
        thread.join()
        self.assertEqual(0, self.calls.value)

    def test_a_duplicate_of_a_running_call_waits_for_its_result(self):
        key = unique_key()
        release, thread, outcome = self.hold(key)

        @idempotent(self.client, "orders", key_args=("order_id",), wait_ms=10_000)
        def patient(order_id):
            self.calls.add()

        waiter = threading.Thread(target=lambda: outcome.append(patient(key)))
        waiter.start()
        release.set()
        thread.join()
        waiter.join()
        self.assertEqual(["done", "done"], outcome)
        self.assertEqual(0, self.calls.value)

    def test_a_call_whose_lease_ran_out_and_was_taken_over_raises_and_stores_nothing(self):
        key = unique_key()
        taken = []

        @idempotent(self.client, "orders", key_args=("order_id",), lease_ms=100, heartbeat_ms=0)
        def stalls(order_id):
            # Another worker's Begin waits for the lease to end, then takes the attempt over.
            taken.append(self.other.begin("orders", key, lease_ms=30_000, wait_ms=5_000))
            return "stale result"

        with self.assertRaises(FenceError) as raised:
            stalls(key)
        self.assertEqual(Outcome.STARTED, taken[0].outcome)
        record = self.stored(key)
        self.assertEqual("IN_PROGRESS", record.status)
        self.assertEqual(taken[0].record.fence, record.fence)
        self.assertEqual(record.fence, raised.exception.record.fence)
        self.assertNotEqual(b'"stale result"', bytes(record.payload))

    def test_a_heartbeat_finds_the_takeover_and_complete_is_not_sent(self):
        key = unique_key()
        with self.assertRaises(FenceError):
            with Idempotency(self.client, "orders", key, heartbeat_ms=10) as attempt:
                # An operator deletes the attempt; another worker begins the key again.
                self.other.delete("orders", key)
                again = self.other.begin("orders", key)
                wait_until(lambda: attempt.lost, what="the heartbeat to find the takeover")
                attempt.complete("stale result")
        record = self.stored(key)
        self.assertEqual(again.record.fence, record.fence)
        self.assertEqual(again.record.version, record.version)

    def test_heartbeats_keep_the_lease_while_the_function_runs(self):
        key = unique_key()

        @idempotent(self.client, "orders", key_args=("order_id",), lease_ms=1_000,
                    heartbeat_ms=100)
        def long_work(order_id):
            # Waits more than twice the lease: only heartbeats keep the attempt ours (a gap of
            # ten heartbeats on a loaded machine would lose it).
            return self.other.begin("orders", key, wait_ms=2_500).outcome.name

        self.assertEqual("IN_PROGRESS", long_work(key))

    def test_a_block_that_ends_without_complete_aborts_the_attempt(self):
        key = unique_key()
        with self.assertRaisesRegex(RuntimeError, "without complete"):
            with Idempotency(self.client, "orders", key):
                pass
        self.assertEqual(Outcome.NOT_FOUND, self.client.get("orders", key).outcome)

    def test_without_a_fingerprint_other_arguments_replay(self):
        key = unique_key()

        @idempotent(self.client, "orders", key=lambda order_id, **_: order_id, fingerprint=None)
        def charge(order_id, amount):
            return amount

        self.assertEqual(10, charge(key, 10))
        self.assertEqual(10, charge(key, 20))

    def test_a_method_is_fingerprinted_without_its_object_and_keyed_by_several_arguments(self):
        shop, key = self, unique_key()

        class Shop:
            @idempotent(self.client, "orders", key_args=("order_id", "line"))
            def ship(self, order_id, line, quantity):
                shop.calls.add()
                return quantity

        self.assertEqual(2, Shop().ship(key, 1, 2))
        self.assertEqual(2, Shop().ship(key, 1, 2))  # another object: the same call
        with self.assertRaises(MismatchError):
            Shop().ship(key, 1, 3)
        self.assertEqual(1, self.calls.value)
        self.assertEqual("COMPLETED", self.stored(f'["{key}","1"]').status)

    def test_a_coroutine_function_needs_the_asyncio_client(self):
        with self.assertRaisesRegex(TypeError, "asyncio client"):
            @idempotent(self.client, "orders", key_args=("k",))
            async def f(k):
                pass


class AsyncIdempotentTest(unittest.IsolatedAsyncioTestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = start_server(cls)

    async def asyncSetUp(self):
        asyncio.get_running_loop().slow_callback_duration = 1.0  # the debug loop's noise
        self.client = aio.Client(self.server.address, timeout=10.0)
        self.calls = Counter()

        @idempotent(self.client, "orders", key_args=("order_id",))
        async def charge(order_id, amount):
            self.calls.add()
            await asyncio.sleep(0)
            return {"order": order_id, "charged": amount}

        self.charge = charge

    async def asyncTearDown(self):
        await self.client.close()

    async def test_first_run_then_replay(self):
        key = unique_key()
        self.assertEqual({"order": key, "charged": 10}, await self.charge(key, 10))
        self.assertEqual({"order": key, "charged": 10}, await self.charge(key, 10))
        self.assertEqual(1, self.calls.value)

    async def test_the_same_key_with_other_arguments_is_a_mismatch(self):
        key = unique_key()
        await self.charge(key, 10)
        with self.assertRaises(MismatchError):
            await self.charge(key, 20)

    async def test_an_exception_aborts_the_attempt_so_a_retry_runs(self):
        key = unique_key()
        failures = [ValueError("declined")]

        @idempotent(self.client, "orders", key_args=("order_id",))
        async def flaky(order_id):
            self.calls.add()
            if failures:
                raise failures.pop()
            return "charged"

        with self.assertRaises(ValueError):
            await flaky(key)
        self.assertEqual("charged", await flaky(key))
        self.assertEqual(2, self.calls.value)

    async def test_sixteen_concurrent_duplicate_tasks_run_once(self):
        key = unique_key()
        results = await asyncio.gather(*(self.charge(key, 10) for _ in range(16)))
        self.assertEqual(1, self.calls.value)
        self.assertEqual([{"order": key, "charged": 10}] * 16, results)

    async def test_a_call_whose_lease_ran_out_and_was_taken_over_raises_and_stores_nothing(self):
        key = unique_key()
        taken = []

        @idempotent(self.client, "orders", key_args=("order_id",), lease_ms=100, heartbeat_ms=0)
        async def stalls(order_id):
            taken.append(await self.client.begin("orders", key, wait_ms=5_000))
            return "stale result"

        with self.assertRaises(FenceError):
            await stalls(key)
        self.assertEqual(Outcome.STARTED, taken[0].outcome)
        record = (await self.client.get("orders", key)).record
        self.assertEqual(taken[0].record.fence, record.fence)
        self.assertEqual("IN_PROGRESS", record.status)

    async def test_a_heartbeat_finds_the_takeover(self):
        key = unique_key()
        with self.assertRaises(FenceError):
            async with AsyncIdempotency(self.client, "orders", key, heartbeat_ms=10) as attempt:
                await self.client.delete("orders", key)
                await self.client.begin("orders", key)
                deadline = time.monotonic() + 10
                while not attempt.lost and time.monotonic() < deadline:
                    await asyncio.sleep(0.005)  # for the heartbeat task, not for time to pass
                self.assertTrue(attempt.lost)
                await attempt.complete("stale result")

    async def test_a_cancelled_call_aborts_its_attempt(self):
        key = unique_key()
        entered = asyncio.Event()

        @idempotent(self.client, "orders", key_args=("order_id",))
        async def hangs(order_id):
            entered.set()
            await asyncio.Event().wait()

        task = asyncio.get_running_loop().create_task(hangs(key))
        await entered.wait()
        task.cancel()
        with self.assertRaises(asyncio.CancelledError):
            await task
        self.assertEqual(Outcome.NOT_FOUND, (await self.client.get("orders", key)).outcome)

    async def test_a_plain_function_needs_the_synchronous_client(self):
        with self.assertRaisesRegex(TypeError, "synchronous client"):
            @idempotent(self.client, "orders", key_args=("k",))
            def f(k):
                pass


if __name__ == "__main__":
    unittest.main()
