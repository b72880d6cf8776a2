"""Op builders: one function per operation, named and parametrized as idemctl's commands.

    ops.insert("orders", "o-42", status="PENDING", payload=b"...", ttl_ms=86_400_000)
    ops.begin("charges", key, fingerprint=fp, lease_ms=30_000, wait_ms=5_000)

Each returns an Op, which Client.apply takes in a list (one atomic request, docs/protocol.md
section 4) and the single-op methods build for you. Keys, payloads and fingerprints are bytes
(a str is encoded as UTF-8); namespaces, statuses and owners are str.

Durations are integer milliseconds named *_ms. None (the default) leaves the field out: the
namespace's default applies (never send 0 for "default": an explicit 0 lease or TTL is refused).
ttl_ms=-1 is forever, where the namespace allows it. wait_ms (begin, lock) waits up to that long
for the key's holder to let go; the client then waits that much longer for the answer.

What each op reads and what it may answer: docs/protocol.md, section 4's table.
"""
from __future__ import annotations

import dataclasses
from typing import Iterable, Optional, Sequence, Tuple, Union

from .types import OpType

BytesLike = Union[bytes, bytearray, memoryview, str]

FOREVER = -1  # ttl_ms: the record never expires (the namespace must allow it)


@dataclasses.dataclass(frozen=True)
class Condition:
    """Every part given must hold: the status is one of status_in (empty: any), the version
    equals `version`, the fence equals `fence`."""

    status_in: Tuple[str, ...] = ()
    version: Optional[int] = None
    fence: Optional[int] = None

    def empty(self) -> bool:
        return not self.status_in and self.version is None and self.fence is None


@dataclasses.dataclass(frozen=True)
class Update:
    """What compare-and-set changes; None keeps the field (b"" sets an empty payload)."""

    status: Optional[str] = None
    payload: Optional[bytes] = None
    ttl_ms: Optional[int] = None

    def empty(self) -> bool:
        return self.status is None and self.payload is None and self.ttl_ms is None


@dataclasses.dataclass(frozen=True)
class Op:
    """One operation as the wire carries it. Build it with the functions below; a field left
    at its default is not sent."""

    type: OpType
    ns: str
    key: bytes = b""
    status: str = ""
    payload: bytes = b""
    fingerprint: bytes = b""
    ttl_ms: Optional[int] = None
    condition: Condition = Condition()
    update: Update = Update()
    owner: str = ""
    lease_ms: Optional[int] = None
    wait_ms: Optional[int] = None


def _bytes(value: Optional[BytesLike], name: str) -> bytes:
    if value is None:
        return b""
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"{name} must be bytes or str, not {type(value).__name__}")


def _ms(value: Optional[int], name: str) -> Optional[int]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int of milliseconds or None, not {value!r}")
    if not -(2**63) <= value < 2**63:
        raise ValueError(f"{name} {value} does not fit a 64-bit integer")
    return value


def _fence(value: int, name: str = "fence") -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, not {value!r}")
    if not 0 <= value < 2**64:
        raise ValueError(f"{name} {value} is not an unsigned 64-bit integer")
    return value


def _condition(expect_status: Union[None, str, Iterable[str]], expect_version: Optional[int],
               expect_fence: Optional[int]) -> Condition:
    if expect_status is None:
        statuses: Tuple[str, ...] = ()
    elif isinstance(expect_status, str):
        statuses = (expect_status,)
    else:
        statuses = tuple(expect_status)
    return Condition(
        status_in=statuses,
        version=None if expect_version is None else _fence(expect_version, "expect_version"),
        fence=None if expect_fence is None else _fence(expect_fence, "expect_fence"))


def insert(ns: str, key: BytesLike, *, status: str, payload: BytesLike = b"",
           fingerprint: BytesLike = b"", ttl_ms: Optional[int] = None) -> Op:
    """Insert-if-absent: INSERTED, EXISTS (see fingerprint_matches), EXPIRED, ILLEGAL,
    WRONG_KIND."""
    return Op(OpType.INSERT, ns, _bytes(key, "key"), status=status,
              payload=_bytes(payload, "payload"), fingerprint=_bytes(fingerprint, "fingerprint"),
              ttl_ms=_ms(ttl_ms, "ttl_ms"))


def get(ns: str, key: BytesLike) -> Op:
    """FOUND, NOT_FOUND, EXPIRED."""
    return Op(OpType.GET, ns, _bytes(key, "key"))


def cas(ns: str, key: BytesLike, *, expect_status: Union[None, str, Sequence[str]] = None,
        expect_version: Optional[int] = None, expect_fence: Optional[int] = None,
        status: Optional[str] = None, payload: Optional[BytesLike] = None,
        ttl_ms: Optional[int] = None) -> Op:
    """Compare-and-set: when the condition holds, sets the given fields (APPLIED, version + 1;
    nothing given is a "touch"); else CONDITION_FAILED. Also ILLEGAL, NOT_FOUND, WRONG_KIND."""
    return Op(OpType.COMPARE_AND_SET, ns, _bytes(key, "key"),
              condition=_condition(expect_status, expect_version, expect_fence),
              update=Update(status=status,
                            payload=None if payload is None else _bytes(payload, "payload"),
                            ttl_ms=_ms(ttl_ms, "ttl_ms")))


def delete(ns: str, key: BytesLike, *, expect_status: Union[None, str, Sequence[str]] = None,
           expect_version: Optional[int] = None, expect_fence: Optional[int] = None) -> Op:
    """Conditional delete: DELETED (the removed record), CONDITION_FAILED, NOT_FOUND."""
    return Op(OpType.DELETE, ns, _bytes(key, "key"),
              condition=_condition(expect_status, expect_version, expect_fence))


def begin(ns: str, key: BytesLike, *, fingerprint: BytesLike = b"", lease_ms: Optional[int] = None,
          wait_ms: Optional[int] = None, owner: str = "", ttl_ms: Optional[int] = None) -> Op:
    """Starts an attempt: STARTED (record.fence is yours), IN_PROGRESS, COMPLETED (record.payload
    is the stored response), MISMATCH, EXPIRED, WRONG_KIND."""
    return Op(OpType.BEGIN, ns, _bytes(key, "key"), fingerprint=_bytes(fingerprint, "fingerprint"),
              owner=owner, lease_ms=_ms(lease_ms, "lease_ms"), wait_ms=_ms(wait_ms, "wait_ms"),
              ttl_ms=_ms(ttl_ms, "ttl_ms"))


def complete(ns: str, key: BytesLike, *, fence: int, payload: BytesLike = b"",
             ttl_ms: Optional[int] = None, status: str = "") -> Op:
    """Stores the response (payload) for replay: APPLIED, ALREADY, FENCE_MISMATCH, NOT_FOUND,
    WRONG_KIND. status "" is COMPLETED."""
    return Op(OpType.COMPLETE, ns, _bytes(key, "key"), status=status,
              payload=_bytes(payload, "payload"), ttl_ms=_ms(ttl_ms, "ttl_ms"),
              condition=Condition(fence=_fence(fence)))


def abort(ns: str, key: BytesLike, *, fence: int, payload: BytesLike = b"") -> Op:
    """Releases the attempt so a retry can run: RELEASED, FENCE_MISMATCH, CONDITION_FAILED,
    NOT_FOUND, WRONG_KIND."""
    return Op(OpType.ABORT, ns, _bytes(key, "key"), payload=_bytes(payload, "payload"),
              condition=Condition(fence=_fence(fence)))


def heartbeat(ns: str, key: BytesLike, *, fence: int, lease_ms: Optional[int] = None) -> Op:
    """Extends the attempt's lease: APPLIED, FENCE_MISMATCH, NOT_FOUND, WRONG_KIND."""
    return Op(OpType.HEARTBEAT, ns, _bytes(key, "key"), lease_ms=_ms(lease_ms, "lease_ms"),
              condition=Condition(fence=_fence(fence)))


def checkpoint(ns: str, key: BytesLike, *, fence: int, payload: BytesLike = b"") -> Op:
    """A recovery point: the payload replaces the attempt's (it stays in progress): APPLIED,
    ALREADY, FENCE_MISMATCH, NOT_FOUND, WRONG_KIND."""
    return Op(OpType.CHECKPOINT, ns, _bytes(key, "key"), payload=_bytes(payload, "payload"),
              condition=Condition(fence=_fence(fence)))


def issue_token(ns: str, *, ttl_ms: Optional[int] = None, payload: BytesLike = b"") -> Op:
    """ISSUED, with the new token in OpResult.token; the payload is what it authorizes."""
    return Op(OpType.ISSUE_TOKEN, ns, payload=_bytes(payload, "payload"),
              ttl_ms=_ms(ttl_ms, "ttl_ms"))


def consume_token(ns: str, token: BytesLike) -> Op:
    """CONSUMED once, then ALREADY_CONSUMED (both carry the payload); NOT_FOUND, WRONG_KIND."""
    return Op(OpType.CONSUME_TOKEN, ns, _bytes(token, "token"))


def lock(ns: str, key: BytesLike, *, owner: str, lease_ms: Optional[int] = None,
         wait_ms: Optional[int] = None) -> Op:
    """ACQUIRED (record.fence is yours), HELD (record.owner holds it), WRONG_KIND."""
    return Op(OpType.LOCK, ns, _bytes(key, "key"), owner=owner, lease_ms=_ms(lease_ms, "lease_ms"),
              wait_ms=_ms(wait_ms, "wait_ms"))


def renew(ns: str, key: BytesLike, *, fence: int, lease_ms: Optional[int] = None) -> Op:
    """APPLIED, FENCE_MISMATCH, NOT_FOUND, WRONG_KIND."""
    return Op(OpType.RENEW, ns, _bytes(key, "key"), lease_ms=_ms(lease_ms, "lease_ms"),
              condition=Condition(fence=_fence(fence)))


def unlock(ns: str, key: BytesLike, *, fence: int) -> Op:
    """RELEASED, FENCE_MISMATCH, NOT_FOUND, WRONG_KIND."""
    return Op(OpType.UNLOCK, ns, _bytes(key, "key"), condition=Condition(fence=_fence(fence)))


def transition(ns: str, key: BytesLike, to_status: str, *, expect_version: Optional[int] = None,
               payload: Optional[BytesLike] = None) -> Op:
    """Moves a state machine along an edge of its graph: APPLIED, ALREADY, ILLEGAL,
    CONDITION_FAILED, NOT_FOUND, WRONG_KIND. payload None keeps the record's."""
    return Op(OpType.TRANSITION, ns, _bytes(key, "key"), status=to_status,
              condition=_condition(None, expect_version, None),
              update=Update(payload=None if payload is None else _bytes(payload, "payload")))


def longest_wait_ms(ops: Iterable[Op]) -> int:
    """The longest wait_ms among `ops` (0 without one): the server may hold the request's answer
    that long, so a client waits that much longer than its timeout."""
    return max((op.wait_ms for op in ops if op.wait_ms and op.wait_ms > 0), default=0)
