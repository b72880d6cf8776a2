"""aio.Client: idemstore.Client's operations as coroutines, for asyncio.

    from idemstore import aio
    async with aio.Client("127.0.0.1:7878") as store:
        r = await store.begin("orders", "o-42", lease_ms=30_000)

Any number of tasks of one event loop may call a Client at once: their requests go out on one
connection as they are made, and one reader task hands each response to its caller by request id
(responses may come back in any order). A Client belongs to the event loop that first uses it.
Frames, values, exceptions and settings are the synchronous client's (_codec, types, errors,
_session), and so is the failure contract (client.py's module comment), except that nothing
connects before the first call or `async with`:

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
from typing import Any, Callable, Dict, List, Optional, Sequence

from . import _codec, _session, errors, ops as _ops
from .client import _single as _sync_single
from .types import OpAnswer, OpError, OpResult, StatusCode

_READ_BYTES = 256 * 1024
_WRITE_BUFFER_BYTES = 1 << 20  # unsent request bytes before a call waits for the socket


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
        except (errors.Error, OSError) as e:
            self.fail(_session.reader_failure(e, self._address))
        except Exception as e:  # noqa: BLE001 - a bug here must not leave callers waiting
            self.fail(_session.reader_failure(e, self._address))
            raise

    def _dispatch(self, reply: _codec.Reply) -> None:
        if reply.request_id == 0:
            raise _session.connection_ended(reply, self._address)
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


class Client(_session.Session):
    """A connection to idemstored for asyncio; the arguments are idemstore.Client's."""

    def _start(self) -> None:
        """Nothing connects before the first call (or `async with`): the loop is not known yet."""
        self._connect_lock: Optional[asyncio.Lock] = None  # made on the loop that uses it

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
        request_id = next(self._ids)
        frame = encode(request_id)
        self._check_frame_size(frame)
        return await conn.call(request_id, frame, self._call_timeout(extra_wait_s))

    async def _connection(self) -> _Connection:
        conn = self._conn
        if conn is not None and conn.alive:
            return conn
        if self._connect_lock is None:
            self._connect_lock = asyncio.Lock()
        async with self._connect_lock:  # one attempt at a time; the others share its result
            self._check_attempt()
            if self._conn is not None and self._conn.alive:
                return self._conn
            try:
                conn = await self._connect()
            except errors.Error as e:
                self._attempt_failed(e)
                raise
            if self._conn is not None:  # the lost one: its reader task ends with it
                await self._conn.close(errors.EffectUnknownError("reconnected"))
            self._conn = conn
            self._attempt_succeeded()
            return conn

    async def _connect(self) -> _Connection:
        """TCP, TLS and the Hello, within connect_timeout; the HelloReply's limits applied."""
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(self._host, self._port, ssl=self._ssl_context,
                                        server_hostname=self._server_name,
                                        limit=_READ_BYTES),
                self.connect_timeout)
        except OSError as e:  # asyncio.TimeoutError and ssl.SSLError included
            raise _session.connect_failure(e, self.address, self.connect_timeout) from None
        conn = _Connection(reader, writer, self.address)
        hello_id = next(self._ids)
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
        self._take_hello(info)
        return conn


# One coroutine per op builder, named and documented as idemstore.Client's single-op methods.
for _name in ("insert", "get", "cas", "delete", "begin", "complete", "abort", "heartbeat",
              "checkpoint", "issue_token", "consume_token", "lock", "renew", "unlock",
              "transition"):
    setattr(Client, _name, _single(getattr(_ops, _name)))
