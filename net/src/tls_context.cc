#include "tls_context.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <boost/asio/ip/address.hpp>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

namespace idem {
namespace {

namespace ssl = boost::asio::ssl;

// TLS 1.2's suites: forward secrecy (ECDHE) and AEAD only, the strongest first.
constexpr char kTls12Ciphers[] =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";

// The oldest error OpenSSL queued (the cause; later ones say where it surfaced), and clears the
// queue so that it does not leak into the next call's message.
std::string TakeOpenSslReason() {
  const unsigned long first = ERR_get_error();
  ERR_clear_error();
  if (first == 0) return "unknown OpenSSL error";
  const char* reason = ERR_reason_error_string(first);
  return reason != nullptr ? reason : "OpenSSL error " + std::to_string(first);
}

// IOError when `path` cannot be opened: OpenSSL's own message for that is vaguer ("system lib").
Status CheckReadable(std::string_view what, const std::string& path) {
  if (path.empty()) return Status::InvalidArgument(std::string(what) + ": no file given");
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) {
    return Status::IOError("cannot read " + std::string(what) + " '" + path +
                           "': " + std::strerror(errno));
  }
  std::fclose(f);
  return Status::Ok();
}

Status Unusable(std::string_view what, const std::string& path) {
  return Status::InvalidArgument(std::string(what) + " '" + path + "': " + TakeOpenSslReason());
}

// The certificate chain and its key; the key must belong to the certificate.
Status LoadIdentity(SSL_CTX* ctx, const std::string& cert_file, const std::string& key_file,
                    std::string_view cert_what, std::string_view key_what) {
  if (Status s = CheckReadable(cert_what, cert_file); !s.ok()) return s;
  if (Status s = CheckReadable(key_what, key_file); !s.ok()) return s;
  if (SSL_CTX_use_certificate_chain_file(ctx, cert_file.c_str()) != 1) {
    return Unusable(cert_what, cert_file);
  }
  // Loading the key also checks it against the certificate: a mismatch fails here already.
  if (SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM) != 1 &&
      ERR_GET_REASON(ERR_peek_error()) != X509_R_KEY_VALUES_MISMATCH) {
    return Unusable(key_what, key_file);
  }
  if (SSL_CTX_check_private_key(ctx) != 1 || ERR_peek_error() != 0) {
    return Status::InvalidArgument(std::string(key_what) + " '" + key_file + "' does not match " +
                                   std::string(cert_what) + " '" + cert_file +
                                   "': " + TakeOpenSslReason());
  }
  return Status::Ok();
}

Status LoadTrustedCas(SSL_CTX* ctx, const std::string& ca_file, std::string_view what) {
  if (Status s = CheckReadable(what, ca_file); !s.ok()) return s;
  if (SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr) != 1) {
    return Unusable(what, ca_file);
  }
  return Status::Ok();
}

Status ApplyPolicy(SSL_CTX* ctx) {
  SSL_CTX_set_options(
      ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1 ||
      SSL_CTX_set_cipher_list(ctx, kTls12Ciphers) != 1) {
    return Status::InvalidArgument("TLS policy refused by OpenSSL: " + TakeOpenSslReason());
  }
  return Status::Ok();
}

}  // namespace

Result<std::shared_ptr<ssl::context>> MakeServerTlsContext(const TlsOptions& options) {
  ERR_clear_error();
  auto context = std::make_shared<ssl::context>(ssl::context::tls_server);
  SSL_CTX* ctx = context->native_handle();
  if (Status s = ApplyPolicy(ctx); !s.ok()) return s;
  if (Status s = LoadIdentity(ctx, options.cert_file, options.key_file, "TLS certificate file",
                              "TLS key file");
      !s.ok()) {
    return s;
  }
  if (!options.client_ca_file.empty()) {
    const std::string& ca_file = options.client_ca_file;
    if (Status s = LoadTrustedCas(ctx, ca_file, "TLS client CA file"); !s.ok()) return s;
    // The CAs named in the CertificateRequest, so a client with several certificates picks one
    // they signed.
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(ca_file.c_str());
    if (names == nullptr) return Unusable("TLS client CA file", ca_file);
    SSL_CTX_set_client_CA_list(ctx, names);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  // Resumed sessions skip the client certificate check; OpenSSL refuses to resume one without
  // a context id, failing the handshake instead of falling back to a full one.
  static constexpr unsigned char kSessionIdContext[] = "idemstored";
  SSL_CTX_set_session_id_context(ctx, kSessionIdContext, sizeof(kSessionIdContext) - 1);
  return context;
}

Result<std::shared_ptr<ssl::context>> MakeClientTlsContext(const ClientTlsOptions& options) {
  ERR_clear_error();
  auto context = std::make_shared<ssl::context>(ssl::context::tls_client);
  SSL_CTX* ctx = context->native_handle();
  if (Status s = ApplyPolicy(ctx); !s.ok()) return s;
  if (options.ca_file.empty()) {
    if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
      return Status::IOError("cannot load the system's trusted CAs: " + TakeOpenSslReason());
    }
  } else if (Status s = LoadTrustedCas(ctx, options.ca_file, "TLS CA file"); !s.ok()) {
    return s;
  }
  if (options.cert_file.empty() != options.key_file.empty()) {
    return Status::InvalidArgument(
        "TLS client certificate and key: give both (mutual TLS) or neither");
  }
  if (!options.cert_file.empty()) {
    if (Status s = LoadIdentity(ctx, options.cert_file, options.key_file,
                                "TLS client certificate file", "TLS client key file");
        !s.ok()) {
      return s;
    }
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  return context;
}

Status ConfigureClientTls(SSL* ssl, std::string_view server_name) {
  const std::string name(server_name);
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  boost::system::error_code not_an_address;
  boost::asio::ip::make_address(name, not_an_address);
  if (!not_an_address) {
    if (X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str()) != 1) {
      return Status::InvalidArgument("TLS server name '" + name + "': " + TakeOpenSslReason());
    }
    return Status::Ok();
  }
  X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  if (X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size()) != 1 ||
      SSL_set_tlsext_host_name(ssl, name.c_str()) != 1) {
    return Status::InvalidArgument("TLS server name '" + name + "': " + TakeOpenSslReason());
  }
  return Status::Ok();
}

std::string TlsErrorReason(const boost::system::error_code& ec, const SSL* ssl) {
  std::string reason;
  if (ec.category() == boost::asio::error::get_ssl_category()) {
    const char* text = ERR_reason_error_string(static_cast<unsigned long>(ec.value()));
    reason = text != nullptr ? text : ec.message();
  } else if (ec == boost::asio::error::eof || ec == boost::asio::ssl::error::stream_truncated) {
    reason = "the peer closed the connection (not a TLS endpoint?)";
  } else {
    reason = ec.message();
  }
  if (ssl != nullptr) {
    const long verify = SSL_get_verify_result(ssl);
    if (verify != X509_V_OK) {
      reason += " (" + std::string(X509_verify_cert_error_string(verify)) + ")";
    }
  }
  return reason;
}

}  // namespace idem
