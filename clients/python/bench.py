#!/usr/bin/python3
"""bench.py: the Python client's throughput, against redis-py's SET NX EX on the same machine.

    /usr/bin/python3 clients/python/bench.py [--idemstored PATH | --server HOST:PORT]
        [--seconds 3] [--rounds 3] [--threads 16] [--tasks 64] [--batch 100]
        [--durability async] [--modes single,threads,batch,asyncio] [--no-redis] [--no-install]

Starts idemstored (default: build/tools/idemstored, or $IDEMSTORED) and, unless --no-redis, a
private redis-server on 127.0.0.1 (installing python3-redis and redis-server with apt-get when
missing, as bench/compare does), both pinned to CPU 0 with this process on CPU 1. Each mode
inserts new keys (a 100-byte payload, 24 h TTL) for --seconds:

  single   one thread, one call at a time          Client.insert      | Redis.set(nx, ex)
  threads  --threads threads sharing one client    (pipelined on one  | (a connection per
                                                    connection)        |  thread, from the pool)
  batch    one thread, --batch ops per request     Client.apply       | pipeline(transaction=
                                                                       |  False)
  asyncio  --tasks tasks on one event loop         aio.Client.insert  | redis.asyncio (pool)

The sides alternate (idemstore first in odd rounds, redis first in even ones) so that drift of
the machine hits both; the table shows each mode's median over --rounds, and idemstore ÷ redis.
Redis runs with appendonly yes, appendfsync everysec, which matches idemstored --durability
async (acknowledged before fsync); --durability sync is the stronger promise and not comparable.
Not a test: nothing here is asserted.
"""

import argparse
import asyncio
import atexit
import importlib.util
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import idemstore  # noqa: E402  (the package next to this script, not an installed one)
from idemstore import aio, ops  # noqa: E402

SERVER_CPU, CLIENT_CPU = 0, 1
NAMESPACE = "bench"
TTL_MS = 86_400_000
PAYLOAD = (b'{"code":201,"txn":"9f86d081884c7d659a2feaa0c55ad015","body":"ok"}' * 2)[:100]
MODES = ("single", "threads", "batch", "asyncio")

_stop_at_exit = []


def log(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=30):
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")
            time.sleep(0.05)


def start_process(argv, port, what):
    cpus = [SERVER_CPU] if os.cpu_count() > 1 else None
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)

    def stop():
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    _stop_at_exit.append(stop)
    try:
        wait_port(port)
    except RuntimeError:
        stop()
        raise RuntimeError(f"{what} did not start ({' '.join(argv)})")
    return stop


def ensure_redis(no_install):
    """True when redis-py and redis-server are usable, installing them if allowed."""
    missing = []
    if shutil.which("redis-server") is None:
        missing.append("redis-server")
    if importlib.util.find_spec("redis") is None:
        missing.append("python3-redis")
    if not missing:
        return True
    if no_install:
        log(f"no redis comparison: missing {' '.join(missing)} (--no-install)")
        return False
    sudo = [] if os.geteuid() == 0 else ["sudo"]
    log(f"installing {' '.join(missing)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(sudo + ["apt-get", "update", "-qq"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run(sudo + ["apt-get", "install", "-y", "-qq", "--no-install-recommends"] + missing,
                   check=True, env=env, stdout=subprocess.DEVNULL)
    # The package starts its own default instance; this script uses a private one.
    subprocess.run(sudo + ["systemctl", "stop", "redis-server"], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    importlib.invalidate_caches()
    return True


class Keys:
    """Unique keys across modes, rounds and threads."""

    def __init__(self, prefix):
        self._prefix = prefix
        self._next = 0
        self._lock = threading.Lock()

    def take(self, n):
        with self._lock:
            first = self._next
            self._next += n
        return [f"{self._prefix}{i:012d}" for i in range(first, first + n)]


def timed_threads(n_threads, seconds, work):
    """Runs work(deadline) -> ops in n_threads threads; returns ops per second."""
    counts = [0] * n_threads
    start = threading.Barrier(n_threads + 1)

    def body(i):
        start.wait()
        counts[i] = work(deadline[0])

    deadline = [0.0]
    threads = [threading.Thread(target=body, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    began = time.perf_counter()
    deadline[0] = began + seconds
    start.wait()
    for t in threads:
        t.join()
    return sum(counts) / (time.perf_counter() - began)


async def timed_tasks(n_tasks, seconds, work):
    """Runs the coroutine work(deadline) -> ops in n_tasks tasks; returns ops per second."""
    began = time.perf_counter()
    deadline = began + seconds
    counts = await asyncio.gather(*(work(deadline) for _ in range(n_tasks)))
    return sum(counts) / (time.perf_counter() - began)


class Side:
    """One system's four modes, each inserting new keys for --seconds; a subclass makes the
    calls: insert(key), insert_batch(keys), and for asyncio open_async(), insert_async(client,
    key), close_async(client)."""

    def __init__(self, args):
        self.args = args
        self.keys = Keys("py-bench-")

    def _one_at_a_time(self, deadline):
        n = 0
        while time.perf_counter() < deadline:
            for key in self.keys.take(100):
                self.insert(key)
            n += 100
        return n

    def single(self):
        return timed_threads(1, self.args.seconds, self._one_at_a_time)

    def threads(self):
        return timed_threads(self.args.threads, self.args.seconds, self._one_at_a_time)

    def batch(self):
        def work(deadline):
            n = 0
            while time.perf_counter() < deadline:
                self.insert_batch(self.keys.take(self.args.batch))
                n += self.args.batch
            return n

        return timed_threads(1, self.args.seconds, work)

    def asyncio(self):
        async def run():
            client = self.open_async()

            async def work(deadline):
                n = 0
                while time.perf_counter() < deadline:
                    for key in self.keys.take(10):
                        await self.insert_async(client, key)
                    n += 10
                return n

            try:
                return await timed_tasks(self.args.tasks, self.args.seconds, work)
            finally:
                await self.close_async(client)

        return asyncio.run(run())


class IdemSide(Side):
    name = "idemstore"

    def __init__(self, address, args):
        super().__init__(args)
        self.address = address
        self.client = idemstore.Client(address, timeout=30.0)

    def close(self):
        self.client.close()

    def insert(self, key):
        self.client.insert(NAMESPACE, key, status="DONE", payload=PAYLOAD, ttl_ms=TTL_MS)

    def insert_batch(self, keys):
        self.client.apply([ops.insert(NAMESPACE, key, status="DONE", payload=PAYLOAD,
                                      ttl_ms=TTL_MS) for key in keys])

    def open_async(self):
        return aio.Client(self.address, timeout=30.0)

    async def insert_async(self, client, key):
        await client.insert(NAMESPACE, key, status="DONE", payload=PAYLOAD, ttl_ms=TTL_MS)

    async def close_async(self, client):
        await client.close()


class RedisSide(Side):
    name = "redis"
    EX = TTL_MS // 1000

    def __init__(self, port, args):
        import redis
        super().__init__(args)
        self.port = port
        self.client = redis.Redis(host="127.0.0.1", port=port, max_connections=args.threads + 1)

    def close(self):
        self.client.close()

    def insert(self, key):
        self.client.set(key, PAYLOAD, nx=True, ex=self.EX)

    def insert_batch(self, keys):
        pipe = self.client.pipeline(transaction=False)
        for key in keys:
            pipe.set(key, PAYLOAD, nx=True, ex=self.EX)
        pipe.execute()

    def open_async(self):
        from redis import asyncio as aioredis
        return aioredis.Redis(host="127.0.0.1", port=self.port, max_connections=self.args.tasks + 1)

    async def insert_async(self, client, key):
        await client.set(key, PAYLOAD, nx=True, ex=self.EX)

    async def close_async(self, client):
        await client.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--idemstored", default=os.environ.get(
        "IDEMSTORED", os.path.join(ROOT, "build", "tools", "idemstored")))
    ap.add_argument("--server", help="use this idemstored instead of starting one")
    ap.add_argument("--durability", default="async", choices=("async", "sync"))
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--tasks", type=int, default=64)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--no-redis", action="store_true")
    ap.add_argument("--no-install", action="store_true")
    args = ap.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    unknown = set(modes) - set(MODES)
    if unknown:
        ap.error(f"unknown modes {sorted(unknown)}; known: {', '.join(MODES)}")

    atexit.register(lambda: [stop() for stop in reversed(_stop_at_exit)])
    workdir = tempfile.mkdtemp(prefix="idem-py-bench-")
    atexit.register(shutil.rmtree, workdir, True)

    if args.server:
        address = args.server
    else:
        port = free_port()
        start_process([args.idemstored, "--listen", f"127.0.0.1:{port}", "--data",
                       os.path.join(workdir, "idem"), "--durability", args.durability],
                      port, "idemstored")
        address = f"127.0.0.1:{port}"
    sides = [IdemSide(address, args)]
    if not args.no_redis and ensure_redis(args.no_install):
        port = free_port()
        os.makedirs(os.path.join(workdir, "redis"))
        start_process(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir",
                       os.path.join(workdir, "redis"), "--appendonly", "yes", "--appendfsync",
                       "everysec", "--save", "", "--daemonize", "no"], port, "redis-server")
        sides.append(RedisSide(port, args))
    if os.cpu_count() > 1:
        os.sched_setaffinity(0, [CLIENT_CPU])

    figures = {(side.name, mode): [] for side in sides for mode in modes}
    for r in range(args.rounds):
        order = sides if r % 2 == 0 else list(reversed(sides))
        for mode in modes:
            for side in order:
                ops_per_s = getattr(side, mode)()
                figures[(side.name, mode)].append(ops_per_s)
                log(f"round {r + 1}/{args.rounds} {side.name:9} {mode:7} {ops_per_s:10,.0f} ops/s")
    for side in sides:
        side.close()

    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\nPython {sys.version.split()[0]}, idemstored --durability {args.durability}"
          f"{', redis appendfsync everysec' if len(sides) > 1 else ''}; median of {args.rounds}"
          f" rounds of {args.seconds:g} s; threads {args.threads}, tasks {args.tasks}, "
          f"batch {args.batch}; load average at the end {load} on {os.cpu_count()} CPUs\n")
    header = "| mode | idemstore ops/s |" + (" redis ops/s | idemstore ÷ redis |"
                                              if len(sides) > 1 else "")
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for mode in modes:
        idem = statistics.median(figures[("idemstore", mode)])
        row = f"| {mode} | {idem:,.0f} |"
        if len(sides) > 1:
            red = statistics.median(figures[("redis", mode)])
            row += f" {red:,.0f} | {idem / red:.2f} |"
        print(row)


if __name__ == "__main__":
    main()
