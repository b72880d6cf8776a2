// The gateway's side towards its upstream: the upstream's address (parsed and resolved once),
// a bounded pool of idle keep-alive connections, and one exchange (a request out, its response
// in) on one connection at a time.
//
// Memory: an exchange buffers at most `max_buffered` bytes of a response body (ReadHead); the
// rest is read in chunks of kChunkBytes (ReadChunk) that the caller passes on before reading the
// next. Time: every step of an exchange is bounded by one deadline, set when it starts.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "idem/result.h"

namespace idem {

// http://HOST:PORT (HOST an IP address or a name, resolved by Resolve; PORT 1..65535, 80 when
// left out; no path, no https).
struct UpstreamAddress {
  std::string host;
  uint16_t port = 80;
  std::string host_header;  // "HOST:PORT", the Host the upstream gets
  static Result<UpstreamAddress> Parse(std::string_view url);
};

// Whether a header is hop-by-hop (RFC 9110 7.6.1: Connection, Keep-Alive, Proxy-*, TE, Trailer,
// Transfer-Encoding, Upgrade): a proxy never passes it on.
bool IsHopByHop(std::string_view name);

class UpstreamPool {
 public:
  // Resolves address.host once (IOError when it does not resolve). Keeps at most `max_idle`
  // connections between requests (GatewayOptions::max_idle_upstream_connections).
  static Result<std::unique_ptr<UpstreamPool>> Open(boost::asio::io_context& io,
                                                    UpstreamAddress address, size_t max_idle);

  const UpstreamAddress& address() const { return address_; }
  const boost::asio::ip::tcp::endpoint& endpoint() const { return endpoint_; }

  // An idle connection the upstream has not closed, or null. Any thread.
  std::unique_ptr<boost::beast::tcp_stream> TakeIdle();
  // A connection whose exchange finished cleanly with keep-alive; dropped past max_idle.
  void PutIdle(std::unique_ptr<boost::beast::tcp_stream> stream);
  // Closes every idle connection (server stop).
  void Clear();

 private:
  UpstreamPool(UpstreamAddress address, boost::asio::ip::tcp::endpoint endpoint, size_t max_idle)
      : address_(std::move(address)), endpoint_(std::move(endpoint)), max_idle_(max_idle) {}

  const UpstreamAddress address_;
  const boost::asio::ip::tcp::endpoint endpoint_;
  const size_t max_idle_;
  std::mutex mu_;
  std::vector<std::unique_ptr<boost::beast::tcp_stream>> idle_;  // guarded by mu_
};

// One request and its response on one pooled (or new) connection. Not thread-safe: one
// coroutine drives it. Errors are error codes: beast::error::timeout past the deadline.
class UpstreamCall {
 public:
  static constexpr size_t kChunkBytes = 64 * 1024;
  using Header = boost::beast::http::response_header<>;

  UpstreamCall(UpstreamPool* pool, std::chrono::steady_clock::time_point deadline,
               size_t max_header_bytes);
  ~UpstreamCall();  // a connection not returned by Finish is closed

  // Sends `request` (its hop-by-hop headers already removed; Host, Connection and the length
  // are set here) on an idle connection, or a new one.
  boost::asio::awaitable<boost::beast::error_code> Send(
      boost::beast::http::request<boost::beast::http::string_body> request, bool head_request);
  // Reads the response's header, then its body into `body` while the body fits in
  // `max_buffered` bytes. `complete` says whether the whole body was read.
  boost::asio::awaitable<boost::beast::error_code> ReadHead(size_t max_buffered, std::string* body,
                                                            bool* complete);
  const Header& header() const { return parser_->get().base(); }
  // The response's Content-Length, when it has one.
  std::optional<uint64_t> content_length() const {
    const auto length = parser_->content_length();
    return length ? std::optional<uint64_t>(*length) : std::nullopt;
  }
  // After an incomplete ReadHead: the next part of the body into `chunk` (empty and `*done` at
  // the end).
  boost::asio::awaitable<boost::beast::error_code> ReadChunk(std::string* chunk, bool* done);
  // The exchange is over: a complete, keep-alive one gives its connection back to the pool.
  void Finish();

 private:
  UpstreamPool* const pool_;
  const std::chrono::steady_clock::time_point deadline_;
  const size_t max_header_bytes_;
  std::unique_ptr<boost::beast::tcp_stream> stream_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::response_parser<boost::beast::http::buffer_body>> parser_;
  bool failed_ = false;
};

}  // namespace idem
