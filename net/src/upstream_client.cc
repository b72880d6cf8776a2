#include "upstream_client.h"

#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <limits>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace idem {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

bool EqualsNoCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// An idle keep-alive connection the upstream closed reads as end of file at once; one that is
// still open has nothing to read (the upstream never speaks first).
bool StillOpen(tcp::socket& socket) {
  char c;
  const ssize_t n = ::recv(socket.native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

}  // namespace

Result<UpstreamAddress> UpstreamAddress::Parse(std::string_view url) {
  constexpr std::string_view kScheme = "http://";
  const auto bad = [url](std::string_view why) {
    return Status::InvalidArgument("gateway upstream \"" + std::string(url) +
                                   "\": " + std::string(why) + " (expected http://HOST:PORT)");
  };
  if (url.starts_with("https://")) return bad("https is not supported yet");
  if (!url.starts_with(kScheme)) return bad("not an http:// URL");
  std::string_view rest = url.substr(kScheme.size());
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.find('/') != std::string_view::npos) return bad("a path is not supported");
  UpstreamAddress address;
  std::string_view port;
  if (rest.starts_with('[')) {  // [IPv6]:PORT
    const size_t close = rest.find(']');
    if (close == std::string_view::npos) return bad("unclosed '['");
    address.host = std::string(rest.substr(1, close - 1));
    rest.remove_prefix(close + 1);
    if (!rest.empty() && !rest.starts_with(':')) return bad("junk after ']'");
    if (!rest.empty()) port = rest.substr(1);
  } else {
    const size_t colon = rest.rfind(':');
    address.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) port = rest.substr(colon + 1);
  }
  if (address.host.empty()) return bad("no host");
  if (!port.empty()) {
    if (port.size() > 5 || !std::all_of(port.begin(), port.end(), ::isdigit)) {
      return bad("bad port");
    }
    const int p = std::stoi(std::string(port));
    if (p < 1 || p > 65535) return bad("port out of range");
    address.port = static_cast<uint16_t>(p);
  }
  const bool v6 = address.host.find(':') != std::string::npos;
  address.host_header =
      (v6 ? "[" + address.host + "]" : address.host) + ":" + std::to_string(address.port);
  return address;
}

bool IsHopByHop(std::string_view name) {
  static constexpr std::array<std::string_view, 7> kHopByHop = {
      "connection", "keep-alive", "te", "trailer", "transfer-encoding", "upgrade", "proxy"};
  for (std::string_view h : kHopByHop) {
    if (h == "proxy") {
      if (name.size() >= 6 && EqualsNoCase(name.substr(0, 6), "proxy-")) return true;
    } else if (EqualsNoCase(name, h)) {
      return true;
    }
  }
  return false;
}

Result<std::unique_ptr<UpstreamPool>> UpstreamPool::Open(asio::io_context& io,
                                                         UpstreamAddress address, size_t max_idle) {
  tcp::resolver resolver(io);
  boost::system::error_code ec;
  auto results = resolver.resolve(address.host, std::to_string(address.port), ec);
  if (ec || results.empty()) {
    return Status::IOError("gateway upstream " + address.host_header +
                           " does not resolve: " + ec.message());
  }
  return std::unique_ptr<UpstreamPool>(
      new UpstreamPool(std::move(address), results.begin()->endpoint(), max_idle));
}

std::unique_ptr<beast::tcp_stream> UpstreamPool::TakeIdle() {
  std::lock_guard<std::mutex> lock(mu_);
  while (!idle_.empty()) {
    std::unique_ptr<beast::tcp_stream> stream = std::move(idle_.back());
    idle_.pop_back();
    if (StillOpen(stream->socket())) return stream;
  }
  return nullptr;
}

void UpstreamPool::PutIdle(std::unique_ptr<beast::tcp_stream> stream) {
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_.size() < max_idle_) idle_.push_back(std::move(stream));
}

void UpstreamPool::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  idle_.clear();
}

UpstreamCall::UpstreamCall(UpstreamPool* pool, std::chrono::steady_clock::time_point deadline,
                           size_t max_header_bytes)
    : pool_(pool), deadline_(deadline), max_header_bytes_(max_header_bytes) {}

UpstreamCall::~UpstreamCall() = default;

asio::awaitable<beast::error_code> UpstreamCall::Send(http::request<http::string_body> request,
                                                      bool head_request) {
  beast::error_code ec;
  stream_ = pool_->TakeIdle();
  if (!stream_) {
    stream_ = std::make_unique<beast::tcp_stream>(co_await asio::this_coro::executor);
    stream_->expires_at(deadline_);
    co_await stream_->async_connect(pool_->endpoint(),
                                    asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      failed_ = true;
      co_return ec;
    }
  }
  request.set(http::field::host, pool_->address().host_header);
  request.keep_alive(true);
  request.prepare_payload();
  parser_.emplace();
  parser_->header_limit(static_cast<uint32_t>(max_header_bytes_));
  parser_->body_limit(std::numeric_limits<uint64_t>::max());  // read in chunks, never whole
  parser_->skip(head_request);
  stream_->expires_at(deadline_);
  co_await http::async_write(*stream_, request, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) failed_ = true;
  co_return ec;
}

asio::awaitable<beast::error_code> UpstreamCall::ReadHead(size_t max_buffered, std::string* body,
                                                          bool* complete) {
  beast::error_code ec;
  body->clear();
  *complete = false;
  stream_->expires_at(deadline_);
  co_await http::async_read_header(*stream_, buffer_, *parser_,
                                   asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    failed_ = true;
    co_return ec;
  }
  std::string chunk;
  while (body->size() <= max_buffered) {
    bool done = false;
    ec = co_await ReadChunk(&chunk, &done);
    if (ec) co_return ec;
    body->append(chunk);
    if (done) {
      *complete = body->size() <= max_buffered;
      break;
    }
  }
  co_return ec;
}

asio::awaitable<beast::error_code> UpstreamCall::ReadChunk(std::string* chunk, bool* done) {
  beast::error_code ec;
  chunk->clear();
  *done = parser_->is_done();
  if (*done) co_return ec;
  chunk->resize(kChunkBytes);
  parser_->get().body().data = chunk->data();
  parser_->get().body().size = chunk->size();
  stream_->expires_at(deadline_);
  co_await http::async_read(*stream_, buffer_, *parser_,
                            asio::redirect_error(asio::use_awaitable, ec));
  if (ec == http::error::need_buffer) ec = {};
  if (ec) {
    failed_ = true;
    chunk->clear();
    co_return ec;
  }
  chunk->resize(kChunkBytes - parser_->get().body().size);
  *done = parser_->is_done();
  co_return ec;
}

void UpstreamCall::Finish() {
  if (stream_ && !failed_ && parser_ && parser_->is_done() && parser_->keep_alive()) {
    stream_->expires_never();
    pool_->PutIdle(std::move(stream_));
  }
  stream_.reset();
}

}  // namespace idem
