"""The values the client returns: outcomes, records, per-op results and errors, server limits.

The numbers are the wire protocol's (net/protocol.fbs; docs/protocol.md section 5), which are the
engine's (engine/include/idem/operation.h): append only, so a newer server may send a number
this module does not know. An unknown record kind is kept and shown (RecordKind(7) is
``RecordKind.UNKNOWN_7``); an unknown outcome makes the codec report that op as an OpError
CORRUPTION, as the C++ client does.
"""
from __future__ import annotations

import dataclasses
import enum
from typing import Optional, Union


class OpType(enum.IntEnum):
    INSERT = 1
    COMPARE_AND_SET = 2
    GET = 3
    DELETE = 4
    BEGIN = 5
    COMPLETE = 6
    ABORT = 7
    HEARTBEAT = 8
    ISSUE_TOKEN = 9
    CONSUME_TOKEN = 10
    LOCK = 11
    RENEW = 12
    UNLOCK = 13
    TRANSITION = 14
    CHECKPOINT = 15


class Outcome(enum.IntEnum):
    """What an op did. Outcomes are answers to branch on, never exceptions."""

    INSERTED = 1
    EXISTS = 2
    APPLIED = 3
    CONDITION_FAILED = 4
    NOT_FOUND = 5
    DELETED = 6
    FOUND = 7
    STARTED = 8
    IN_PROGRESS = 9
    COMPLETED = 10
    MISMATCH = 11
    FENCE_MISMATCH = 12
    RELEASED = 13
    ISSUED = 14
    CONSUMED = 15
    ALREADY_CONSUMED = 16
    ACQUIRED = 17
    HELD = 18
    ALREADY = 19
    ILLEGAL = 20
    WRONG_KIND = 21
    EXPIRED = 22

    def __str__(self) -> str:
        return self.name


class RecordKind(enum.IntEnum):
    """The scheme whose operation started a record's life (docs/protocol.md, "Record kinds")."""

    UNTYPED = 0
    PLAIN = 1
    ATTEMPT = 2
    TOKEN = 3
    LOCK = 4
    STATE_MACHINE = 5

    @classmethod
    def _missing_(cls, value):
        # A kind from a newer server: kept as a pseudo-member, so it can be shown and compared.
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 0xFF:
            member = int.__new__(cls, value)
            member._name_ = f"UNKNOWN_{value}"
            member._value_ = value
            return member
        return None

    def __str__(self) -> str:
        return self.name


class StatusCode(enum.IntEnum):
    """idem::Status::Code: Error.code on the wire, and every idemstore exception's .code."""

    INVALID_ARGUMENT = 1
    NOT_FOUND = 2
    BUSY = 3
    IO_ERROR = 4
    CORRUPTION = 5
    TIMED_OUT = 6
    NOT_SUPPORTED = 7
    SHUTDOWN = 8
    UNAUTHENTICATED = 9
    PERMISSION_DENIED = 10

    def __str__(self) -> str:
        return self.name


@dataclasses.dataclass(frozen=True)
class Record:
    """A stored record as a reply carries it. Times are milliseconds since the Unix epoch on the
    server's clock; expires_at_ms 0 = never, lease_until_ms 0 = no lease, owner "" = none."""

    status: str = ""
    version: int = 0
    fence: int = 0
    fingerprint: bytes = b""
    payload: bytes = b""
    created_ms: int = 0
    updated_ms: int = 0
    expires_at_ms: int = 0
    owner: str = ""
    lease_until_ms: int = 0
    kind: RecordKind = RecordKind.UNTYPED


@dataclasses.dataclass(frozen=True)
class OpResult:
    """One op's answer. `record` is the new, current or removed record (None for NOT_FOUND);
    `fingerprint_matches` is False when an EXISTS/EXPIRED/MISMATCH record's fingerprint differs
    from the op's; `token` is ISSUED's new token (ConsumeToken's key)."""

    outcome: Outcome
    record: Optional[Record] = None
    fingerprint_matches: bool = True
    token: str = ""


@dataclasses.dataclass(frozen=True)
class OpError:
    """One op failed (invalid input, permission, a disk error reading its record); it wrote
    nothing and the other ops of its request stand."""

    code: StatusCode
    message: str

    def __str__(self) -> str:
        return f"{self.code.name}: {self.message}"


OpAnswer = Union[OpResult, OpError]


@dataclasses.dataclass(frozen=True)
class HelloInfo:
    """What the server announced in its HelloReply: its version and the limits a client must
    respect (docs/protocol.md section 3). max_reply_bytes is 0 from servers older than it."""

    protocol_version: int = 0
    server_version: str = ""
    max_frame_bytes: int = 0
    max_batch_ops: int = 0
    max_inflight_requests: int = 0
    max_key_bytes: int = 0
    max_namespace_bytes: int = 0
    max_status_bytes: int = 0
    max_fingerprint_bytes: int = 0
    max_payload_bytes: int = 0
    max_status_set: int = 0
    idle_timeout_ms: int = 0
    max_owner_bytes: int = 0
    max_wait_ms: int = 0
    max_reply_bytes: int = 0
