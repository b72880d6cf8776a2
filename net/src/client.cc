// The network Client. One TCP connection, one I/O thread.
//
// Threads: callers of Apply/ApplyAsync/Stats encode their request on their own thread (so the
// caller's strings need not outlive the call) and post it to the I/O thread, which owns every
// other member: the socket, the table of requests waiting for a response and their timers.
// Callbacks run on the I/O thread.
#include <array>
#include <deque>
#include <future>
#include <unordered_map>

#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded

#include <boost/asio.hpp>

#include "frame_parser.h"
#include "idem/client.h"
#include "protocol_codec.h"

namespace idem {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

class ClientImpl final : public Client {
 public:
  explicit ClientImpl(const ClientOptions& options)
      : options_(options),
        work_(asio::make_work_guard(io_)),
        socket_(io_),
        parser_(options.max_frame_bytes) {
    thread_ = std::thread([this] { io_.run(); });
  }

  ~ClientImpl() override {
    asio::post(io_, [this] { FailAll(Status::Shutdown("client closed")); });
    work_.reset();
    thread_.join();  // returns once the socket is closed and no timer is pending
  }

  Status ConnectAndGreet();

  Status Apply(std::span<const Op> ops, std::vector<Result<OpResult>>* results) override;
  void ApplyAsync(std::span<const Op> ops, Callback done) override;
  Result<StoreStats> Stats() override;
  const ServerInfo& server_info() const override { return info_; }

 private:
  // Called once per request with the verified response frame, or with a non-ok Status and null.
  using OnResponse = std::function<void(Status status, const wire::Frame* frame)>;
  struct Waiting {
    OnResponse on_response;
    std::unique_ptr<asio::steady_timer> timer;
  };

  // Any thread: sends `frame` (request `id`) and arranges for `on_response`.
  void Send(uint64_t id, FrameBytes frame, int64_t timeout_ms, OnResponse on_response);
  bool OnIoThread() const { return std::this_thread::get_id() == thread_.get_id(); }

  // I/O thread only, from here on.
  void DoWrite();
  void DoRead();
  void OnFrame(std::vector<uint8_t> body);
  void FailAll(const Status& status);

  const ClientOptions options_;
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  tcp::socket socket_;
  std::thread thread_;
  std::atomic<uint64_t> next_id_{1};
  ServerInfo info_;  // written once by ConnectAndGreet, before the Client is handed out

  FrameParser parser_;
  std::array<uint8_t, 64 * 1024> read_buf_;
  std::unordered_map<uint64_t, Waiting> waiting_;
  std::deque<FrameBytes> outbox_;
  std::vector<FrameBytes> writing_;
  bool writing_active_ = false;
  Status broken_;  // once set, the connection is gone and every request fails with it
};

std::pair<std::string, std::string> SplitAddress(const std::string& address) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos) return {address, ""};
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  return {host, address.substr(colon + 1)};
}

Status ClientImpl::ConnectAndGreet() {
  auto [host, port] = SplitAddress(options_.address);
  if (host.empty() || port.empty()) {
    return Status::InvalidArgument("address \"" + options_.address + "\" is not HOST:PORT");
  }
  boost::system::error_code ec;
  tcp::resolver resolver(io_);
  tcp::resolver::results_type endpoints = resolver.resolve(host, port, ec);
  if (ec) return Status::IOError("resolve " + options_.address + ": " + ec.message());

  // Connect on the I/O thread, bounded by connect_timeout_ms.
  std::promise<Status> connected;
  asio::steady_timer timer(io_);
  asio::post(io_, [&] {
    timer.expires_after(std::chrono::milliseconds(options_.connect_timeout_ms));
    timer.async_wait([&](const boost::system::error_code& timer_ec) {
      if (!timer_ec) socket_.close();  // completes the connect with operation_aborted
    });
    asio::async_connect(socket_, endpoints,
                        [&](const boost::system::error_code& connect_ec, const tcp::endpoint&) {
                          const bool timed_out = timer.expiry() <= asio::steady_timer::clock_type::now();
                          timer.cancel();
                          if (!connect_ec) {
                            socket_.set_option(tcp::no_delay(true));
                            DoRead();
                            connected.set_value(Status::Ok());
                          } else if (timed_out || connect_ec == asio::error::operation_aborted) {
                            broken_ = Status::TimedOut("connect to " + options_.address);
                            connected.set_value(broken_);
                          } else {
                            broken_ = Status::IOError("connect to " + options_.address + ": " +
                                                      connect_ec.message());
                            connected.set_value(broken_);
                          }
                        });
  });
  if (Status s = connected.get_future().get(); !s.ok()) return s;

  std::promise<Status> greeted;
  const uint64_t id = next_id_++;
  Send(id, EncodeHello(id, options_.client_name), options_.connect_timeout_ms,
       [&](Status status, const wire::Frame* frame) {
         if (status.ok()) status = DecodeError(frame->error());
         if (status.ok()) {
           const wire::HelloReply* reply = frame->body_as_HelloReply();
           if (reply == nullptr) {
             status = Status::Corruption("expected HelloReply");
           } else if (reply->protocol_version() != kProtocolVersion) {
             status = Status::NotSupported("server speaks protocol version " +
                                           std::to_string(reply->protocol_version()));
           } else {
             info_ = DecodeHelloReply(*reply);
           }
         }
         greeted.set_value(status);
       });
  return greeted.get_future().get();
}

void ClientImpl::Send(uint64_t id, FrameBytes frame, int64_t timeout_ms, OnResponse on_response) {
  // The frame is built; everything else happens on the I/O thread.
  asio::post(io_, [this, id, timeout_ms, frame = std::move(frame),
                   on_response = std::move(on_response)]() mutable {
    if (!broken_.ok()) {
      on_response(broken_, nullptr);
      return;
    }
    if (info_.max_frame_bytes != 0 && frame.size() - 4 > info_.max_frame_bytes) {
      on_response(Status::InvalidArgument("request frame of " + std::to_string(frame.size() - 4) +
                                          " bytes exceeds the server's max_frame_bytes " +
                                          std::to_string(info_.max_frame_bytes)),
                  nullptr);
      return;
    }
    auto timer = std::make_unique<asio::steady_timer>(io_);
    timer->expires_after(std::chrono::milliseconds(timeout_ms));
    timer->async_wait([this, id](const boost::system::error_code& ec) {
      if (ec) return;
      auto it = waiting_.find(id);
      if (it == waiting_.end()) return;
      OnResponse late = std::move(it->second.on_response);
      waiting_.erase(it);
      late(Status::TimedOut("no response within " + std::to_string(options_.request_timeout_ms) +
                            " ms"),
           nullptr);
    });
    waiting_.emplace(id, Waiting{std::move(on_response), std::move(timer)});
    outbox_.push_back(std::move(frame));
    DoWrite();
  });
}

void ClientImpl::DoWrite() {
  if (writing_active_ || outbox_.empty() || !broken_.ok()) return;
  std::vector<asio::const_buffer> buffers;
  while (!outbox_.empty()) {
    writing_.push_back(std::move(outbox_.front()));
    outbox_.pop_front();
    buffers.emplace_back(writing_.back().data(), writing_.back().size());
  }
  writing_active_ = true;
  asio::async_write(socket_, buffers, [this](const boost::system::error_code& ec, size_t) {
    writing_active_ = false;
    writing_.clear();
    if (ec) {
      FailAll(Status::IOError("write to " + options_.address + ": " + ec.message()));
      return;
    }
    DoWrite();
  });
}

void ClientImpl::DoRead() {
  socket_.async_read_some(asio::buffer(read_buf_), [this](const boost::system::error_code& ec,
                                                          size_t n) {
    if (ec) {
      FailAll(Status::IOError(ec == asio::error::eof
                                  ? "connection closed by the server " + options_.address
                                  : "read from " + options_.address + ": " + ec.message()));
      return;
    }
    size_t offset = 0;
    while (offset < n && broken_.ok()) {
      size_t consumed = 0;
      FrameParser::State state = parser_.Feed(read_buf_.data() + offset, n - offset, &consumed);
      offset += consumed;
      if (state == FrameParser::State::kBad) {
        FailAll(Status::Corruption("response frame length " +
                                   std::to_string(parser_.bad_length()) +
                                   " is outside 1..max_frame_bytes"));
        return;
      }
      if (state == FrameParser::State::kComplete) OnFrame(parser_.TakeFrame());
    }
    if (broken_.ok()) DoRead();
  });
}

void ClientImpl::OnFrame(std::vector<uint8_t> body) {
  const wire::Frame* frame = VerifyFrame(body.data(), body.size());
  if (frame == nullptr) {
    FailAll(Status::Corruption("response frame failed verification"));
    return;
  }
  if (frame->id() == 0) {  // a connection-level error: the server closes after it
    Status error = DecodeError(frame->error());
    FailAll(error.ok() ? Status::IOError("server sent a frame with id 0") : error);
    return;
  }
  auto it = waiting_.find(frame->id());
  if (it == waiting_.end()) return;  // timed out earlier
  OnResponse on_response = std::move(it->second.on_response);
  it->second.timer->cancel();
  waiting_.erase(it);
  on_response(Status::Ok(), frame);
}

void ClientImpl::FailAll(const Status& status) {
  if (broken_.ok()) broken_ = status;
  boost::system::error_code ec;
  socket_.close(ec);
  auto waiting = std::move(waiting_);
  waiting_.clear();
  outbox_.clear();
  for (auto& [id, w] : waiting) {
    w.timer->cancel();
    w.on_response(status, nullptr);
  }
}

void ClientImpl::ApplyAsync(std::span<const Op> ops, Callback done) {
  const uint64_t id = next_id_++;
  const size_t expected = ops.size();
  Send(id, EncodeApplyRequest(id, ops), options_.request_timeout_ms,
       [expected, done = std::move(done)](Status status, const wire::Frame* frame) {
         std::vector<Result<OpResult>> results;
         if (status.ok()) status = DecodeError(frame->error());
         if (status.ok()) {
           const wire::ApplyResponse* response = frame->body_as_ApplyResponse();
           const size_t n = response && response->results() ? response->results()->size() : 0;
           if (response == nullptr || n != expected) {
             status = Status::Corruption("expected " + std::to_string(expected) +
                                         " results, got " + std::to_string(n));
           } else {
             results.reserve(n);
             for (const wire::OpResult* r : *response->results()) {
               results.push_back(DecodeOpResult(*r));
             }
           }
         }
         done(std::move(status), std::move(results));
       });
}

Status ClientImpl::Apply(std::span<const Op> ops, std::vector<Result<OpResult>>* results) {
  results->clear();
  if (OnIoThread()) {
    return Status::InvalidArgument("Client::Apply called from a Client callback; use ApplyAsync");
  }
  std::promise<Status> promise;
  ApplyAsync(ops, [&](Status status, std::vector<Result<OpResult>> r) {
    *results = std::move(r);
    promise.set_value(std::move(status));
  });
  return promise.get_future().get();
}

Result<StoreStats> ClientImpl::Stats() {
  if (OnIoThread()) {
    return Status::InvalidArgument("Client::Stats called from a Client callback");
  }
  std::promise<Result<StoreStats>> promise;
  const uint64_t id = next_id_++;
  Send(id, EncodeStatsRequest(id), options_.request_timeout_ms,
       [&](Status status, const wire::Frame* frame) {
         if (status.ok()) status = DecodeError(frame->error());
         if (!status.ok()) {
           promise.set_value(status);
         } else if (const wire::StatsResponse* stats = frame->body_as_StatsResponse()) {
           promise.set_value(DecodeStats(*stats));
         } else {
           promise.set_value(Status::Corruption("expected StatsResponse"));
         }
       });
  return promise.get_future().get();
}

}  // namespace

Result<std::unique_ptr<Client>> Client::Connect(const ClientOptions& options) {
  auto client = std::make_unique<ClientImpl>(options);
  if (Status s = client->ConnectAndGreet(); !s.ok()) return s;
  return std::unique_ptr<Client>(std::move(client));
}

}  // namespace idem
