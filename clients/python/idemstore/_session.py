"""What idemstore.Client and aio.Client share: the settings their constructors check, when a
failed connection attempt may be made again, and which error each failure of a connection
becomes (client.py's module comment states the contract). The I/O is each client's own:
sockets and threads in client.py, asyncio streams in aio.py.
"""
from __future__ import annotations

import itertools
import ssl
import time
from typing import Any, Optional, Tuple, Union

from . import _codec, errors
from .tls import TlsOptions, client_context, server_hostname
from .types import HelloInfo, StatusCode

BACKOFF_FIRST_S = 0.1
BACKOFF_MAX_S = 2.0
REFUSED_TOKEN_RETRY_S = 60.0  # ClientOptions::kRefusedTokenRetryMs


def split_address(address: str) -> Tuple[str, int]:
    """"HOST:PORT" or "[IPv6]:PORT" -> (host, port); ValueError for anything else."""
    host, sep, port = address.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f'address "{address}" is not HOST:PORT')
    return host, int(port)


def checked_token(token: Optional[str]) -> Optional[str]:
    """The token, once it is known to be sendable: a str of UTF-8 (the wire's string)."""
    if token is None or isinstance(token, bytes):
        return token
    if not isinstance(token, str):
        raise TypeError(f"token must be a str or None, not {type(token).__name__}")
    try:
        token.encode("utf-8")
    except UnicodeEncodeError as e:
        raise errors.Error(StatusCode.INVALID_ARGUMENT,
                           f"the token cannot be sent: it is not UTF-8 ({e.reason} at "
                           f"{e.start})") from None
    return token


class Session:
    """A client's settings, checked when it is made (bad ones raise before any connection), and
    the state of its connection attempts. The constructor ends with _start(), the subclass's
    own setup (the synchronous client connects there). The subclass does the I/O, and calls
    _check_attempt, _attempt_failed and _attempt_succeeded under the lock that lets one
    connection attempt run at a time, which guards the backoff state."""

    def __init__(self, address: str = "127.0.0.1:7878", *, timeout: Optional[float] = 5.0,
                 token: Optional[str] = None,
                 tls: Union[TlsOptions, ssl.SSLContext, None] = None,
                 connect_timeout: Optional[float] = None,
                 client_name: str = _codec.CLIENT_NAME):
        self.address = address
        self.timeout = timeout
        self.connect_timeout = timeout if connect_timeout is None else connect_timeout
        self._host, self._port = split_address(address)
        self._token = checked_token(token)
        self._client_name = client_name
        self._ssl_context = client_context(tls)
        self._server_name = server_hostname(tls, self._host) if self._ssl_context else None
        # Request ids are never reused, so a late answer cannot be taken for another call's.
        self._ids = itertools.count(1)
        self._conn: Any = None  # the subclass's connection; replaced under the connect lock
        self._closed = False
        self._backoff_s = BACKOFF_FIRST_S
        self._next_attempt_at = 0.0  # monotonic
        self._last_error: Optional[errors.Error] = None  # of the last attempt, if it failed
        self._server_info: Optional[HelloInfo] = None
        self._max_frame_bytes = 0  # the server's, from its HelloReply
        self._start()

    def _start(self) -> None:
        raise NotImplementedError

    @property
    def server_info(self) -> Optional[HelloInfo]:
        """What the server announced in its HelloReply, on the latest connection (None before
        the first: aio.Client connects at its first call)."""
        return self._server_info

    def _call_timeout(self, extra_wait_s: float) -> Optional[float]:
        """How long a call waits for its answer: `timeout`, plus its ops' longest wait."""
        return None if self.timeout is None else self.timeout + extra_wait_s

    def _check_frame_size(self, frame: bytes) -> None:
        """Raises INVALID_ARGUMENT (nothing sent) for a request the server would refuse by
        ending the connection: larger than the max_frame_bytes of its HelloReply."""
        if self._max_frame_bytes and len(frame) - 4 > self._max_frame_bytes:
            raise errors.Error(StatusCode.INVALID_ARGUMENT,
                               f"request frame of {len(frame) - 4} bytes exceeds the "
                               f"server's max_frame_bytes {self._max_frame_bytes}")

    def _take_hello(self, info: HelloInfo) -> None:
        self._server_info = info
        self._max_frame_bytes = info.max_frame_bytes

    def _check_attempt(self) -> None:
        """Raises errors.ConnectionError (nothing sent) when no connection attempt may be made
        now: the client is closed, or the last attempt failed and its backoff has not passed."""
        if self._closed:
            raise errors.ConnectionError("client closed", StatusCode.SHUTDOWN)
        wait = self._next_attempt_at - time.monotonic()
        if self._last_error is not None and wait > 0:
            raise errors.ConnectionError(
                f"{self._last_error.message}; next attempt in {int(wait * 1000) + 1} ms",
                self._last_error.code)

    def _attempt_failed(self, e: errors.Error) -> None:
        """Backs off: 100 ms doubling to 2 s, and at least 60 s after a refused token (each
        refusal counts against the client's address at the server)."""
        retry_s = self._backoff_s
        if e.code == StatusCode.UNAUTHENTICATED:
            retry_s = max(retry_s, REFUSED_TOKEN_RETRY_S)
        self._next_attempt_at = time.monotonic() + retry_s
        self._backoff_s = min(self._backoff_s * 2, BACKOFF_MAX_S)
        self._last_error = e

    def _attempt_succeeded(self) -> None:
        self._backoff_s = BACKOFF_FIRST_S
        self._last_error = None


def connect_failure(e: OSError, address: str,
                    connect_timeout: Optional[float]) -> errors.Error:
    """The error a connection attempt raises for the OSError it failed with (TimeoutError and
    ssl.SSLError are OSErrors): nothing was sent."""
    if isinstance(e, TimeoutError):
        return errors.TimeoutError(f"connect to {address}: no handshake within "
                                   f"{connect_timeout:g} s")
    if isinstance(e, ssl.SSLCertVerificationError):
        return errors.ConnectionError(f"TLS handshake with {address} failed: certificate "
                                      f"verify failed ({e.verify_message})")
    if isinstance(e, ssl.SSLError):
        return errors.ConnectionError(f"TLS handshake with {address} failed: {e.reason or e}")
    return errors.ConnectionError(f"connect to {address}: {e.strerror or e}")


def connection_ended(reply: _codec.Reply, address: str) -> errors.EffectUnknownError:
    """What a frame with request id 0 raises in the calls in flight: the server's
    connection-level error, after which it closes (docs/protocol.md section 5). Anything else
    with id 0 is the server's mistake, and ends the connection as well."""
    if reply.kind != "error":
        return errors.EffectUnknownError(
            f"the server {address} sent a frame with id 0 that is not an error")
    e = reply.value
    return errors.EffectUnknownError(
        f"the server {address} ended the connection: {e.code.name}: {e.message}", e.code)


def reader_failure(e: BaseException, address: str) -> errors.EffectUnknownError:
    """What the calls waiting on a connection raise when its reader stops on `e`: a response
    that does not decode (CORRUPTION), the server's end of the connection, an I/O error, or
    else a failure of the client's own (which the reader raises again once its callers have
    been failed)."""
    if isinstance(e, errors.ProtocolError):
        return errors.EffectUnknownError(f"connection to {address} dropped: {e.message}",
                                         StatusCode.CORRUPTION)
    if isinstance(e, errors.EffectUnknownError):
        return e
    if isinstance(e, errors.Error):
        return errors.EffectUnknownError(e.message, e.code)
    if isinstance(e, OSError):  # ssl.SSLError included
        return errors.EffectUnknownError(f"read from {address}: {e}")
    return errors.EffectUnknownError(f"reader of {address} failed: {e!r}")
