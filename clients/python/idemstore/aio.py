"""aio.Client: idemstore.Client's operations as coroutines, for asyncio.

    from idemstore import aio
    async with aio.Client("127.0.0.1:7878") as store:
        r = await store.begin("orders", "o-42", lease_ms=30_000)

Any number of tasks of one event loop may call a Client at once: their requests go out on one
connection as they are made, and one reader task hands each response to its caller by request id
(responses may come back in any order). A Client belongs to the event loop that first uses it.
Frames, values and exceptions are the synchronous client's (_codec, types, errors), and so is
the failure contract (client.py's module comment), except that nothing connects before the first
call or `async with`:

- a call raises errors.TimeoutError after `timeout` seconds (plus its ops' longest wait_ms); it
  may have been applied, its late answer is dropped, and the connection stays up. A cancelled
  call is dropped the same way.
- the calls waiting when the connection is lost raise errors.EffectUnknownError (never resent);
  the next call connects again, with the synchronous client's backoff after a failed attempt
  (errors.ConnectionError at once meanwhile: nothing sent).
- close() fails the calls still waiting with EffectUnknownError SHUTDOWN; later calls raise
  ConnectionError SHUTDOWN.
"""
from __future__ import annotations

import asyncio
import functools
import inspect
import ssl
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from . import _codec, errors, ops as _ops
from .client import _single as _sync_single, split_address
from .tls import TlsOptions, client_context, server_hostname
from .types import HelloInfo, OpAnswer, OpError, OpResult, StatusCode

_READ_BYTES = 256 * 1024
_WRITE_BUFFER_BYTES = 1 << 20  # unsent request bytes before a call waits for the socket
_BACKOFF_FIRST_S = 0.1
_BACKOFF_MAX_S = 2.0
_REFUSED_TOKEN_RETRY_S = 60.0  # ClientOptions::kRefusedTokenRetryMs


class _Connection:
    """One connection: writes frames; its reader task resolves the waiting futures by id."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, address: str):
        self._reader, self._writer = reader, writer
        self._address = address
        self._frames = _codec.FrameReader(_codec.DEFAULT_MAX_FRAME_BYTES)
        self._waiting: Dict[int, asyncio.Future] = {}
        self._failure: Optional[errors.Error] = None  # set once: the link is down
        self._task = asyncio.get_running_loop().create_task(self._read_loop())

    @property
    def alive(self) -> bool:
        return self._failure is None

    def set_max_frame_bytes(self, n: int) -> None:
        self._frames.max_frame_bytes = n

    async def call(self, request_id: int, frame: bytes, timeout: Optional[float]) -> _codec.Reply:
        """Sends the frame and waits for its answer. The caller has checked `alive` without
        yielding since, so the frame goes out on a live link."""
        future = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        self._writer.write(frame)
        try:
            async with asyncio.timeout(timeout):  # no task per call, unlike wait_for
                if self._writer.transport.get_write_buffer_size() > _WRITE_BUFFER_BYTES:
                    await self._drain()  # the server stops reading while its answers wait
                return await future
        except TimeoutError:  # asyncio.timeout's (errors.TimeoutError is only raised below)
            raise errors.TimeoutError(
                f"no response from {self._address} within {timeout:g} s; the request may have "
                "been applied") from None
        finally:
            self._waiting.pop(request_id, None)  # a late answer is dropped

    async def _drain(self) -> None:
        try:
            await self._writer.drain()
        except (OSError, ssl.SSLError) as e:
            self.fail(errors.EffectUnknownError(f"write to {self._address}: {e}"))

    def fail(self, why: errors.Error) -> None:
        """Ends the connection: every call waiting on it raises `why` (an EffectUnknownError)."""
        if self._failure is not None:
            return
        self._failure = why
        self._writer.close()
        waiting, self._waiting = self._waiting, {}
        for future in waiting.values():
            if not future.done():  # each call its own exception (its own traceback)
                future.set_exception(errors.EffectUnknownError(why.message, why.code))

    async def close(self, why: errors.Error) -> None:
        self.fail(why)
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            pass
        try:
            await self._writer.wait_closed()
        except (OSError, ssl.SSLError):
            pass

    async def _read_loop(self) -> None:
        try:
            while True:
                data = await self._reader.read(_READ_BYTES)
                if not data:
                    raise errors.EffectUnknownError(
                        f"connection closed by the server {self._address}")
                for body in self._frames.feed(data):
                    self._dispatch(_codec.decode_frame(body))
        except errors.ProtocolError as e:
            self.fail(errors.EffectUnknownError(
                f"connection to {self._address} dropped: {e.message}", StatusCode.CORRUPTION))
        except errors.Error as e:
            self.fail(e if isinstance(e, errors.EffectUnknownError)
                      else errors.EffectUnknownError(e.message, e.code))
        except (OSError, ssl.SSLError) as e:
            self.fail(errors.EffectUnknownError(f"read from {self._address}: {e}"))
        except Exception as e:  # noqa: BLE001 - a bug here must not leave callers waiting
            self.fail(errors.EffectUnknownError(f"reader of {self._address} failed: {e!r}"))
            raise

    def _dispatch(self, reply: _codec.Reply) -> None:
        if reply.request_id == 0:
            # A connection-level error; the server closes after it (docs/protocol.md section 5).
            e = reply.value
            raise errors.EffectUnknownError(
                f"the server {self._address} ended the connection: {e.code.name}: {e.message}",
                e.code)
        future = self._waiting.pop(reply.request_id, None)
        if future is not None and not future.done():  # else: it timed out or was cancelled
            future.set_result(reply)


def _single(build: Callable[..., _ops.Op]):
    """A Client coroutine running the op `build` makes: its OpResult, or its OpError raised as
    errors.ServerError. Its arguments and signature are idemstore.Client's method's."""

    async def method(self: "Client", *args, **kwargs) -> OpResult:
        return await self.execute(build(*args, **kwargs))

    functools.update_wrapper(method, build)
    method.__signature__ = inspect.signature(_sync_single(build))
    return method


class Client:
    """A connection to idemstored for asyncio; the arguments are idemstore.Client's."""

    def __init__(self, address: str = "127.0.0.1:7878", *, timeout: Optional[float] = 5.0,
                 token: Optional[str] = None,
                 tls: Union[TlsOptions, ssl.SSLContext, None] = None,
                 connect_timeout: Optional[float] = None,
                 client_name: str = _codec.CLIENT_NAME):
        self.address = address
        self.timeout = timeout
        self.connect_timeout = timeout if connect_timeout is None else connect_timeout
        self._host, self._port = split_address(address)
        self._token = token
        self._client_name = client_name
        self._ssl_context = client_context(tls)
        self._server_name = server_hostname(tls, self._host) if self._ssl_context else None
        self._next_id = 1
        self._connect_lock: Optional[asyncio.Lock] = None  # made on the loop that uses it
        self._conn: Optional[_Connection] = None
        self._closed = False
        self._backoff_s = _BACKOFF_FIRST_S
        self._next_attempt_at = 0.0  # monotonic
        self._last_error: Optional[errors.Error] = None
        self._server_info: Optional[HelloInfo] = None
        self._max_frame_bytes = 0  # the server's, from its HelloReply

    # -- the operations (the single-op coroutines are added after the class) ------------------

    async def apply(self, ops: Sequence[_ops.Op]) -> List[OpAnswer]:
        """Runs `ops` as one request (idemstore.Client.apply): one OpResult or OpError per op."""
        ops = list(ops)
        wait_s = _ops.longest_wait_ms(ops) / 1000
        reply = await self._request(lambda request_id: _codec.encode_apply(request_id, ops),
                                    wait_s)
        return _codec.apply_result(reply, len(ops))

    async def execute(self, op: _ops.Op) -> OpResult:
        """Runs one op: its OpResult, or its OpError raised as errors.ServerError."""
        (answer,) = await self.apply([op])
        if isinstance(answer, OpError):
            raise errors.ServerError(answer.code, answer.message)
        return answer

    async def stats(self) -> Dict[str, Any]:
        """The store's figures and the server's metrics (idemstore.Client.stats)."""
        return _codec.stats_result(await self._request(_codec.encode_stats, 0.0))

    @property
    def server_info(self) -> Optional[HelloInfo]:
        """What the server announced in its HelloReply on the latest connection (None before
        the first)."""
        return self._server_info

    async def close(self) -> None:
        self._closed = True
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.close(errors.EffectUnknownError("client closed", StatusCode.SHUTDOWN))

    async def __aenter__(self) -> "Client":
        await self._connection()  # so that `async with` fails where a server cannot be reached
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    # -- requests and connections --------------------------------------------------------------

    async def _request(self, encode: Callable[[int], bytes], extra_wait_s: float) -> _codec.Reply:
        conn = await self._connection()
        request_id = self._take_id()
        frame = encode(request_id)
        if self._max_frame_bytes and len(frame) - 4 > self._max_frame_bytes:
            raise errors.Error(StatusCode.INVALID_ARGUMENT,
                               f"request frame of {len(frame) - 4} bytes exceeds the "
                               f"server's max_frame_bytes {self._max_frame_bytes}")
        timeout = None if self.timeout is None else self.timeout + extra_wait_s
        return await conn.call(request_id, frame, timeout)

    def _take_id(self) -> int:
        request_id = self._next_id
        self._next_id += 1
        return request_id

    async def _connection(self) -> _Connection:
        conn = self._conn
        if conn is not None and conn.alive:
            return conn
        if self._connect_lock is None:
            self._connect_lock = asyncio.Lock()
        async with self._connect_lock:  # one attempt at a time; the others share its result
            if self._closed:
                raise errors.ConnectionError("client closed", StatusCode.SHUTDOWN)
            if self._conn is not None and self._conn.alive:
                return self._conn
            wait = self._next_attempt_at - time.monotonic()
            if self._last_error is not None and wait > 0:
                raise errors.ConnectionError(
                    f"{self._last_error.message}; next attempt in {int(wait * 1000) + 1} ms",
                    self._last_error.code)
            try:
                conn = await self._connect()
            except errors.Error as e:
                retry_s = self._backoff_s
                if e.code == StatusCode.UNAUTHENTICATED:
                    retry_s = max(retry_s, _REFUSED_TOKEN_RETRY_S)
                self._next_attempt_at = time.monotonic() + retry_s
                self._backoff_s = min(self._backoff_s * 2, _BACKOFF_MAX_S)
                self._last_error = e
                raise
            if self._conn is not None:  # the lost one: its reader task ends with it
                await self._conn.close(errors.EffectUnknownError("reconnected"))
            self._conn = conn
            self._backoff_s = _BACKOFF_FIRST_S
            self._last_error = None
            return conn

    async def _connect(self) -> _Connection:
        """TCP, TLS and the Hello, within connect_timeout; the HelloReply's limits applied."""
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(self._host, self._port, ssl=self._ssl_context,
                                        server_hostname=self._server_name,
                                        limit=_READ_BYTES),
                self.connect_timeout)
        except asyncio.TimeoutError:
            raise errors.TimeoutError(f"connect to {self.address}: no handshake within "
                                      f"{self.connect_timeout:g} s") from None
        except ssl.SSLCertVerificationError as e:
            raise errors.ConnectionError(f"TLS handshake with {self.address} failed: certificate "
                                         f"verify failed ({e.verify_message})") from None
        except ssl.SSLError as e:
            raise errors.ConnectionError(
                f"TLS handshake with {self.address} failed: {e.reason or e}") from None
        except OSError as e:
            raise errors.ConnectionError(f"connect to {self.address}: {e.strerror or e}") from None
        conn = _Connection(reader, writer, self.address)
        hello_id = self._take_id()
        try:
            reply = await conn.call(
                hello_id, _codec.encode_hello(hello_id, self._token, self._client_name),
                self.connect_timeout)
            info = _codec.hello_result(reply)
        except errors.EffectUnknownError as e:  # only the Hello was in flight: nothing applied
            await conn.close(e)
            raise errors.ConnectionError(f"connect to {self.address}: {e.message}",
                                         e.code) from None
        except BaseException as e:
            await conn.close(errors.EffectUnknownError(f"connect to {self.address}: {e}"))
            raise
        conn.set_max_frame_bytes(_codec.max_reply_bytes(info))
        self._server_info = info
        self._max_frame_bytes = info.max_frame_bytes
        return conn


# One coroutine per op builder, named and documented as idemstore.Client's single-op methods.
for _name in ("insert", "get", "cas", "delete", "begin", "complete", "abort", "heartbeat",
              "checkpoint", "issue_token", "consume_token", "lock", "renew", "unlock",
              "transition"):
    setattr(Client, _name, _single(getattr(_ops, _name)))
