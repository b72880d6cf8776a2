#include "http_load.h"

#include <map>
#include <string>
#include <thread>
#include <utility>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace idem::bench {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

struct Connection {
  explicit Connection(asio::io_context& io) : socket(io) {}
  tcp::socket socket;
  beast::flat_buffer buffer;  // bytes read past the last response
};

}  // namespace

struct HttpLoad::Worker {
  int index = 0;
  asio::io_context io;
  std::map<uint16_t, std::unique_ptr<Connection>> connections;  // by port
  uint64_t next_key = 0;            // keys [0, next_key) were sent as first requests
  std::vector<uint64_t> completed;  // those answered 201: replayable
  uint64_t replay_cursor = 0;
  LoadResult result;

  Result<Connection*> Connect(uint16_t port) {
    std::unique_ptr<Connection>& c = connections[port];
    if (c != nullptr && c->socket.is_open()) return c.get();
    c = std::make_unique<Connection>(io);
    beast::error_code ec;
    c->socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
    if (!ec) c->socket.set_option(tcp::no_delay(true), ec);
    if (ec)
      return Status::IOError("connect 127.0.0.1:" + std::to_string(port) + ": " + ec.message());
    return c.get();
  }

  void Unexpected(std::string what) {
    ++result.unexpected;
    if (result.first_unexpected.empty()) result.first_unexpected = std::move(what);
  }

  // One request of `side`, timed; false if the worker cannot connect or has nothing to replay.
  bool Send(const LoadSide& side, const std::string& run_id) {
    Result<Connection*> c = Connect(side.port);
    if (!c.ok()) {
      Unexpected(c.status().ToString());
      return false;
    }
    uint64_t key = next_key;  // kNone: any body will do
    if (side.keys == KeyUse::kCompleted) {
      if (completed.empty()) return false;
      key = completed[replay_cursor++ % completed.size()];
    }
    http::request<http::string_body> request{http::verb::post, "/v1/payments", 11};
    request.set(http::field::host, "127.0.0.1:" + std::to_string(side.port));
    request.set(http::field::content_type, "application/json");
    request.set(http::field::authorization, "Bearer bench-client-" + std::to_string(index));
    if (side.keys != KeyUse::kNone) {
      request.set("Idempotency-Key", "\"gwb-" + run_id + "-" + std::to_string(index) + "-" +
                                         std::to_string(key) + "\"");
    }
    request.body() = "{\"amount\":1250,\"currency\":\"EUR\",\"customer\":\"cus_" +
                     std::to_string(index) + "\",\"order\":" + std::to_string(key) + "}";
    request.prepare_payload();
    if (side.keys == KeyUse::kNew) ++next_key;

    http::response<http::string_body> response;
    beast::error_code ec;
    const Clock::time_point start = Clock::now();
    http::write((*c)->socket, request, ec);
    if (!ec) http::read((*c)->socket, (*c)->buffer, response, ec);
    const Clock::time_point end = Clock::now();
    ++result.requests;
    result.latency.Record(static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(end - start).count()));
    if (ec) {
      Unexpected(side.name + ": " + ec.message());
      (*c)->socket.close();
      return true;
    }
    if (!response.keep_alive()) (*c)->socket.close();
    const bool replayed = response["Idempotent-Replayed"] == "true";
    if (response.result() != http::status::created || replayed != side.expect_replayed) {
      Unexpected(side.name + ": " + std::to_string(response.result_int()) +
                 (replayed ? " (replayed) " : " ") + response.body().substr(0, 300));
      return true;
    }
    if (side.keys == KeyUse::kNew) completed.push_back(key);
    return true;
  }
};

HttpLoad::HttpLoad(int connections, std::string run_id) : run_id_(std::move(run_id)) {
  for (int i = 0; i < connections; ++i) {
    workers_.push_back(std::make_unique<Worker>());
    workers_.back()->index = i;
  }
}

HttpLoad::~HttpLoad() = default;

Status HttpLoad::Run(const LoadSide& side, std::chrono::milliseconds duration, LoadResult* into) {
  for (auto& w : workers_) w->result = LoadResult();
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + duration;
  std::vector<std::thread> threads;
  for (auto& w : workers_) {
    threads.emplace_back([&side, deadline, this, worker = w.get()] {
      while (Clock::now() < deadline && worker->Send(side, run_id_)) {
      }
    });
  }
  for (std::thread& t : threads) t.join();
  into->seconds += std::chrono::duration<double>(Clock::now() - start).count();
  for (auto& w : workers_) {
    into->latency.Merge(w->result.latency);
    into->requests += w->result.requests;
    into->unexpected += w->result.unexpected;
    if (into->first_unexpected.empty()) into->first_unexpected = w->result.first_unexpected;
    if (w->result.requests == 0 && w->result.unexpected > 0) {
      return Status::IOError(w->result.first_unexpected);
    }
  }
  return Status::Ok();
}

}  // namespace idem::bench
