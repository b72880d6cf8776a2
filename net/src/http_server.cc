#include "http_server.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <optional>
#include <type_traits>
#include <vector>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "listen_socket.h"
#include "tls_context.h"

namespace idem {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// Stream: beast::tcp_stream (plain) or beast::ssl_stream over one (TLS). Every member is touched
// on its strand only (the stream's executor).
template <typename Stream>
class BasicHttpConnection final : public ListenedConnection,
                                  public std::enable_shared_from_this<BasicHttpConnection<Stream>> {
 public:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

  BasicHttpConnection(tcp::socket socket, HttpServer* server) requires(!kTls)
      : peer_(DescribePeer(socket)),
        stream_(std::move(socket)),
        server_(server),
        buffer_(BufferLimit(server)) {}
  BasicHttpConnection(tcp::socket socket, HttpServer* server,
                      std::shared_ptr<asio::ssl::context> tls) requires(kTls)
      : peer_(DescribePeer(socket)),
        tls_(std::move(tls)),
        stream_(std::move(socket), *tls_),
        server_(server),
        buffer_(BufferLimit(server)) {}

  void Start() override {
    asio::dispatch(stream_.get_executor(), [self = this->shared_from_this()] {
      self->Handshake([self] { self->DoRead(); });
    });
  }

  void Reject() override {
    std::string detail = "server has " + std::to_string(server_->options_.max_connections) +
                         " HTTP connections open (max_connections); retry later";
    asio::dispatch(stream_.get_executor(), [self = this->shared_from_this(), detail] {
      self->Handshake([self, detail] {
        self->keep_alive_ = false;
        self->Send(ProblemResponse(http::status::service_unavailable, Status::Code::kBusy, detail));
      });
    });
  }

  void Drain() override {
    asio::dispatch(stream_.get_executor(), [self = this->shared_from_this()] {
      self->draining_ = true;
      if (!self->busy_) self->CloseNow();
    });
  }
  void Close() override {
    asio::dispatch(stream_.get_executor(), [self = this->shared_from_this()] { self->CloseNow(); });
  }

 private:
  static constexpr size_t kReadChunk = 64 * 1024;
  static constexpr int64_t kLingerMs = 1'000;

  // The buffer holds a request's headers and whatever of the body and pipelined requests one
  // read brings: its bound is the header limit plus one read's worth.
  static size_t BufferLimit(const HttpServer* server) {
    return server->options_.max_header_bytes + kReadChunk;
  }

  std::chrono::milliseconds idle() const {
    return std::chrono::milliseconds(server_->options_.idle_timeout_ms);
  }
  // The TCP stream: its deadline and socket, under TLS too.
  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(stream_); }

  // TLS: the handshake, bounded by handshake_timeout_ms, then `next`; plain: `next` now.
  template <typename Next>
  void Handshake(Next next) {
    if constexpr (!kTls) {
      next();
    } else {
      const HttpServer::Tls& tls = *server_->tls_;
      Lowest().expires_after(std::chrono::milliseconds(tls.handshake_timeout_ms));
      stream_.async_handshake(
          asio::ssl::stream_base::server,
          [self = this->shared_from_this(), next = std::move(next)](beast::error_code ec) {
            if (self->closed_) return;
            if (ec) {
              self->OnHandshakeFailed(ec);
              return;
            }
            next();
          });
    }
  }

  void OnHandshakeFailed(beast::error_code ec) requires(kTls) {
    const HttpServer::Tls& tls = *server_->tls_;
    const bool timed_out = ec == beast::error::timeout;
    const std::string reason = timed_out ? "no handshake within " +
                                               std::to_string(tls.handshake_timeout_ms) +
                                               " ms (auth_timeout_ms)"
                                         : TlsErrorReason(ec, stream_.native_handle());
    if (server_->metrics_) {
      if (timed_out) {
        server_->metrics_->ConnectionTimedOut();
      } else {
        server_->metrics_->TlsHandshakeFailed();
      }
    }
    if (tls.peer_log) {
      LogRecord record(LogLevel::kWarn, timed_out ? "auth_timeout" : "tls_handshake_failed",
                       "HTTP: TLS handshake failed: " + reason + "; closing");
      record.With("peer", peer_.name).With("listener", "http").With("reason", reason);
      tls.peer_log(record);
    }
    CloseNow();
  }

  void DoRead() {
    if (closed_) return;
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(server_->options_.max_header_bytes));
    parser_->body_limit(server_->options_.max_body_bytes);
    // One deadline for the whole request: a client that trickles bytes is cut off as an idle one.
    Lowest().expires_after(idle());
    http::async_read(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](beast::error_code ec, size_t n) { self->OnRead(ec, n); });
  }

  void OnRead(beast::error_code ec, size_t bytes) {
    if (closed_) return;
    if (server_->metrics_) {
      server_->metrics_->BytesReceived(Transport::kHttp, bytes);
      if (ec == beast::error::timeout) server_->metrics_->ConnectionTimedOut();
    }
    if (ec == http::error::end_of_stream || ec == beast::error::timeout || ec == asio::error::eof ||
        ec == asio::error::connection_reset || ec == asio::error::operation_aborted) {
      CloseNow();
      return;
    }
    if (ec) {
      keep_alive_ = false;
      if (ec == http::error::header_limit) {
        Send(ProblemResponse(
            http::status::request_header_fields_too_large, Status::Code::kInvalidArgument,
            "request headers exceed " + std::to_string(server_->options_.max_header_bytes) +
                " bytes (max_header_bytes)"));
      } else if (ec == http::error::body_limit) {
        Send(ProblemResponse(http::status::payload_too_large, Status::Code::kInvalidArgument,
                             "request body exceeds " +
                                 std::to_string(server_->options_.max_body_bytes) +
                                 " bytes (max_body_bytes)"));
      } else if (ec == http::error::buffer_overflow) {
        Send(ProblemResponse(http::status::request_header_fields_too_large,
                             Status::Code::kInvalidArgument, "request line or headers too long"));
      } else if (ec.category() == asio::error::get_system_category() ||
                 ec.category() == asio::error::get_ssl_category() ||
                 ec == asio::ssl::error::stream_truncated) {
        CloseNow();  // a socket or TLS error: nobody to answer
      } else {
        Send(ProblemResponse(http::status::bad_request, Status::Code::kInvalidArgument,
                             "malformed HTTP request: " + ec.message()));
      }
      return;
    }
    HttpRequest request = parser_->release();
    keep_alive_ = request.keep_alive() && !draining_;
    busy_ = true;
    Lowest().expires_never();  // the engine's time is not the client's idleness
    server_->handler_.load()->Handle(request, peer_.address,
                                     [self = this->shared_from_this()](HttpResponse response) {
                                       asio::post(self->stream_.get_executor(),
                                                  [self, response = std::move(response)]() mutable {
                                                    self->Send(std::move(response));
                                                  });
                                     });
  }

  void Send(HttpResponse response) {
    if (closed_) return;
    busy_ = true;
    response.keep_alive(keep_alive_ && !draining_);
    auto message = std::make_shared<HttpResponse>(std::move(response));
    // A client that does not read its response is cut off like an idle one.
    Lowest().expires_after(idle());
    http::async_write(stream_, *message,
                      [self = this->shared_from_this(), message](beast::error_code ec, size_t n) {
                        if (self->server_->metrics_) {
                          self->server_->metrics_->BytesSent(Transport::kHttp, n);
                        }
                        self->OnWritten(ec);
                      });
  }

  void OnWritten(beast::error_code ec) {
    busy_ = false;
    if (closed_) return;
    if (ec) {
      CloseNow();
      return;
    }
    if (!keep_alive_ || draining_) {
      Linger();
      return;
    }
    DoRead();
  }

  // Closing with unread input would make the kernel answer with a reset, which may destroy the
  // response before the client reads it (a 413 to a client still sending its body). So: FIN
  // first, then discard what arrives until the client closes too, for at most kLingerMs. Under
  // TLS the discarded bytes are read off the TCP stream, undecrypted.
  void Linger() {
    beast::error_code ignored;
    Lowest().socket().shutdown(tcp::socket::shutdown_send, ignored);
    Lowest().expires_after(std::chrono::milliseconds(kLingerMs));
    Discard();
  }
  void Discard() {
    Lowest().async_read_some(asio::buffer(discard_),
                             [self = this->shared_from_this()](beast::error_code ec, size_t) {
                               if (ec) {
                                 self->CloseNow();
                               } else {
                                 self->Discard();
                               }
                             });
  }

  void CloseNow() {
    if (closed_) return;
    closed_ = true;
    beast::error_code ignored;
    Lowest().socket().close(ignored);
    server_->core_.OnClosed(this);
  }

  const PeerIdentity peer_;  // read at accept
  // TLS: the context this connection's session was made with, kept while it lives (a reload
  // swaps the server's). Declared before stream_, which refers to it.
  std::shared_ptr<asio::ssl::context> tls_;
  Stream stream_;
  HttpServer* const server_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::array<char, 4096> discard_;
  bool keep_alive_ = true;
  bool busy_ = false;      // a request is being answered or its response written
  bool draining_ = false;  // server stop: no request after the one being answered
  bool closed_ = false;
};

using PlainHttpConnection = BasicHttpConnection<beast::tcp_stream>;
using TlsHttpConnection = BasicHttpConnection<beast::ssl_stream<beast::tcp_stream>>;

HttpServer::HttpServer(asio::io_context& io, HttpListenerOptions options, bool allow_remote,
                       LogSink log, ServerMetrics* metrics, std::optional<Tls> tls)
    : options_(std::move(options)),
      allow_remote_(allow_remote),
      log_(std::move(log)),
      metrics_(metrics),
      tls_(std::move(tls)),
      core_(io, "HTTP", "http",
            {.max_connections = options_.max_connections,
             .max_refusing_connections = options_.max_refusing_connections},
            log_, metrics) {}

HttpServer::~HttpServer() = default;

Status HttpServer::Listen() {
  if (options_.max_connections < 1 || options_.max_refusing_connections < 1 ||
      options_.max_header_bytes < 1024 || options_.max_header_bytes > (64u << 20) ||
      options_.max_body_bytes < 1024 || options_.idle_timeout_ms <= 0) {
    return Status::InvalidArgument("HTTP listener options out of range");
  }
  Result<uint16_t> port =
      OpenListenSocket(core_.acceptor(), options_.host, options_.port, allow_remote_, "HTTP");
  if (!port.ok()) return port.status();
  port_ = *port;
  return Status::Ok();
}

void HttpServer::Serve(HttpHandler* handler) {
  handler_ = handler;
  ListenerCore::Hooks hooks;
  hooks.make = [this](tcp::socket s) -> std::shared_ptr<ListenedConnection> {
    if (tls_) return std::make_shared<TlsHttpConnection>(std::move(s), this, tls_->context());
    return std::make_shared<PlainHttpConnection>(std::move(s), this);
  };
  hooks.accepted = [this](bool refused) {
    if (!metrics_) return;
    metrics_->ConnectionAccepted();
    if (refused) metrics_->ConnectionRefused();
  };
  hooks.served_closed = [this] {
    if (metrics_) metrics_->ConnectionClosed();
  };
  core_.Serve(std::move(hooks));
}

void HttpServer::Stop(std::chrono::milliseconds grace) { core_.Stop(grace); }

}  // namespace idem
