"""idemstore.Client against a real idemstored: the outcomes and schemes of the C++ conformance
suite (tests/net/store_conformance*_test.cc), concurrency, and pipelining on one connection.
"""
import concurrent.futures
import threading
import unittest

from idemstore import Outcome, RecordKind, StatusCode, errors, ops
from server_process import ServerTestCase


def outcome(result):
    return result.outcome.name


class OutcomeTest(ServerTestCase):
    server_args = ("--state-graph", "orders=PENDING>PAID>SHIPPED")

    def test_records(self):
        c = self.client
        self.assertEqual("INSERTED", outcome(c.insert("pay", "k1", status="PENDING",
                                                      fingerprint=b"a")))
        exists = c.insert("pay", "k1", status="PENDING", fingerprint=b"b")
        self.assertEqual(("EXISTS", False), (outcome(exists), exists.fingerprint_matches))
        self.assertEqual("FOUND", outcome(c.get("pay", "k1")))
        self.assertEqual("CONDITION_FAILED", outcome(c.cas("pay", "k1", expect_status="DONE",
                                                           status="X")))
        applied = c.cas("pay", "k1", expect_status=["PENDING"], expect_version=1, status="DONE",
                        payload=b"resp")
        self.assertEqual(("APPLIED", "DONE", 2, b"resp"),
                         (outcome(applied), applied.record.status, applied.record.version,
                          applied.record.payload))
        self.assertEqual("DELETED", outcome(c.delete("pay", "k1", expect_version=2)))
        self.assertEqual("NOT_FOUND", outcome(c.get("pay", "k1")))
        self.assertIsNone(c.get("pay", "k1").record)

    def test_request_lifecycle(self):
        c = self.client
        started = c.begin("jobs", "j1", fingerprint=b"f1", owner="w1", lease_ms=60_000)
        self.assertEqual(("STARTED", "IN_PROGRESS", "w1", RecordKind.ATTEMPT),
                         (outcome(started), started.record.status, started.record.owner,
                          started.record.kind))
        fence = started.record.fence
        self.assertEqual("IN_PROGRESS", outcome(c.begin("jobs", "j1", fingerprint=b"f1")))
        self.assertEqual("MISMATCH", outcome(c.begin("jobs", "j1", fingerprint=b"other")))
        self.assertEqual("FENCE_MISMATCH", outcome(c.heartbeat("jobs", "j1", fence=fence + 1)))
        self.assertEqual("APPLIED", outcome(c.heartbeat("jobs", "j1", fence=fence,
                                                        lease_ms=60_000)))
        self.assertEqual("APPLIED", outcome(c.checkpoint("jobs", "j1", fence=fence,
                                                         payload=b"phase-1")))
        self.assertEqual("APPLIED", outcome(c.complete("jobs", "j1", fence=fence,
                                                       payload=b"response")))
        self.assertEqual("ALREADY", outcome(c.complete("jobs", "j1", fence=fence,
                                                       payload=b"response")))
        replay = c.begin("jobs", "j1", fingerprint=b"f1")
        self.assertEqual(("COMPLETED", b"response"), (outcome(replay), replay.record.payload))

        fence2 = c.begin("jobs", "j2").record.fence
        self.assertGreater(fence2, fence)
        self.assertEqual("RELEASED", outcome(c.abort("jobs", "j2", fence=fence2)))
        self.assertEqual("STARTED", outcome(c.begin("jobs", "j2")))  # a retry can run

    def test_tokens_locks_and_state_machines(self):
        c = self.client
        issued = c.issue_token("forms", payload=b"form-7")
        self.assertEqual("ISSUED", outcome(issued))
        consumed = c.consume_token("forms", issued.token)
        self.assertEqual(("CONSUMED", b"form-7"), (outcome(consumed), consumed.record.payload))
        self.assertEqual("ALREADY_CONSUMED", outcome(c.consume_token("forms", issued.token)))

        acquired = c.lock("locks", "l1", owner="a", lease_ms=60_000)
        self.assertEqual("ACQUIRED", outcome(acquired))
        held = c.lock("locks", "l1", owner="b")
        self.assertEqual(("HELD", "a"), (outcome(held), held.record.owner))
        fence = acquired.record.fence
        self.assertEqual("APPLIED", outcome(c.renew("locks", "l1", fence=fence, lease_ms=60_000)))
        self.assertEqual("FENCE_MISMATCH", outcome(c.unlock("locks", "l1", fence=fence + 1)))
        self.assertEqual("RELEASED", outcome(c.unlock("locks", "l1", fence=fence)))
        self.assertEqual("ACQUIRED", outcome(c.lock("locks", "l1", owner="b")))
        self.assertEqual("WRONG_KIND", outcome(c.begin("locks", "l1")))

        self.assertEqual("INSERTED", outcome(c.insert("orders", "o1", status="PENDING")))
        self.assertEqual("ILLEGAL", outcome(c.transition("orders", "o1", "SHIPPED")))
        self.assertEqual("APPLIED", outcome(c.transition("orders", "o1", "PAID",
                                                         expect_version=1)))
        self.assertEqual("ALREADY", outcome(c.transition("orders", "o1", "PAID")))

    def test_an_ops_error_is_raised_by_single_op_methods_and_returned_by_apply(self):
        with self.assertRaises(errors.ServerError) as raised:
            self.client.insert("pay", b"k" * 600, status="S")
        self.assertEqual(StatusCode.INVALID_ARGUMENT, raised.exception.code)
        self.assertIn("600 bytes", raised.exception.message)
        with self.assertRaises(errors.ServerError) as raised:
            self.client.begin("jobs", "j", lease_ms=0)  # 0 is not "the default"
        self.assertIn("lease 0 ms is out of range", raised.exception.message)

        bad, good = self.client.apply([ops.insert("pay", "", status="S"),
                                       ops.insert("pay", "k2", status="S")])
        self.assertEqual(StatusCode.INVALID_ARGUMENT, bad.code)
        self.assertEqual(Outcome.INSERTED, good.outcome)

    def test_a_batch_runs_in_order_as_one_unit(self):
        results = self.client.apply([ops.insert("pay", "b", status="A"),
                                     ops.cas("pay", "b", expect_status="A", status="B"),
                                     ops.get("pay", "b")])
        self.assertEqual(["INSERTED", "APPLIED", "FOUND"], [outcome(r) for r in results])
        self.assertEqual("B", results[2].record.status)
        self.assertEqual([], self.client.apply([]))

    def test_every_field_after_strings_of_every_length_passes_the_servers_verifier(self):
        # The encoder aligns each table after variable-length strings and vectors; the server
        # verifies alignment, so every padding the lengths call for is tried once.
        batch = []
        for n in range(1, 9):
            key, text = "k" * n, "S" * n
            batch += [ops.insert("pay", key, status=text, payload=b"p" * n, fingerprint=b"f" * n,
                                 ttl_ms=60_000),
                      ops.cas("pay", key, expect_status=[text, "X" * (n + 1)],
                              expect_version=1, status="T" * n, payload=b"q" * (n - 1),
                              ttl_ms=120_000),
                      ops.begin("jobs", key, fingerprint=b"f" * n, owner="o" * n,
                                lease_ms=30_000, wait_ms=n, ttl_ms=60_000)]
        results = self.client.apply(batch)
        self.assertEqual(["INSERTED", "APPLIED", "STARTED"] * 8, [outcome(r) for r in results])
        self.assertEqual(b"q" * 7, results[-2].record.payload)

    def test_a_request_refused_as_a_whole(self):
        too_many = [ops.insert("pay", f"k{i}", status="S")
                    for i in range(self.client.server_info.max_batch_ops + 1)]
        with self.assertRaises(errors.ServerError) as raised:
            self.client.apply(too_many)
        self.assertEqual(StatusCode.INVALID_ARGUMENT, raised.exception.code)
        self.assertEqual("NOT_FOUND", outcome(self.client.get("pay", "k0")))  # none applied

    def test_stats(self):
        self.client.insert("pay", "s", status="S")
        stats = self.client.stats()
        self.assertEqual("sync", stats["durability"])
        self.assertGreaterEqual(stats["ops"], 1)
        names = {f["name"] for f in stats["metrics"]}
        self.assertIn("idem_ops_total", names)

    def test_server_info(self):
        info = self.client.server_info
        self.assertEqual(2, info.protocol_version)
        self.assertTrue(info.server_version.startswith("idemstored "))
        self.assertEqual(512, info.max_key_bytes)


class ConcurrencyTest(ServerTestCase):
    def test_sixteen_threads_inserting_one_key_one_wins(self):
        barrier = threading.Barrier(16)

        def insert(i):
            barrier.wait()
            return self.client.insert("pay", "contended", status="S", payload=str(i)).outcome

        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            outcomes = list(pool.map(insert, range(16)))
        self.assertEqual(1, outcomes.count(Outcome.INSERTED))
        self.assertEqual(15, outcomes.count(Outcome.EXISTS))

    def test_sixteen_threads_beginning_one_key_one_runs(self):
        barrier = threading.Barrier(16)

        def begin(_):
            barrier.wait()
            return self.client.begin("jobs", "once", fingerprint=b"f").outcome

        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            outcomes = list(pool.map(begin, range(16)))
        self.assertEqual(1, outcomes.count(Outcome.STARTED))
        self.assertEqual(15, outcomes.count(Outcome.IN_PROGRESS))

    def test_a_token_is_consumed_once(self):
        token = self.client.issue_token("forms").token
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            outcomes = list(pool.map(lambda _: self.client.consume_token("forms", token).outcome,
                                     range(16)))
        self.assertEqual(1, outcomes.count(Outcome.CONSUMED))
        self.assertEqual(15, outcomes.count(Outcome.ALREADY_CONSUMED))

    def test_a_lock_has_one_holder_at_a_time(self):
        # Each thread takes the lock (waiting for it), checks nobody else is inside, leaves and
        # unlocks: the server grants waiting Locks in order, so every thread gets its turn.
        inside, overlaps, turns = [], [], []

        def work(i):
            owner = f"worker-{i}"
            r = self.client.lock("locks", "shared", owner=owner, lease_ms=60_000, wait_ms=60_000)
            self.assertEqual(Outcome.ACQUIRED, r.outcome)
            if inside:
                overlaps.append((owner, list(inside)))
            inside.append(owner)
            turns.append(owner)
            inside.remove(owner)
            self.assertEqual(Outcome.RELEASED,
                             self.client.unlock("locks", "shared", fence=r.record.fence).outcome)

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(work, range(8)))
        self.assertEqual([], overlaps)
        self.assertEqual(8, len(turns))

    def test_fencing_after_a_takeover(self):
        # The first attempt's lease ends without a heartbeat; a waiting Begin takes it over the
        # moment it ends (the server waits, not the test). The old holder is fenced out.
        first = self.client.begin("jobs", "slow", lease_ms=200)
        self.assertEqual(Outcome.STARTED, first.outcome)
        other = self.connect()
        second = other.begin("jobs", "slow", lease_ms=60_000, wait_ms=30_000)
        self.assertEqual(Outcome.STARTED, second.outcome)
        self.assertGreater(second.record.fence, first.record.fence)

        old = first.record.fence
        self.assertEqual("FENCE_MISMATCH",
                         outcome(self.client.heartbeat("jobs", "slow", fence=old)))
        self.assertEqual("FENCE_MISMATCH", outcome(self.client.complete("jobs", "slow", fence=old,
                                                                        payload=b"late")))
        self.assertEqual("APPLIED", outcome(other.complete("jobs", "slow",
                                                           fence=second.record.fence,
                                                           payload=b"winner")))
        self.assertEqual(b"winner", self.client.begin("jobs", "slow").record.payload)


class PipeliningTest(ServerTestCase):
    def test_many_threads_share_one_connection(self):
        threads, calls = 16, 150

        def work(t):
            for i in range(calls):
                r = self.client.insert("load", f"{t}-{i}", status="S", payload=b"p" * 100)
                self.assertEqual(Outcome.INSERTED, r.outcome)
            return t

        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            self.assertEqual(list(range(threads)), list(pool.map(work, range(threads))))
        found = self.client.apply([ops.get("load", f"{t}-{i}")
                                   for t in range(threads) for i in range(calls)])
        self.assertEqual([Outcome.FOUND] * (threads * calls), [r.outcome for r in found])

    def test_answers_are_matched_by_id_not_by_order(self):
        # A Begin waiting at the server for another attempt stays in flight while later calls on
        # the same connection are answered; it gets its own answer when the attempt completes.
        holder = self.connect()
        fence = holder.begin("jobs", "held", lease_ms=60_000).record.fence
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            waiting = pool.submit(self.client.begin, "jobs", "held", wait_ms=60_000)
            for i in range(50):
                self.assertEqual(Outcome.INSERTED,
                                 self.client.insert("pay", f"meanwhile-{i}", status="S").outcome)
            self.assertFalse(waiting.done())
            holder.complete("jobs", "held", fence=fence, payload=b"done")
            replay = waiting.result(timeout=30)
        self.assertEqual((Outcome.COMPLETED, b"done"), (replay.outcome, replay.record.payload))


if __name__ == "__main__":
    unittest.main()
