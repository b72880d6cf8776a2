#include "fast_upstream.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>  // before Asio: its awaitable.hpp uses std::exchange

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace idem::bench {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

// One keep-alive connection: read a request, wait the delay, answer, read the next.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const std::atomic<int64_t>* delay_ms,
          std::atomic<uint64_t>* executions)
      : socket_(std::move(socket)),
        timer_(socket_.get_executor()),
        delay_ms_(delay_ms),
        executions_(executions) {
    socket_.set_option(tcp::no_delay(true));
  }

  void Read() {
    request_ = {};
    http::async_read(socket_, buffer_, request_,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       if (!ec) self->Answer();
                     });
  }

 private:
  void Answer() {
    const uint64_t n = executions_->fetch_add(1, std::memory_order_relaxed) + 1;
    response_ = {http::status::created, request_.version()};
    response_.set(http::field::content_type, "application/json");
    response_.set(http::field::location, "/v1/payments/pay_" + std::to_string(n));
    response_.body() = "{\"id\":\"pay_" + std::to_string(n) + "\",\"status\":\"succeeded\"}";
    response_.keep_alive(request_.keep_alive());
    response_.prepare_payload();
    const int64_t delay = delay_ms_->load(std::memory_order_relaxed);
    if (delay == 0) return Write();
    timer_.expires_after(std::chrono::milliseconds(delay));
    timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (!ec) self->Write();
    });
  }

  void Write() {
    http::async_write(socket_, response_,
                      [self = shared_from_this()](beast::error_code ec, size_t) {
                        if (!ec && self->response_.keep_alive()) self->Read();
                      });
  }

  tcp::socket socket_;
  asio::steady_timer timer_;
  const std::atomic<int64_t>* delay_ms_;
  std::atomic<uint64_t>* executions_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> request_;
  http::response<http::string_body> response_;
};

}  // namespace

struct FastUpstream::Impl {
  asio::io_context io{1};
  tcp::acceptor acceptor{io};
  std::atomic<int64_t> delay_ms{0};
  std::atomic<uint64_t> executions{0};
  std::thread thread;

  void Accept() {
    acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (ec) return;  // closed: the destructor stops the loop
      std::make_shared<Session>(std::move(socket), &delay_ms, &executions)->Read();
      Accept();
    });
  }
};

FastUpstream::FastUpstream() : impl_(std::make_unique<Impl>()) {
  beast::error_code ec;
  const tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), 0);
  impl_->acceptor.open(endpoint.protocol(), ec);
  if (!ec) impl_->acceptor.bind(endpoint, ec);
  if (!ec) impl_->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    std::fprintf(stderr, "idem_gateway_bench: upstream: %s\n", ec.message().c_str());
    std::abort();
  }
  impl_->Accept();
  impl_->thread = std::thread([this] { impl_->io.run(); });
}

FastUpstream::~FastUpstream() {
  impl_->io.stop();  // drops every session with the loop's pending handlers
  impl_->thread.join();
}

uint16_t FastUpstream::port() const { return impl_->acceptor.local_endpoint().port(); }

void FastUpstream::set_delay_ms(int64_t ms) { impl_->delay_ms.store(ms); }

uint64_t FastUpstream::executions() const { return impl_->executions.load(); }

}  // namespace idem::bench
