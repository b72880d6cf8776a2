"""Run a function once per key: the @idempotent decorator and the Idempotency context managers.

The problem: a retried call (a client that timed out, a redelivered message, a user who clicked
twice) must not charge twice, and a duplicate that arrives while the first is still running must
not run alongside it. The mechanism is the request lifecycle of docs/recipes.md ("Request
lifecycle"): Begin the key's attempt, run the function only on STARTED while a heartbeat keeps
the lease, Complete with the serialized result, which later Begins replay (COMPLETED).

Contract of a decorated call (and of the context managers):
  - STARTED: the function runs; its result is serialized and stored (Complete), and the call
    returns serializer.loads() of what was stored, exactly what a replay returns.
  - COMPLETED: the function does not run; the stored result is returned (a replay).
  - MISMATCH: MismatchError (the key was reused with other arguments).
  - IN_PROGRESS (after waiting up to wait_ms if in_progress="wait"): InProgressError.
  - EXPIRED (a namespace that remembers keys): ExpiredError; the function does not run.
  - the function raises (or is cancelled): the attempt is aborted, so a retry runs it again, and
    the exception propagates unchanged.
  - the attempt was taken over (the lease ran out and another Begin got a higher fence) or the
    record was deleted, as a heartbeat or Complete finds: FenceError, and the result is NOT
    stored (the other attempt's result will be).
  - a transport failure (errors.TimeoutError, EffectUnknownError, ConnectionError) propagates.
    Whether a Complete that failed that way was stored is unknown: a retry either replays it or,
    once the lease ran out, runs the function again.

The function's side effects happen at most once per completed attempt, not exactly once: a
worker that stalls past its lease (or loses its connection) can be taken over while its side
effects are under way. Pass the fence (Idempotency.fence) on to systems that can check it.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import inspect
import json
import os
import socket
import threading
from typing import Any, Callable, Protocol

from . import errors
from .errors import FenceError, InProgressError, MismatchError
from .types import Outcome, StatusCode

__all__ = [
    "AsyncIdempotency",
    "ExpiredError",
    "FenceError",
    "Idempotency",
    "InProgressError",
    "JsonSerializer",
    "MismatchError",
    "ReplayedFailureError",
    "Serializer",
    "idempotent",
]

# Status of a record whose attempt failed in a namespace that remembers failures
# (--lifecycle NS=remember-failures): Begin answers COMPLETED with it.
_STATUS_FAILED = "FAILED"


# ---- Errors ---------------------------------------------------------------------------------
# FenceError, MismatchError and InProgressError are errors.py's; the two below exist only here.
# Each carries .outcome (the answer that raised it) and .record (the key's record, if any). Their
# .code is the nearest status code: INVALID_ARGUMENT for MISMATCH and a replayed failure (do not
# retry as is), BUSY for IN_PROGRESS (retry later), NOT_FOUND for a lost fence and an expired
# result (the attempt, or the result, no longer exists).


class ExpiredError(errors.Error):
    """The key's work was done and its result has expired; the namespace still remembers the
    key, so the work must not run again."""


class ReplayedFailureError(errors.Error):
    """The key's attempt failed in a namespace that remembers failures (remember-failures):
    record.payload is what the aborted attempt stored (its exception's type and message, JSON)."""


def _refusal(cls, code: StatusCode, result, message: str) -> errors.Error:
    error = cls(code, message)
    error.outcome, error.record = result.outcome, result.record
    return error


# ---- Serialization --------------------------------------------------------------------------


class Serializer(Protocol):
    """How results (and, for the default fingerprint, arguments) become bytes. dumps must be
    deterministic for the default fingerprint to work: equal arguments, equal bytes."""

    def dumps(self, value: Any) -> bytes: ...

    def loads(self, data: bytes) -> Any: ...


class JsonSerializer:
    """Compact JSON with sorted keys (deterministic), UTF-8. A replay returns what JSON keeps:
    tuples come back as lists, dict keys as strings. Values JSON cannot hold raise TypeError,
    unless `default` (json.dumps's) converts them."""

    def __init__(self, *, default: Callable[[Any], Any] | None = None):
        self._default = default

    def dumps(self, value: Any) -> bytes:
        return json.dumps(
            value, separators=(",", ":"), sort_keys=True, ensure_ascii=False, default=self._default
        ).encode()

    def loads(self, data: bytes) -> Any:
        return json.loads(data)


# ---- One key's attempt: its state and what each answer means, whatever the I/O ----------------


def _default_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class _Attempt:
    """One key's attempt: its parameters, its state, and what each answer means. Idempotency
    and AsyncIdempotency add only the calls (blocking ones with a heartbeat thread, or
    coroutines with a heartbeat task)."""

    def __init__(self, client, ns: str, key: str | bytes, *, fingerprint: bytes = b"",
                 lease_ms: int = 30_000, in_progress: str = "wait", wait_ms: int = 10_000,
                 serializer: Serializer | None = None, owner: str | None = None,
                 heartbeat_ms: int | None = None, ttl_ms: int | None = None):
        if in_progress not in ("wait", "raise"):
            raise ValueError(f"in_progress must be 'wait' or 'raise', not {in_progress!r}")
        if lease_ms <= 0:
            raise ValueError(f"lease_ms must be positive, not {lease_ms}")
        if wait_ms < 0:
            raise ValueError(f"wait_ms must be 0 or more, not {wait_ms}")
        self._client = client
        self._ns, self._key, self._fingerprint = ns, key, fingerprint
        self._lease_ms = lease_ms
        self._wait_ms = wait_ms if in_progress == "wait" else 0
        self._serializer = serializer or JsonSerializer()
        self._owner = owner if owner is not None else _default_owner()
        # 0 turns heartbeats off (the lease must then outlast the block).
        self._heartbeat_ms = max(1, lease_ms // 3) if heartbeat_ms is None else heartbeat_ms
        self._ttl_ms = ttl_ms
        self._held = False
        self._lost: FenceError | None = None  # set by the heartbeat when it finds a takeover
        self.replayed = False
        self.result: Any = None
        self.fence: int | None = None

    @property
    def lost(self) -> bool:
        """Whether a heartbeat found the attempt taken over: long work may stop early."""
        return self._lost is not None

    def _where(self) -> str:
        key = self._key if isinstance(self._key, str) else repr(self._key)
        return f"{self._ns}/{key}"

    def _begin_args(self) -> dict:
        # A waiting Begin is answered when the holder lets go or the wait ends; the clients
        # wait that much longer than their timeout for it.
        return dict(ns=self._ns, key=self._key, fingerprint=self._fingerprint, owner=self._owner,
                    lease_ms=self._lease_ms, wait_ms=self._wait_ms or None)

    def _began(self, result) -> bool:
        """Takes Begin's answer: True when the attempt is ours and wants a heartbeat, False for
        a replay (self.result); raises for every other answer."""
        outcome, record, where = result.outcome, result.record, self._where()
        if outcome == Outcome.STARTED:
            self._held, self.fence = True, record.fence
            return self._heartbeat_ms > 0
        if outcome == Outcome.COMPLETED and record.status != _STATUS_FAILED:
            self.replayed, self.result = True, self._serializer.loads(bytes(record.payload))
            return False
        if outcome == Outcome.COMPLETED:
            raise _refusal(ReplayedFailureError, StatusCode.INVALID_ARGUMENT, result,
                           f"{where}: an earlier attempt failed and the namespace remembers "
                           f"failures: {bytes(record.payload)[:200]!r}")
        if outcome == Outcome.MISMATCH:
            raise _refusal(MismatchError, StatusCode.INVALID_ARGUMENT, result,
                           f"{where} was used by a call with other arguments (fingerprint "
                           "mismatch): the key was reused")
        if outcome == Outcome.IN_PROGRESS:
            raise _refusal(InProgressError, StatusCode.BUSY, result,
                           f"{where} is in progress in another attempt (owner {record.owner!r}, "
                           f"lease until {record.lease_until_ms} ms)")
        if outcome == Outcome.EXPIRED:
            raise _refusal(ExpiredError, StatusCode.NOT_FOUND, result,
                           f"{where} was done and its result has expired: not run again")
        raise _refusal(errors.Error, StatusCode.INVALID_ARGUMENT, result,
                       f"begin {where} answered {outcome.name}: the key is used by another "
                       "scheme (a lock, token or plain record)")

    def _fence_lost(self, result) -> FenceError:
        current = result.record
        now = (f"now fence {current.fence}, status {current.status}" if current is not None
               else "the record is gone")
        return _refusal(FenceError, StatusCode.NOT_FOUND, result,
                        f"{self._where()}: the attempt with fence {self.fence} lost the key "
                        f"({result.outcome.name}; {now}): its result was not stored")

    def _heartbeat_args(self) -> dict:
        return dict(ns=self._ns, key=self._key, fence=self.fence, lease_ms=self._lease_ms)

    def _kept(self, heartbeat_result) -> bool:
        """Takes a heartbeat's answer; False once the attempt is lost (no more heartbeats)."""
        if heartbeat_result.outcome == Outcome.APPLIED:
            return True
        self._lost = self._fence_lost(heartbeat_result)
        return False

    def _result_bytes(self, value: Any) -> bytes:
        if not self._held:
            raise RuntimeError(f"{self._where()}: complete() without a held attempt")
        return self._serializer.dumps(value)

    def _complete_args(self, data: bytes) -> dict:
        """For the Complete, once the heartbeat has stopped. The attempt is not held from here
        on: a Complete whose fate is unknown (a timeout, a dropped connection) is not followed
        by an Abort that could undo a stored result."""
        self._held = False
        if self._lost is not None:
            raise self._lost
        return dict(ns=self._ns, key=self._key, fence=self.fence, payload=data,
                    ttl_ms=self._ttl_ms)

    def _completed(self, result, data: bytes) -> Any:
        # ALREADY would be this fence's own earlier Complete: stored, so success too.
        if result.outcome not in (Outcome.APPLIED, Outcome.ALREADY):
            raise self._fence_lost(result)
        self.result = self._serializer.loads(data)
        return self.result

    def _abort_args(self, exc: BaseException | None) -> dict:
        """For the Abort when the block ends while the attempt is held. The payload is what a
        namespace that remembers failures keeps (ReplayedFailureError)."""
        self._held = False
        payload = b"" if exc is None else json.dumps(
            {"error": type(exc).__name__, "message": str(exc)[:1000]}).encode()
        return dict(ns=self._ns, key=self._key, fence=self.fence, payload=payload)

    def _after_abort(self, exc: BaseException | None, abort_error: errors.Error | None) -> bool:
        """__exit__'s answer once the Abort was sent: the block's exception goes on (with a note
        if the Abort failed too); a block that ended without complete() is a bug."""
        if abort_error is not None:
            if exc is None:
                raise abort_error
            exc.add_note(f"idemstore: aborting {self._where()} failed too: {abort_error}")
        elif exc is None:
            raise RuntimeError(f"{self._where()}: the block ended without complete(); "
                               "the attempt was aborted")
        return False


class Idempotency(_Attempt):
    """One key's attempt around a block of code, for the synchronous Client:

        with Idempotency(client, "orders", order_id, fingerprint=digest) as attempt:
            if attempt.replayed:
                return attempt.result
            return attempt.complete(charge(order_id, amount))

    Entering begins the attempt (raising MismatchError, InProgressError, ExpiredError or
    ReplayedFailureError for those answers) and, when it is ours, starts a heartbeat thread.
    complete(value) stores the value and returns what a replay returns; FenceError if the
    attempt was lost. Leaving with an exception aborts the attempt; leaving without complete()
    aborts it and raises RuntimeError (a bug in the block). Arguments as @idempotent's.
    """

    _heartbeat: threading.Thread | None = None
    _stopping: threading.Event | None = None

    def __enter__(self) -> "Idempotency":
        if self._began(self._client.begin(**self._begin_args())):
            self._stopping = threading.Event()
            self._heartbeat = threading.Thread(target=self._beat, daemon=True,
                                               name=f"idemstore heartbeat {self._where()}")
            self._heartbeat.start()
        return self

    def _beat(self) -> None:
        # A failed heartbeat is retried at the next tick: the lease outlasts two by default.
        while not self._stopping.wait(self._heartbeat_ms / 1000):
            try:
                result = self._client.heartbeat(**self._heartbeat_args())
            except errors.Error:
                continue
            if not self._kept(result):
                return

    def _stop_heartbeat(self) -> None:
        if self._heartbeat is not None:
            self._stopping.set()
            self._heartbeat.join()

    def complete(self, value: Any) -> Any:
        """Stores `value` (serialized) as the key's result; returns serializer.loads() of it."""
        data = self._result_bytes(value)
        self._stop_heartbeat()
        return self._completed(self._client.complete(**self._complete_args(data)), data)

    def __exit__(self, exc_type, exc, tb) -> bool:
        if not self._held:
            return False
        self._stop_heartbeat()
        try:
            self._client.abort(**self._abort_args(exc))
        except errors.Error as abort_error:
            return self._after_abort(exc, abort_error)
        return self._after_abort(exc, None)


class AsyncIdempotency(_Attempt):
    """Idempotency for the asyncio client (idemstore.aio.Client):

        async with AsyncIdempotency(client, "orders", order_id) as attempt:
            if attempt.replayed:
                return attempt.result
            return await attempt.complete(await charge(order_id, amount))

    Same contract as Idempotency; the heartbeat is a task on the running loop, and a cancelled
    block aborts the attempt like an exception.
    """

    _heartbeat: asyncio.Task | None = None

    async def __aenter__(self) -> "AsyncIdempotency":
        if self._began(await self._client.begin(**self._begin_args())):
            self._heartbeat = asyncio.get_running_loop().create_task(self._beat())
        return self

    async def _beat(self) -> None:
        while True:
            await asyncio.sleep(self._heartbeat_ms / 1000)
            try:
                result = await self._client.heartbeat(**self._heartbeat_args())
            except errors.Error:
                continue
            if not self._kept(result):
                return

    async def _stop_heartbeat(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            try:
                await self._heartbeat
            except asyncio.CancelledError:
                pass

    async def complete(self, value: Any) -> Any:
        data = self._result_bytes(value)
        await self._stop_heartbeat()
        return self._completed(await self._client.complete(**self._complete_args(data)), data)

    async def __aexit__(self, exc_type, exc, tb) -> bool:
        if not self._held:
            return False
        await self._stop_heartbeat()
        try:
            await self._client.abort(**self._abort_args(exc))
        except errors.Error as abort_error:
            return self._after_abort(exc, abort_error)
        return self._after_abort(exc, None)


# ---- The decorator --------------------------------------------------------------------------


_DEFAULT_FINGERPRINT = object()  # idempotent(fingerprint=...) not given


class _CallIdentity:
    """A call's key and fingerprint, from its arguments bound to the function's signature."""

    def __init__(self, fn: Callable, key, key_args, fingerprint, serializer: Serializer):
        if (key is None) == (key_args is None):
            raise TypeError("idempotent: give exactly one of key= (a function of the call's "
                            "arguments) and key_args= (names of its arguments)")
        self._signature = inspect.signature(fn)
        self._key = key
        self._key_args = tuple(key_args) if key_args is not None else None
        if self._key_args is not None:
            unknown = [n for n in self._key_args if n not in self._signature.parameters]
            if unknown:
                raise TypeError(f"idempotent: key_args names {unknown}, which "
                                f"{fn.__qualname__} does not take")
        self._fingerprint = fingerprint
        self._serializer = serializer
        first = next(iter(self._signature.parameters), None)
        self._receiver = first if first in ("self", "cls") else None

    def __call__(self, args: tuple, kwargs: dict) -> tuple[str | bytes, bytes]:
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        # Key and fingerprint functions take the arguments by name: lambda order_id, **_: ...
        by_name = {}
        for name, value in bound.arguments.items():
            if self._signature.parameters[name].kind == inspect.Parameter.VAR_KEYWORD:
                by_name.update(value)
            else:
                by_name[name] = value
        if self._key_args is not None and len(self._key_args) == 1:
            key = _key_text(by_name[self._key_args[0]])
        elif self._key_args is not None:
            key = json.dumps([_key_part(by_name[n]) for n in self._key_args],
                             separators=(",", ":"))
        else:
            key = _key_text(self._key(**by_name))
        if self._fingerprint is None:
            return key, b""
        if self._fingerprint is not _DEFAULT_FINGERPRINT:
            return key, bytes(self._fingerprint(**by_name))
        # A method's object is who runs it, not what it is asked: left out, like the key.
        rest = {n: v for n, v in by_name.items()
                if n not in (self._key_args or ()) and n != self._receiver}
        try:
            data = self._serializer.dumps(rest)
        except TypeError as e:
            raise TypeError(f"idempotent: the arguments cannot be serialized for the default "
                            f"fingerprint ({e}); pass fingerprint=a function of the call's "
                            "arguments returning bytes, or fingerprint=None") from e
        return key, hashlib.sha256(data).digest()


def _key_text(value: Any) -> str | bytes:
    if isinstance(value, bytes):
        return value
    return _key_part(value)


def _key_part(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise TypeError(f"idempotent: a key (or, with several key_args, each part) must be str or "
                    f"int (a single key may be bytes), not {type(value).__name__}")


def idempotent(client, namespace: str, *, key: Callable[..., Any] | None = None,
               key_args: tuple[str, ...] | list[str] | None = None,
               fingerprint: Any = _DEFAULT_FINGERPRINT, lease_ms: int = 30_000,
               in_progress: str = "wait", wait_ms: int = 10_000,
               serializer: Serializer | None = None, owner: str | None = None,
               heartbeat_ms: int | None = None, ttl_ms: int | None = None):
    """Makes a function run once per key (the module's contract above).

    key: a function returning the key (str, bytes or int), or key_args: names of the arguments
    that make the key (one: its value; several: a JSON list of their values, str or int).
    fingerprint: by default SHA-256 of the serialized arguments not in key_args (all of them
    with key=; a method's self or cls left out), so a reused key with other arguments is a
    MismatchError; a function returning bytes (at most 64); or None for no check. Key and
    fingerprint functions are called with the call's arguments by name, defaults applied:
    key=lambda order_id, **_: order_id.
    lease_ms: how long an attempt holds the key without a heartbeat; heartbeat_ms: how often
    the lease is renewed while the function runs (default lease_ms/3; 0: never).
    in_progress: "wait" (a duplicate waits up to wait_ms for the running attempt's result) or
    "raise" (InProgressError at once). ttl_ms: how long the result is kept (default: the
    namespace's). A coroutine function needs the asyncio client (idemstore.aio.Client), any
    other function the synchronous one.

    One namespace per decorated function, or a key that names the function: two functions
    sharing keys in one namespace would replay each other's results.
    """
    serializer = serializer or JsonSerializer()
    options = dict(lease_ms=lease_ms, in_progress=in_progress, wait_ms=wait_ms,
                   serializer=serializer, owner=owner, heartbeat_ms=heartbeat_ms, ttl_ms=ttl_ms)
    client_is_async = inspect.iscoroutinefunction(getattr(client, "begin", None))

    def decorate(fn: Callable) -> Callable:
        identify = _CallIdentity(fn, key, key_args, fingerprint, serializer)
        if inspect.iscoroutinefunction(fn):
            if not client_is_async:
                raise TypeError(f"idempotent: {fn.__qualname__} is a coroutine function: it "
                                "needs the asyncio client (idemstore.aio.Client)")

            @functools.wraps(fn)
            async def run_async(*args, **kwargs):
                call_key, call_fingerprint = identify(args, kwargs)
                async with AsyncIdempotency(client, namespace, call_key,
                                            fingerprint=call_fingerprint, **options) as attempt:
                    if attempt.replayed:
                        return attempt.result
                    return await attempt.complete(await fn(*args, **kwargs))

            return run_async

        if client_is_async:
            raise TypeError(f"idempotent: {fn.__qualname__} is not a coroutine function: it "
                            "needs the synchronous client (idemstore.Client)")

        @functools.wraps(fn)
        def run(*args, **kwargs):
            call_key, call_fingerprint = identify(args, kwargs)
            with Idempotency(client, namespace, call_key, fingerprint=call_fingerprint,
                             **options) as attempt:
                if attempt.replayed:
                    return attempt.result
                return attempt.complete(fn(*args, **kwargs))

        return run

    return decorate
