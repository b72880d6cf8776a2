"""The exceptions idemstore raises. Every one carries .code (types.StatusCode) and .message.

What a caller may assume about the effect of the call that raised:

- ConnectionError: nothing was sent (the client could not connect, or is backing off after a
  failed attempt); safe to retry.
- EffectUnknownError: the connection ended while the call was in flight; the call may or may not
  have been applied and is never resent by the client. Retrying is safe for idempotency
  operations: the answer tells (an Insert answers EXISTS, a Begin COMPLETED or IN_PROGRESS).
- TimeoutError: no answer within the timeout; the call may have been applied (its late answer
  is dropped).
- ServerError: the server answered with an error (a whole request's, or a single op's from the
  single-op methods): BUSY, UNAUTHENTICATED, PERMISSION_DENIED, INVALID_ARGUMENT... docs/
  protocol.md section 5 says for each whether anything took effect.
- ProtocolError: the server's bytes do not decode (CORRUPTION); the connection is dropped.
- FenceError, MismatchError, InProgressError: raised by @idempotent (idempotent.py).
"""
from __future__ import annotations

import builtins

from .types import StatusCode


class Error(Exception):
    """Base of every idemstore exception."""

    def __init__(self, code: StatusCode, message: str):
        super().__init__(f"{StatusCode(code).name}: {message}")
        self.code = StatusCode(code)
        self.message = message


class ConnectionError(Error, builtins.ConnectionError):
    """Could not connect, or not connected and backing off: the call was not sent."""

    def __init__(self, message: str, code: StatusCode = StatusCode.IO_ERROR):
        super().__init__(code, message)


class EffectUnknownError(Error):
    """The connection ended while the call was in flight: it may have been applied. Not resent."""

    def __init__(self, message: str, code: StatusCode = StatusCode.IO_ERROR):
        super().__init__(code, message)


class TimeoutError(Error, builtins.TimeoutError):
    """No answer in time; the call may have been applied."""

    def __init__(self, message: str):
        super().__init__(StatusCode.TIMED_OUT, message)


class ServerError(Error):
    """An error the server answered: for a whole request, or for one op (single-op methods)."""


class ProtocolError(Error):
    """Bytes from the server that do not decode as the protocol says (CORRUPTION)."""

    def __init__(self, message: str):
        super().__init__(StatusCode.CORRUPTION, message)


class FenceError(Error):
    """@idempotent: another attempt took the work over (FENCE_MISMATCH); this result is not
    stored."""


class MismatchError(Error):
    """@idempotent: the key was used before with a different fingerprint (MISMATCH)."""


class InProgressError(Error):
    """@idempotent: another attempt holds the key (IN_PROGRESS), after the wait if any."""
