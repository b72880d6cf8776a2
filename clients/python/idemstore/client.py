"""Client: idemstored over its binary protocol, for threads (idemstore.aio.Client for asyncio).

    with idemstore.Client("127.0.0.1:7878", timeout=5.0) as store:
        r = store.begin("charges", "order-42", fingerprint=fp, lease_ms=30_000)
        if r.outcome is Outcome.STARTED: ...

Thread-safe and pipelined: any number of threads call one Client at once; their requests share
one connection and are matched to responses by request id (responses may come back in any
order). The client has no thread of its own: a waiting caller reads for all (_Connection).

Failure contract (the C++ client's, net/include/idem/client.h):
- The constructor connects (TCP, TLS, Hello): errors.ConnectionError when the server cannot be
  reached or the TLS handshake fails, errors.TimeoutError after connect_timeout,
  errors.ServerError UNAUTHENTICATED for a token the server does not accept, NOT_SUPPORTED for
  another protocol version.
- A call waits `timeout` seconds for its answer (plus the longest wait_ms of its ops), then
  raises errors.TimeoutError: it may have been applied, and its late answer is dropped. The
  connection stays up, as the C++ client's does: request ids are never reused, so a late answer
  cannot be taken for another call's.
- When the connection is lost (a server restart, its idle timeout, a response that does not
  decode), every call waiting on it raises errors.EffectUnknownError at once: it may or may not
  have been applied, and it is never resent. The next call connects again; when that fails it
  raises, and the calls after it raise errors.ConnectionError at once (nothing sent) for a
  backoff of 100 ms doubling to 2 s (60 s after a refused token: each refusal counts against
  the client's address at the server).
- A request the server refuses as a whole raises errors.ServerError (docs/protocol.md section 5
  says for each code whether anything took effect). apply() returns per-op errors as OpError;
  the single-op methods raise them as errors.ServerError.
- close() (or leaving the with block) fails the calls still waiting with EffectUnknownError
  SHUTDOWN; later calls raise ConnectionError SHUTDOWN.
"""
from __future__ import annotations

import functools
import inspect
import math
import select
import socket
import ssl
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

from . import _codec, _session, errors, ops as _ops
from ._session import split_address  # noqa: F401 - public here: idemstore.client's
from .types import OpAnswer, OpError, OpResult, StatusCode

_RECV_BYTES = 256 * 1024


class _Call:
    """One request waiting for its answer: a Reply, or the exception to raise. Guarded by its
    connection's _lock."""

    __slots__ = ("done", "reply", "error", "wake")

    def __init__(self):
        self.done = False
        self.reply: Optional[_codec.Reply] = None
        self.error: Optional[errors.Error] = None
        # Its waiter's condition (on the connection's _lock), made when it first has to sleep.
        self.wake: Optional[threading.Condition] = None


class _NotSent(Exception):
    """The connection was already down: the request was not sent (the caller connects again)."""


class _Connection:
    """One connection, handshaken: sends frames and reads the answers.

    Whoever waits reads: no thread of the client's own. A caller waiting for its answer becomes
    the connection's reader when no other caller is reading; the reader dispatches every frame
    it reads to its call (answers come in any order) and wakes that call's waiter only, and when
    its own answer is in (or its time is up) it hands the reading on to one sleeping waiter. A
    single thread's call thus costs one round trip, four system calls and no thread switch.
    While no call waits nobody reads; the next call first reads whatever arrived meanwhile (the
    server's idle timeout, its close), so it does not go out on a connection the server has
    already ended. Once the connection has failed nobody takes the reader's role again, and its
    socket is closed by whoever ends the failure's last read, never under a reader still in
    poll.

    The socket is in blocking mode, and every send and receive is MSG_DONTWAIT after a poll of
    our own (a socket with a timeout would poll again inside each call). A send that finds the
    server's buffer full waits for it in poll, up to `send_timeout`, then fails the connection.

    TLS runs through a memory BIO (ssl.SSLObject) rather than an SSLSocket, because an SSL object
    must not be used by two threads at once (here: the reader and a sender). _tls_lock guards the
    SSLObject and is never held while blocking on the socket; _send_lock orders the senders and
    is held while one waits to send, which never stops the reader, so a server that waits for
    its responses to be read before it reads more requests cannot deadlock the client.
    """

    def __init__(self, sock: socket.socket, tls: Optional[ssl.SSLObject],
                 incoming: Optional[ssl.MemoryBIO], outgoing: Optional[ssl.MemoryBIO],
                 reader: _codec.FrameReader, early: List[bytes], address: str,
                 send_timeout: Optional[float]):
        sock.setblocking(True)
        self._sock = sock
        self._tls, self._incoming, self._outgoing = tls, incoming, outgoing
        self._tls_lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._send_timeout = send_timeout
        self._send_poll = select.poll()  # guarded by _send_lock (a poll object is one thread's)
        self._send_poll.register(sock, select.POLLOUT)
        self._frames = reader
        self._early = early  # frames read with the HelloReply, for the first reader
        self._poll = select.poll()  # the reader's
        self._poll.register(sock, select.POLLIN)
        self._address = address
        self._lock = threading.Lock()
        self._calls: Dict[int, _Call] = {}  # guarded by _lock
        self._sleeping: Dict[int, _Call] = {}  # guarded by _lock: waiters not reading
        self._handed: Optional[int] = None  # guarded by _lock: woken to read, not awake yet
        self._reading = False  # guarded by _lock: a caller is the reader
        self._failure: Optional[errors.Error] = None  # guarded by _lock; set once: the link is down

    def usable(self) -> bool:
        """Whether the link is up, after reading what arrived while nobody was waiting."""
        with self._lock:
            if self._failure is not None:
                return False
            if self._reading or self._calls:
                return True
            self._reading = True
        try:
            self._read_once(0)
        finally:
            self._leave_reading()
        return self._failure is None

    def send(self, request_id: int, frame: bytes) -> _Call:
        """Registers the call and sends its frame. Raises _NotSent if the link is already down;
        a failure while sending fails the link, and with it this call (EffectUnknownError)."""
        call = _Call()
        with self._lock:
            if self._failure is not None:
                raise _NotSent()
            self._calls[request_id] = call
        try:
            with self._send_lock:
                if self._tls is None:
                    self._send_all(frame)
                else:
                    with self._tls_lock:
                        self._tls.write(frame)
                        data = self._outgoing.read()
                    self._send_all(data)
        except (OSError, ssl.SSLError) as e:
            self.fail(errors.EffectUnknownError(f"write to {self._address}: {e}"))
        return call

    def _send_all(self, data: bytes) -> None:
        try:
            sent = self._sock.send(data, socket.MSG_DONTWAIT)
        except BlockingIOError:  # no room at all: wait for it below
            sent = 0
        if sent == len(data):
            return
        view = memoryview(data)[sent:]
        deadline = None if self._send_timeout is None else \
            time.monotonic() + self._send_timeout
        while view:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise socket.timeout(f"the server took no bytes for {self._send_timeout:g} s")
            self._send_poll.poll(None if left is None else math.ceil(left * 1000))
            try:
                view = view[self._sock.send(view, socket.MSG_DONTWAIT):]
            except BlockingIOError:
                pass

    def wait(self, request_id: int, call: _Call, timeout: Optional[float]) -> bool:
        """Waits for the call's answer, reading when no one else does. False when `timeout`
        seconds passed first: the call is then forgotten, and a late answer dropped."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock:
                while True:
                    if call.done:
                        self._wake_next()
                        return True
                    left = None if deadline is None else deadline - time.monotonic()
                    if left is not None and left <= 0:
                        self._calls.pop(request_id, None)
                        self._wake_next()
                        return call.done
                    if not self._reading and self._failure is None:
                        self._reading = True
                        break
                    if call.wake is None:
                        call.wake = threading.Condition(self._lock)
                    self._sleeping[request_id] = call
                    try:
                        call.wake.wait(left)
                    finally:
                        self._sleeping.pop(request_id, None)
                        if self._handed == request_id:
                            self._handed = None
            try:
                self._read_once(left)
            finally:
                self._leave_reading()

    def _wake_next(self) -> None:
        """With _lock held, by a caller leaving: when no one reads, a sleeping waiter takes
        over (without one, answers would wait for the next caller)."""
        if not self._reading and self._handed is None and self._sleeping:
            self._handed, call = self._sleeping.popitem()
            call.wake.notify()

    def fail(self, why: errors.Error) -> None:
        """Ends the connection: every call waiting on it raises `why` (an EffectUnknownError)."""
        with self._lock:
            if self._failure is not None:
                return
            self._failure = why
            calls, self._calls = self._calls, {}
            # A reader in poll is woken by the shutdown and closes the socket as it leaves:
            # closed now, its fd number could go to another socket (a reconnect's) while the
            # reader still polls it, and the reader would sleep through its call's end.
            close_now = not self._reading
            for call in calls.values():
                call.error, call.done = why, True
            for call in self._sleeping.values():
                call.wake.notify()
            self._sleeping.clear()
            self._handed = None
        try:
            self._sock.shutdown(socket.SHUT_RDWR)  # wakes a reader blocked in poll
        except OSError:
            pass
        if close_now:
            self._sock.close()

    def _leave_reading(self) -> None:
        with self._lock:
            self._reading = False
            close = self._failure is not None  # no one reads a failed connection again
            self._wake_next()
        if close:
            self._sock.close()

    def _read_once(self, timeout: Optional[float]) -> None:
        """The reader: waits up to `timeout` for bytes, dispatches the frames they complete.
        Any failure of the link fails it (and so every call on it)."""
        try:
            bodies, self._early = self._early, []
            if not bodies:
                if not self._poll.poll(None if timeout is None else math.ceil(timeout * 1000)):
                    return
                data = self._recv()
                if data is None:  # nothing yet, or a TLS record not complete yet
                    return
                if not data:
                    raise errors.EffectUnknownError(
                        f"connection closed by the server {self._address}")
                bodies = self._frames.feed(data)
            for body in bodies:
                self._dispatch(_codec.decode_frame(body))
        except (errors.Error, OSError, ValueError) as e:
            # ValueError: the socket was closed, which only follows a failure (fail() is then
            # a no-op).
            self.fail(_session.reader_failure(e, self._address))
        except BaseException as e:  # a bug here must not leave the other callers waiting
            self.fail(_session.reader_failure(e, self._address))
            raise

    def _recv(self) -> Optional[bytes]:
        """Plaintext from the server; b"" once it has closed; None when there is nothing to
        read yet (or the bytes read do not complete a TLS record). Never blocks."""
        try:
            data = self._sock.recv(_RECV_BYTES, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return None
        if self._tls is None or not data:
            return data
        with self._tls_lock:
            self._incoming.write(data)
            chunks = []
            try:
                while True:
                    chunk = self._tls.read(_RECV_BYTES)
                    if not chunk:
                        break
                    chunks.append(chunk)
            except ssl.SSLWantReadError:
                pass
            except ssl.SSLZeroReturnError:  # close_notify
                if not chunks:
                    return b""
        return b"".join(chunks) if chunks else None

    def _dispatch(self, reply: _codec.Reply) -> None:
        if reply.request_id == 0:
            raise _session.connection_ended(reply, self._address)
        with self._lock:
            call = self._calls.pop(reply.request_id, None)
            if call is not None:  # else: it timed out earlier
                call.reply, call.done = reply, True
                if self._sleeping.pop(reply.request_id, None) is not None:
                    call.wake.notify()


def _single(build: Callable[..., _ops.Op]) -> Callable[..., OpResult]:
    """A Client method running the op `build` makes: its OpResult, or its OpError raised as
    errors.ServerError. Its arguments are build's (ops.py documents them)."""

    def method(self: "Client", *args, **kwargs) -> OpResult:
        return self.execute(build(*args, **kwargs))

    functools.update_wrapper(method, build)
    method.__annotations__ = dict(build.__annotations__, **{"return": "OpResult"})
    signature = inspect.signature(build)
    method.__signature__ = signature.replace(
        parameters=[inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
                    *signature.parameters.values()],
        return_annotation="OpResult")
    return method


class Client(_session.Session):
    """A connection to idemstored (see the module's failure contract). Arguments:

    address          "HOST:PORT" ("[::1]:7878" for IPv6)
    timeout          seconds a call waits for its answer (None: no limit)
    token            the secret of a principal of the server's --auth-file (None: none)
    tls              TlsOptions, or an ssl.SSLContext of your own, or None for plain TCP
    connect_timeout  seconds for TCP connect, TLS handshake and Hello (None: `timeout`)
    client_name      shown in the server's log
    """

    def _start(self) -> None:
        """Connects, so that the constructor raises where the server cannot be reached."""
        self._connect_lock = threading.Lock()  # one connection attempt at a time
        self._connection()

    # -- the operations ------------------------------------------------------------------------

    insert = _single(_ops.insert)
    get = _single(_ops.get)
    cas = _single(_ops.cas)
    delete = _single(_ops.delete)
    begin = _single(_ops.begin)
    complete = _single(_ops.complete)
    abort = _single(_ops.abort)
    heartbeat = _single(_ops.heartbeat)
    checkpoint = _single(_ops.checkpoint)
    issue_token = _single(_ops.issue_token)
    consume_token = _single(_ops.consume_token)
    lock = _single(_ops.lock)
    renew = _single(_ops.renew)
    unlock = _single(_ops.unlock)
    transition = _single(_ops.transition)

    def apply(self, ops: Sequence[_ops.Op]) -> List[OpAnswer]:
        """Runs `ops` as one request: in order, each seeing the ones before, committed as one
        unit (docs/protocol.md section 4). One OpResult or OpError per op, in order."""
        ops = list(ops)
        wait_s = _ops.longest_wait_ms(ops) / 1000
        reply = self._request(lambda request_id: _codec.encode_apply(request_id, ops), wait_s)
        return _codec.apply_result(reply, len(ops))

    def execute(self, op: _ops.Op) -> OpResult:
        """Runs one op: its OpResult, or its OpError raised as errors.ServerError."""
        (answer,) = self.apply([op])
        if isinstance(answer, OpError):
            raise errors.ServerError(answer.code, answer.message)
        return answer

    def stats(self) -> Dict[str, Any]:
        """The store's figures and the server's metrics (StatsResponse's fields by name,
        "metrics": a list of families)."""
        return _codec.stats_result(self._request(_codec.encode_stats, 0.0))

    def close(self) -> None:
        with self._connect_lock:
            self._closed = True
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.fail(errors.EffectUnknownError("client closed", StatusCode.SHUTDOWN))

    def __del__(self) -> None:
        # A Client dropped without close() must not leave its connection and reader behind.
        if getattr(self, "_conn", None) is not None:
            try:
                self.close()
            except Exception:  # noqa: BLE001 - e.g. at interpreter exit
                pass

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- requests and connections --------------------------------------------------------------

    def _request(self, encode: Callable[[int], bytes], extra_wait_s: float) -> _codec.Reply:
        for _ in range(2):  # a second time only when the link went down before sending
            conn = self._connection()
            request_id = next(self._ids)
            frame = encode(request_id)
            self._check_frame_size(frame)
            try:
                call = conn.send(request_id, frame)
            except _NotSent:
                continue
            timeout = self._call_timeout(extra_wait_s)
            if not conn.wait(request_id, call, timeout):
                raise errors.TimeoutError(
                    f"no response from {self.address} within {timeout:g} s; the request "
                    "may have been applied")
            if call.error is not None:
                # One exception per call: every call of a failed connection shares `error`.
                raise errors.EffectUnknownError(call.error.message, call.error.code)
            return call.reply
        raise errors.ConnectionError(f"connection to {self.address} lost before sending")

    def _connection(self) -> _Connection:
        conn = self._conn
        if conn is not None and conn.usable():
            return conn
        with self._connect_lock:
            self._check_attempt()
            if self._conn is not None and self._conn.usable():
                return self._conn
            try:
                self._conn = self._connect()
            except errors.Error as e:
                self._attempt_failed(e)
                raise
            self._attempt_succeeded()
            return self._conn

    def _connect(self) -> _Connection:
        """TCP, TLS and the Hello, within connect_timeout; the HelloReply's limits applied."""
        deadline = None if self.connect_timeout is None else \
            time.monotonic() + self.connect_timeout

        def left() -> Optional[float]:
            if deadline is None:
                return None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise socket.timeout()
            return remaining

        sock = None
        try:
            sock = socket.create_connection((self._host, self._port), timeout=left())
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            tls = incoming = outgoing = None
            if self._ssl_context is not None:
                incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
                tls = self._ssl_context.wrap_bio(incoming, outgoing,
                                                 server_hostname=self._server_name)
                self._handshake(sock, tls, incoming, outgoing, left)

            def send(data: bytes) -> None:
                if tls is not None:
                    tls.write(data)
                    data = outgoing.read()
                sock.settimeout(left())
                sock.sendall(data)

            def recv() -> bytes:
                sock.settimeout(left())
                while True:
                    data = sock.recv(_RECV_BYTES)
                    if tls is None or not data:
                        return data
                    incoming.write(data)
                    try:
                        return tls.read(_RECV_BYTES)
                    except ssl.SSLWantReadError:
                        continue

            hello_id = next(self._ids)
            send(_codec.encode_hello(hello_id, self._token, self._client_name))
            reader = _codec.FrameReader(_codec.DEFAULT_MAX_FRAME_BYTES)
            bodies: List[bytes] = []
            while not bodies:
                data = recv()
                if not data:
                    raise errors.ConnectionError(
                        f"connect to {self.address}: the server closed the connection before "
                        "answering the Hello")
                bodies = reader.feed(data)
            reply = _codec.decode_frame(bodies[0])
            if reply.request_id not in (0, hello_id):
                raise errors.ProtocolError(f"expected the HelloReply to request {hello_id}, "
                                           f"got a response to {reply.request_id}")
            info = _codec.hello_result(reply)
            reader.max_frame_bytes = _codec.max_reply_bytes(info)
            # Reads wait in poll; `timeout` bounds a send blocked by a server that stopped
            # reading (it fails the connection).
            conn = _Connection(sock, tls, incoming, outgoing, reader, bodies[1:], self.address,
                               self.timeout)
        except errors.Error:
            self._close_quietly(sock)
            raise
        except OSError as e:  # socket.timeout and ssl.SSLError included
            self._close_quietly(sock)
            raise _session.connect_failure(e, self.address, self.connect_timeout) from None
        except BaseException:
            self._close_quietly(sock)
            raise
        self._take_hello(info)
        return conn

    @staticmethod
    def _handshake(sock: socket.socket, tls: ssl.SSLObject, incoming: ssl.MemoryBIO,
                   outgoing: ssl.MemoryBIO, left: Callable[[], Optional[float]]) -> None:
        while True:
            try:
                tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                pending = outgoing.read()
                sock.settimeout(left())
                if pending:
                    sock.sendall(pending)
                data = sock.recv(_RECV_BYTES)
                if not data:
                    raise ssl.SSLError("the server closed the connection during the handshake")
                incoming.write(data)
        pending = outgoing.read()
        if pending:
            sock.settimeout(left())
            sock.sendall(pending)

    @staticmethod
    def _close_quietly(sock: Optional[socket.socket]) -> None:
        if sock is not None:
            sock.close()
