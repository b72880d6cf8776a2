"""Test support: the real idemstored (the build's, from $IDEMSTORED) as a child process on a
loopback port, its data in a directory the test owns.

Like tests/support/server_process.h: the child dies with the test process (PR_SET_PDEATHSIG),
its output is drained and kept, and start() returns once its start line names the port.
"""
import ctypes
import os
import signal
import subprocess
import threading
import time
import unittest

_PR_SET_PDEATHSIG = 1
_START_LINE = "listening on 127.0.0.1:"


def idemstored_path():
    path = os.environ.get("IDEMSTORED")
    if not path:
        raise unittest.SkipTest("IDEMSTORED (the idemstored binary to test against) is not set; "
                                "ctest sets it")
    return path


def _die_with_parent():
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


class ServerProcess:
    def __init__(self, data_dir, args=()):
        self.data_dir = data_dir
        self.args = list(args)
        self.port = 0
        self._proc = None
        self._output = []
        self._started = threading.Event()

    @property
    def address(self):
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self):
        return self._proc.pid

    def output(self):
        return "".join(self._output)

    def start(self, port=None):
        """Starts idemstored on `port` (default: the previous one, else an ephemeral one)."""
        port = self.port if port is None else port
        self._started.clear()
        self._output = []
        self._proc = subprocess.Popen(
            [idemstored_path(), "--listen", f"127.0.0.1:{port}", "--data", self.data_dir,
             *self.args],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            preexec_fn=_die_with_parent, text=True)
        self._drainer = threading.Thread(target=self._drain, args=(self._proc,), daemon=True)
        self._drainer.start()
        if not self._started.wait(20) or self._proc.poll() is not None:
            self.kill()
            raise AssertionError(f"idemstored did not start:\n{self.output()}")
        return self

    def _drain(self, proc):
        for line in proc.stdout:
            self._output.append(line)
            at = line.find(_START_LINE)
            if at >= 0 and not self._started.is_set():
                digits = line[at + len(_START_LINE):]
                self.port = int(digits[:len(digits) - len(digits.lstrip("0123456789"))])
                self._started.set()

    def stop(self):
        """SIGTERM, then waits for the exit status (0 after a clean shutdown)."""
        self._proc.send_signal(signal.SIGTERM)
        return self._reap()

    def kill(self):
        """SIGKILL: the server dies at once, with whatever it was doing."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
        if self._proc is not None:
            self._reap()

    def _reap(self):
        status = self._proc.wait(30)
        self._drainer.join(30)
        self._proc.stdout.close()
        return status


def wait_until(condition, timeout=10.0, what="condition"):
    """Polls `condition` (an event another thread causes, e.g. a reader seeing the server's
    close) until it holds; fails after `timeout` seconds. Never used to wait for time itself."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.005)


class ServerTestCase(unittest.TestCase):
    """A fresh idemstored per test (data in a temporary directory) and self.client on it."""

    server_args = ()

    def setUp(self):
        import tempfile

        import idemstore

        self._idemstore = idemstore
        tmp = tempfile.TemporaryDirectory(prefix="idemstore-py-")
        self.addCleanup(tmp.cleanup)
        self.tmp = tmp.name
        self.server = ServerProcess(os.path.join(tmp.name, "db"), self.server_args)
        self.addCleanup(self.server.kill)
        self.server.start()
        self.client = self.connect()

    def connect(self, **options):
        """Another Client of the server, closed at the end of the test."""
        client = self._idemstore.Client(self.server.address, **options)
        self.addCleanup(client.close)
        return client
