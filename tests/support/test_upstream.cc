#include "support/test_upstream.h"

#include <future>
#include <string>
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded

#include <boost/asio.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace idem::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct TestUpstream::Impl {
  explicit Impl(TestUpstream* upstream)
      : owner(upstream), acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {}

  int Count(const std::string& path) {
    std::lock_guard<std::mutex> lock(owner->mu_);
    return ++owner->executions_[path];
  }

  asio::awaitable<void> Accept() {
    for (;;) {
      boost::system::error_code ec;
      tcp::socket socket =
          co_await acceptor.async_accept(asio::redirect_error(asio::use_awaitable, ec));
      if (!acceptor.is_open()) co_return;  // StopAccepting
      if (ec) continue;                    // e.g. a connection reset before it was accepted
      asio::co_spawn(io, Serve(std::move(socket)), asio::detached);
    }
  }

  asio::awaitable<void> Serve(tcp::socket socket) {
    beast::flat_buffer buffer;
    for (;;) {
      http::request<http::string_body> request;
      boost::system::error_code ec;
      co_await http::async_read(socket, buffer, request,
                                asio::redirect_error(asio::use_awaitable, ec));
      if (ec) co_return;
      const std::string target(request.target());
      const std::string path = target.substr(0, target.find('?'));
      const int n = Count(path);
      if (request.find("X-Test-Delay-Ms") != request.end()) {
        asio::steady_timer timer(
            io, std::chrono::milliseconds(std::stoll(std::string(request["X-Test-Delay-Ms"]))));
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      }
      if (request.find("X-Test-Die") != request.end()) {
        socket.close(ec);
        co_return;
      }
      unsigned status = 200;
      if (request.find("X-Test-Status") != request.end()) {
        status = static_cast<unsigned>(std::stoul(std::string(request["X-Test-Status"])));
      }
      http::response<http::string_body> response;
      response.version(11);
      response.result(status);
      response.set(http::field::content_type, "application/json");
      response.set(http::field::location, "/executions/" + std::to_string(n));
      response.set("X-Execution", std::to_string(n));
      if (request.find("X-Test-Body-Bytes") != request.end()) {
        const size_t bytes = std::stoull(std::string(request["X-Test-Body-Bytes"]));
        response.body().resize(bytes);
        for (size_t i = 0; i < bytes; ++i) response.body()[i] = static_cast<char>('a' + i % 26);
      } else {
        response.body() = "{\"execution\":" + std::to_string(n) + ",\"path\":\"" + path + "\"}";
      }
      response.keep_alive(request.keep_alive());
      response.prepare_payload();
      co_await http::async_write(socket, response, asio::redirect_error(asio::use_awaitable, ec));
      if (ec || !request.keep_alive()) co_return;
    }
  }

  TestUpstream* const owner;
  asio::io_context io;
  // run() returns at stop() only, whatever is (not) pending.
  asio::executor_work_guard<asio::io_context::executor_type> work = asio::make_work_guard(io);
  tcp::acceptor acceptor;
  std::thread thread;
};

TestUpstream::TestUpstream() : impl_(std::make_unique<Impl>(this)) {
  port_ = impl_->acceptor.local_endpoint().port();
  asio::co_spawn(impl_->io, impl_->Accept(), asio::detached);
  impl_->thread = std::thread([this] { impl_->io.run(); });
}

TestUpstream::~TestUpstream() {
  impl_->io.stop();
  impl_->thread.join();
}

int TestUpstream::Executions(const std::string& path) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = executions_.find(path);
  return it == executions_.end() ? 0 : it->second;
}

int TestUpstream::TotalExecutions() const {
  std::lock_guard<std::mutex> lock(mu_);
  int total = 0;
  for (const auto& [path, n] : executions_) total += n;
  return total;
}

void TestUpstream::StopAccepting() {
  asio::post(impl_->io, [this] {
    boost::system::error_code ec;
    impl_->acceptor.close(ec);
  });
  // Wait until it is closed, so that the caller's next step sees it so.
  std::promise<void> done;
  asio::post(impl_->io, [&done] { done.set_value(); });
  done.get_future().wait();
}

}  // namespace idem::testing
