"""idemstore: the Python client of idemstored's binary protocol (docs/protocol.md).

    import idemstore
    with idemstore.Client("127.0.0.1:7878") as store:
        r = store.insert("orders", "o-42", status="PENDING")
        if r.outcome is idemstore.Outcome.EXISTS: ...

Outcomes (EXISTS, IN_PROGRESS, MISMATCH...) are values of OpResult.outcome; failures are
exceptions (idemstore.errors). Client is thread-safe and pipelined; idemstore.aio.Client is the
asyncio client; @idempotent runs a function once per key.
"""
from . import errors, ops
from .client import Client
from .idempotent import (AsyncIdempotency, ExpiredError, Idempotency, JsonSerializer,
                         ReplayedFailureError, idempotent)
from .tls import TlsOptions
from .types import HelloInfo, OpError, OpResult, OpType, Outcome, Record, RecordKind, StatusCode

__version__ = "0.1.0"

__all__ = [
    "Client", "TlsOptions", "Outcome", "RecordKind", "StatusCode", "OpType", "Record", "OpResult",
    "OpError", "HelloInfo", "ops", "errors", "__version__",
    "idempotent", "Idempotency", "AsyncIdempotency", "JsonSerializer", "ExpiredError",
    "ReplayedFailureError",
]
