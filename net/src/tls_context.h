// TLS contexts built from the operator's files: the server's (TlsOptions, idem/server.h) and the
// client's (ClientTlsOptions, idem/client.h), with one policy for both ends:
//  - TLS 1.2 at least; 1.3 when both ends have it (OpenSSL prefers the highest version);
//  - for TLS 1.2 only ECDHE key exchange with AEAD ciphers (AES-GCM, ChaCha20-Poly1305), the
//    server's preference first; TLS 1.3's suites are all AEAD;
//  - no compression (CRIME), no renegotiation (a peer-driven CPU cost and an old attack surface).
//
// Errors name the file and OpenSSL's reason: IOError when a file cannot be read at all,
// InvalidArgument when it holds no usable certificate or key, or the key does not belong to the
// certificate. Nothing is half-built: on an error the caller keeps what it had (Server::Reload).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded

#include <boost/asio/ssl/context.hpp>
#include <boost/system/error_code.hpp>

#include "idem/client.h"
#include "idem/result.h"
#include "idem/server.h"

namespace idem {

// The server's context: the certificate chain and key; with client_ca_file, every client must
// present a certificate signed by one of those CAs (mutual TLS).
Result<std::shared_ptr<boost::asio::ssl::context>> MakeServerTlsContext(const TlsOptions& options);

// The client's context: trusts ca_file, or the system's store when it is empty; presents
// cert_file/key_file when given. The server's name is checked per connection
// (ConfigureClientTls).
Result<std::shared_ptr<boost::asio::ssl::context>> MakeClientTlsContext(
    const ClientTlsOptions& options);

// Prepares a client connection's SSL object to check that the server's
// certificate is for `server_name` — a DNS name (also sent as SNI) or an IP address (matched
// against the certificate's IP SANs only, and not sent: SNI carries no addresses).
// InvalidArgument when OpenSSL refuses the name.
Status ConfigureClientTls(SSL* ssl, std::string_view server_name);

// Why a TLS operation failed, for messages: OpenSSL's reason ("certificate verify failed"),
// followed by the certificate check's reason when there is one ("(certificate has expired)").
// `ssl` (may be null) supplies the check's result.
std::string TlsErrorReason(const boost::system::error_code& ec, const SSL* ssl);

}  // namespace idem
