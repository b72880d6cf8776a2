#include "gateway_server.h"

#include <algorithm>
#include <array>
#include <type_traits>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "listen_socket.h"

namespace idem {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// Stream: beast::tcp_stream or beast::ssl_stream over one. Every member is touched on the
// connection's strand only (the stream's executor), where its coroutine runs.
template <typename Stream>
class BasicGatewayConnection final
    : public ListenedConnection,
      public GatewayClient,
      public std::enable_shared_from_this<BasicGatewayConnection<Stream>> {
 public:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

  BasicGatewayConnection(tcp::socket socket, GatewayServer* server) requires(!kTls)
      : peer_(DescribePeer(socket)), stream_(std::move(socket)), server_(server) {}
  BasicGatewayConnection(tcp::socket socket, GatewayServer* server,
                         std::shared_ptr<asio::ssl::context> tls) requires(kTls)
      : peer_(DescribePeer(socket)),
        tls_(std::move(tls)),
        stream_(std::move(socket), *tls_),
        server_(server) {}

  void Start() override {
    asio::co_spawn(stream_.get_executor(), Run(this->shared_from_this(), false), asio::detached);
  }
  void Reject() override {
    asio::co_spawn(stream_.get_executor(), Run(this->shared_from_this(), true), asio::detached);
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

  // GatewayClient
  asio::awaitable<bool> Send(GatewayResponse response) override {
    if (closed_) co_return false;
    response.keep_alive(keep_alive_ && !draining_);
    beast::error_code ec;
    Lowest().expires_after(idle());  // a client that does not read is cut off as an idle one
    const size_t n = co_await http::async_write(stream_, response,
                                                asio::redirect_error(asio::use_awaitable, ec));
    Sent(n);
    if (ec) keep_alive_ = false;
    co_return !ec;
  }
  asio::awaitable<bool> StartStream(http::response_header<> header,
                                    std::optional<uint64_t> length) override {
    if (closed_) co_return false;
    unfinished_ = true;  // until EndStream: the client cannot tell where this response ends
    streamed_.emplace();
    streamed_->base() = std::move(header);
    streamed_->keep_alive(keep_alive_ && !draining_);
    if (length) {
      streamed_->content_length(*length);
    } else {
      streamed_->chunked(true);
    }
    streamed_->body().data = nullptr;
    streamed_->body().more = true;
    serializer_.emplace(*streamed_);
    beast::error_code ec;
    Lowest().expires_after(idle());
    const size_t n = co_await http::async_write_header(
        stream_, *serializer_, asio::redirect_error(asio::use_awaitable, ec));
    Sent(n);
    co_return !ec;
  }
  asio::awaitable<bool> StreamBody(std::string_view bytes) override {
    co_return co_await WriteBody(bytes, true);
  }
  asio::awaitable<bool> EndStream() override {
    const bool ok = co_await WriteBody(std::string_view(), false);
    unfinished_ = !ok;
    serializer_.reset();
    streamed_.reset();
    co_return ok;
  }

 private:
  static constexpr int64_t kLingerMs = 1'000;

  std::chrono::milliseconds idle() const {
    return std::chrono::milliseconds(server_->options_.idle_timeout_ms);
  }
  beast::tcp_stream& Lowest() { return beast::get_lowest_layer(stream_); }
  void Sent(size_t n) {
    if (server_->metrics_) server_->metrics_->BytesSent(Transport::kGateway, n);
  }
  void Rejected() {
    if (server_->metrics_) server_->metrics_->GatewayRequest(GatewayOutcome::kRejected);
  }

  asio::awaitable<bool> WriteBody(std::string_view bytes, bool more) {
    if (closed_ || !serializer_) co_return false;
    streamed_->body().data = const_cast<char*>(bytes.data());  // only read from
    streamed_->body().size = bytes.size();
    streamed_->body().more = more;
    beast::error_code ec;
    Lowest().expires_after(idle());
    const size_t n = co_await http::async_write(stream_, *serializer_,
                                                asio::redirect_error(asio::use_awaitable, ec));
    Sent(n);
    if (ec == http::error::need_buffer) ec = {};
    co_return !ec;
  }

  // TLS: the handshake, bounded by handshake_timeout_ms; false when it failed.
  asio::awaitable<bool> Handshake() {
    if constexpr (kTls) {
      beast::error_code ec;
      Lowest().expires_after(std::chrono::milliseconds(server_->tls_->handshake_timeout_ms));
      co_await stream_.async_handshake(asio::ssl::stream_base::server,
                                       asio::redirect_error(asio::use_awaitable, ec));
      if (ec && server_->metrics_) {
        if (ec == beast::error::timeout) {
          server_->metrics_->ConnectionTimedOut();
        } else {
          server_->metrics_->TlsHandshakeFailed();
        }
      }
      co_return !ec;
    } else {
      co_return true;
    }
  }

  // The connection's life: requests one at a time until the client closes, an error, or a
  // response that leaves the connection unusable.
  // The first parameter keeps the connection alive while its coroutine runs.
  asio::awaitable<void> Run(std::shared_ptr<BasicGatewayConnection>, bool reject) {
    if (!co_await Handshake()) {
      CloseNow();
      co_return;
    }
    if (reject) {
      keep_alive_ = false;
      Rejected();
      GatewayResponse r =
          GatewayProblem(503, "too-many-connections", "Service Unavailable",
                         "the gateway has " + std::to_string(server_->options_.max_connections) +
                             " connections open (max_connections); retry later");
      r.set(http::field::retry_after, "1");
      co_await Send(std::move(r));
      co_await Linger();
      co_return;
    }
    while (!closed_) {
      http::request_parser<http::string_body> parser;
      parser.header_limit(static_cast<uint32_t>(server_->options_.max_header_bytes));
      parser.body_limit(server_->options_.max_request_body_bytes);
      beast::error_code ec;
      Lowest().expires_after(idle());  // one deadline for the whole request
      const size_t n = co_await http::async_read(stream_, buffer_, parser,
                                                 asio::redirect_error(asio::use_awaitable, ec));
      if (closed_) co_return;
      if (server_->metrics_) server_->metrics_->BytesReceived(Transport::kGateway, n);
      if (ec) {
        if (std::optional<GatewayResponse> refusal = Refusal(ec)) {
          keep_alive_ = false;
          Rejected();
          co_await Send(std::move(*refusal));
          co_await Linger();
        } else {
          if (ec == beast::error::timeout && server_->metrics_) {
            server_->metrics_->ConnectionTimedOut();
          }
          CloseNow();
        }
        co_return;
      }
      GatewayRequest request = parser.release();
      keep_alive_ = request.keep_alive() && !draining_;
      busy_ = true;
      Lowest().expires_never();  // the upstream's and the store's time are not the client's
      co_await server_->handler_->Handle(std::move(request), peer_.address, *this);
      busy_ = false;
      if (closed_) co_return;
      if (unfinished_) {  // a streamed response cut short: closing is how the client learns
        CloseNow();
        co_return;
      }
      if (!keep_alive_ || draining_) {
        co_await Linger();
        co_return;
      }
    }
  }

  // What a failed read is answered with, if anything (a socket error or the client's close: no).
  std::optional<GatewayResponse> Refusal(beast::error_code ec) const {
    const GatewayOptions& o = server_->options_;
    if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
      return GatewayProblem(431, "headers-too-large", "Request Header Fields Too Large",
                            "request headers exceed " + std::to_string(o.max_header_bytes) +
                                " bytes (max_header_bytes)");
    }
    if (ec == http::error::body_limit) {
      return GatewayProblem(413, "body-too-large", "Content Too Large",
                            "request body exceeds " + std::to_string(o.max_request_body_bytes) +
                                " bytes (max_request_body_bytes); nothing was executed");
    }
    if (ec.category() == asio::error::get_system_category() ||
        ec.category() == asio::error::get_misc_category() ||
        ec.category() == asio::error::get_ssl_category() || ec == http::error::end_of_stream ||
        ec == beast::error::timeout || ec == http::error::partial_message ||
        ec == asio::ssl::error::stream_truncated) {
      return std::nullopt;
    }
    return GatewayProblem(400, "malformed-request", "Bad Request",
                          "malformed HTTP request: " + ec.message());
  }

  // Closing with unread input would make the kernel reset the connection, which may destroy
  // the response before the client reads it (a 413 to a client still sending its body): FIN
  // first, then discard what arrives until the client closes too, for at most kLingerMs.
  asio::awaitable<void> Linger() {
    if (closed_) co_return;
    beast::error_code ec;
    Lowest().socket().shutdown(tcp::socket::shutdown_send, ec);
    Lowest().expires_after(std::chrono::milliseconds(kLingerMs));
    std::array<char, 4096> discard;
    while (!ec && !closed_) {
      co_await Lowest().async_read_some(asio::buffer(discard),
                                        asio::redirect_error(asio::use_awaitable, ec));
    }
    CloseNow();
  }

  void CloseNow() {
    if (closed_) return;
    closed_ = true;
    beast::error_code ignored;
    Lowest().socket().close(ignored);
    server_->core_.OnClosed(this);
  }

  const PeerIdentity peer_;
  std::shared_ptr<asio::ssl::context> tls_;  // before stream_, which refers to it
  Stream stream_;
  GatewayServer* const server_;
  beast::flat_buffer buffer_;
  // The response being streamed (StartStream .. EndStream) and its serializer.
  std::optional<http::response<http::buffer_body>> streamed_;
  std::optional<http::response_serializer<http::buffer_body>> serializer_;
  bool keep_alive_ = true;
  bool busy_ = false;        // a request is being answered
  bool draining_ = false;    // server stop: no request after the one being answered
  bool unfinished_ = false;  // a streamed response was started and not ended
  bool closed_ = false;
};

using PlainGatewayConnection = BasicGatewayConnection<beast::tcp_stream>;
using TlsGatewayConnection = BasicGatewayConnection<beast::ssl_stream<beast::tcp_stream>>;

GatewayServer::GatewayServer(asio::io_context& io, GatewayOptions options, bool allow_remote,
                             LogSink log, ServerMetrics* metrics, std::optional<Tls> tls)
    : options_(std::move(options)),
      allow_remote_(allow_remote),
      log_(std::move(log)),
      metrics_(metrics),
      tls_(std::move(tls)),
      core_(io, "gateway", "gateway",
            {.max_connections = options_.max_connections,
             .max_refusing_connections = options_.max_refusing_connections},
            log_, metrics) {}

GatewayServer::~GatewayServer() = default;

Status GatewayServer::Listen() {
  Result<uint16_t> port =
      OpenListenSocket(core_.acceptor(), options_.host, options_.port, allow_remote_, "gateway");
  if (!port.ok()) return port.status();
  port_ = *port;
  return Status::Ok();
}

void GatewayServer::Serve(GatewayHandler* handler) {
  handler_ = handler;
  ListenerCore::Hooks hooks;
  hooks.make = [this](tcp::socket s) -> std::shared_ptr<ListenedConnection> {
    if (tls_) return std::make_shared<TlsGatewayConnection>(std::move(s), this, tls_->context());
    return std::make_shared<PlainGatewayConnection>(std::move(s), this);
  };
  hooks.accepted = [this](bool refused) {
    if (metrics_ && !refused) metrics_->GatewayConnectionOpened();
  };
  hooks.served_closed = [this] {
    if (metrics_) metrics_->GatewayConnectionClosed();
  };
  core_.Serve(std::move(hooks));
}

void GatewayServer::Stop(std::chrono::milliseconds grace) { core_.Stop(grace); }

}  // namespace idem
