"""TLS to idemstored (a server started with --tls-cert): the client side of docs/security.md.

The server's certificate chain and name are always verified (SNI sent; an IP address is matched
against the certificate's IP addresses), with TLS 1.2 or later, as the C++ client does
(ClientTlsOptions in net/include/idem/client.h).
"""
from __future__ import annotations

import dataclasses
import ssl
from typing import Optional

from . import errors
from .types import StatusCode


@dataclasses.dataclass(frozen=True)
class TlsOptions:
    ca_file: str = ""      # PEM CA certificates to trust; "": the system's trust store
    cert_file: str = ""    # mutual TLS: the client's certificate chain (PEM), with key_file
    key_file: str = ""     # mutual TLS: its private key (PEM)
    server_name: str = ""  # the name the certificate must carry; "": the address's host

    def context(self) -> ssl.SSLContext:
        """The SSLContext these options describe. Raises errors.Error INVALID_ARGUMENT
        naming a file that cannot be used (the C++ client's InvalidArgument)."""
        if bool(self.cert_file) != bool(self.key_file):
            raise errors.Error(StatusCode.INVALID_ARGUMENT,
                               "TLS: cert_file and key_file go together (mutual TLS)")
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies the chain and the host name
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        if self.ca_file:
            _load(self.ca_file, lambda: ctx.load_verify_locations(cafile=self.ca_file))
        else:
            ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
        if self.cert_file:
            _load(f"{self.cert_file} and {self.key_file}",
                  lambda: ctx.load_cert_chain(self.cert_file, self.key_file))
        return ctx


def _load(what: str, load) -> None:
    try:
        load()
    except (OSError, ssl.SSLError) as e:
        reason = getattr(e, "reason", None) or getattr(e, "strerror", None) or str(e)
        raise errors.Error(StatusCode.INVALID_ARGUMENT, f"TLS: cannot use {what}: {reason}") \
            from None


def client_context(tls: "TlsOptions | ssl.SSLContext | None") -> Optional[ssl.SSLContext]:
    """The SSLContext for Client(tls=...): built from TlsOptions, or the caller's own context
    taken as is (its verification settings are the caller's), or None for plain TCP."""
    if tls is None or isinstance(tls, ssl.SSLContext):
        return tls
    if isinstance(tls, TlsOptions):
        return tls.context()
    raise TypeError(f"tls must be TlsOptions, ssl.SSLContext or None, not {type(tls).__name__}")


def server_hostname(tls: "TlsOptions | ssl.SSLContext | None", host: str) -> str:
    """The name sent as SNI and checked against the certificate."""
    if isinstance(tls, TlsOptions) and tls.server_name:
        return tls.server_name
    return host
