// The network Client. One TCP connection at a time (TLS over it with ClientOptions::tls), one I/O
// thread.
//
// Threads: callers of Apply/ApplyAsync/Stats encode their request on their own thread (so the
// caller's strings need not outlive the call) and post it to the I/O thread, which owns every
// other member: the socket, the link's state, the table of requests waiting for a response and
// their timers. Callbacks run on the I/O thread.
//
// The link: kDown --a call--> kConnecting (resolve, connect, Hello) --> kUp --lost--> kDown.
// Each connection (or attempt) has a generation. Disconnect moves it on, so a late completion
// of an old connection's read, write or timer finds it changed and does nothing: it cannot touch
// the connection that replaced its own.
#include "idem/client.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <deque>
#include <future>
#include <unordered_map>
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>

#include "frame_parser.h"
#include "protocol_codec.h"
#include "tls_context.h"

namespace idem {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;
// Shared by the completion handlers of its operations: after a disconnect it lives until the
// last of them has run (the socket under it is already serving the next connection).
using TlsStream = asio::ssl::stream<tcp::socket&>;

class ClientImpl final : public Client {
 public:
  explicit ClientImpl(const ClientOptions& options)
      : options_(options),
        work_(asio::make_work_guard(io_)),
        socket_(io_),
        resolver_(io_),
        connect_timer_(io_),
        backoff_ms_(options.reconnect_backoff_ms),
        parser_(options.max_frame_bytes) {
    thread_ = std::thread([this] { io_.run(); });
  }

  ~ClientImpl() override {
    asio::post(io_, [this] {
      Disconnect(Status::Shutdown("client closed"));
      link_ = Link::kClosed;  // calls still being posted fail with Shutdown too
    });
    work_.reset();
    thread_.join();  // returns once the socket is closed and no timer is pending
  }

  // The first connection, made before the Client is handed out.
  Status ConnectFirst();

  Status Apply(std::span<const Op> ops, std::vector<Result<OpResult>>* results) override;
  void ApplyAsync(std::span<const Op> ops, Callback done) override;
  Result<StoreStats> Stats() override;
  Result<ServerStats> GetServerStats() override;
  Result<BackupManifest> Backup(std::string_view to) override;
  // Sends the request `encode(id)` builds and waits for its Response body, which `decode` turns
  // into the answer; the server's error, or Corruption for another body, instead. `what` names
  // the call in errors.
  template <typename Response, typename T, typename Encode, typename Decode>
  Result<T> Ask(std::string_view what, Encode encode, Decode decode);
  Result<ScanPage> Scan(const ScanRequest& request) override;
  Result<PurgeStep> Purge(const PurgeRequest& request) override;
  Status Compact(std::string_view ns) override;
  const ServerInfo& server_info() const override { return info_; }

 private:
  enum class Link { kDown, kConnecting, kUp, kClosed };

  // Called once per request with the verified response frame, or with a non-ok Status and null.
  // `frame_bytes` is the size of the frame's body.
  using OnResponse =
      std::function<void(Status status, const wire::Frame* frame, size_t frame_bytes)>;
  struct Waiting {
    OnResponse on_response;
    std::unique_ptr<asio::steady_timer> timer;  // null for the Hello (connect_timer_ bounds it)
  };

  // Any thread: sends `frame` (request `id`) and arranges for `on_response`, with
  // TimedOut after request_timeout_ms.
  void Send(uint64_t id, FrameBytes frame, OnResponse on_response);
  bool OnIoThread() const { return std::this_thread::get_id() == thread_.get_id(); }

  // I/O thread only, from here on.
  Status Admit(size_t frame_body_bytes);
  void StartConnecting();
  void SendHello();
  Status AcceptHello(const wire::Frame& frame);
  // Connected over TCP: the TLS handshake (ClientOptions::tls), then the Hello.
  void OnTcpConnected();
  void Connected();
  void Disconnect(const Status& why);
  void DoWrite();
  void DoRead();
  void OnFrame(std::vector<uint8_t> body);

  const ClientOptions options_;
  std::string host_, port_;  // options_.address, split; set before the I/O thread reads them
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  tcp::socket socket_;
  std::shared_ptr<asio::ssl::context> tls_context_;  // null: plain TCP
  std::string tls_server_name_;
  std::shared_ptr<TlsStream> tls_;  // this connection's TLS session over socket_
  tcp::resolver resolver_;
  asio::steady_timer connect_timer_;  // bounds an attempt: resolve, connect and Hello
  std::thread thread_;
  std::atomic<uint64_t> next_id_{1};
  ServerInfo info_;  // written once, by the first Hello, before the Client is handed out

  Link link_ = Link::kDown;
  uint64_t generation_ = 0;
  std::function<void(Status)> on_first_connect_;
  size_t server_max_frame_bytes_ = 0;  // from the latest Hello
  Status last_error_;                  // why the link is down
  Clock::time_point next_attempt_at_;  // after a failed attempt, calls fail at once until then
  int64_t backoff_ms_;

  FrameParser parser_;
  std::array<uint8_t, 64 * 1024> read_buf_;
  std::unordered_map<uint64_t, Waiting> waiting_;
  std::deque<FrameBytes> outbox_;                     // for the connection that is up
  std::deque<std::pair<uint64_t, FrameBytes>> held_;  // requests waiting for the Hello
  bool writing_active_ = false;
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

Status ClientImpl::ConnectFirst() {
  std::tie(host_, port_) = SplitAddress(options_.address);
  if (host_.empty() || port_.empty()) {
    return Status::InvalidArgument("address \"" + options_.address + "\" is not HOST:PORT");
  }
  if (options_.tls) {
    Result<std::shared_ptr<asio::ssl::context>> context = MakeClientTlsContext(*options_.tls);
    if (!context.ok()) return context.status();
    tls_context_ = std::move(*context);
    tls_server_name_ = options_.tls->server_name.empty() ? host_ : options_.tls->server_name;
  }
  std::promise<Status> done;
  asio::post(io_, [&] {
    on_first_connect_ = [&](Status status) { done.set_value(std::move(status)); };
    StartConnecting();
  });
  return done.get_future().get();
}

void ClientImpl::Send(uint64_t id, FrameBytes frame, OnResponse on_response) {
  // The frame is built; everything else happens on the I/O thread.
  asio::post(io_,
             [this, id, frame = std::move(frame), on_response = std::move(on_response)]() mutable {
               if (Status refused = Admit(frame.size() - 4); !refused.ok()) {
                 on_response(refused, nullptr, 0);
                 return;
               }
               auto timer = std::make_unique<asio::steady_timer>(io_);
               timer->expires_after(std::chrono::milliseconds(options_.request_timeout_ms));
               timer->async_wait([this, id](const boost::system::error_code& ec) {
                 if (ec) return;
                 auto it = waiting_.find(id);
                 if (it == waiting_.end()) return;
                 OnResponse late = std::move(it->second.on_response);
                 waiting_.erase(it);
                 late(Status::TimedOut("no response within " +
                                       std::to_string(options_.request_timeout_ms) + " ms"),
                      nullptr, 0);
               });
               waiting_.emplace(id, Waiting{std::move(on_response), std::move(timer)});
               if (link_ == Link::kUp) {
                 outbox_.push_back(std::move(frame));
                 DoWrite();
               } else {
                 held_.emplace_back(id, std::move(frame));
               }
             });
}

// Whether a request may go out; starts connecting when the link is down and may come up.
Status ClientImpl::Admit(size_t frame_body_bytes) {
  if (link_ == Link::kClosed) return Status::Shutdown("client closed");
  if (server_max_frame_bytes_ != 0 && frame_body_bytes > server_max_frame_bytes_) {
    return Status::InvalidArgument("request frame of " + std::to_string(frame_body_bytes) +
                                   " bytes exceeds the server's max_frame_bytes " +
                                   std::to_string(server_max_frame_bytes_));
  }
  if (link_ != Link::kDown) return Status::Ok();
  if (!options_.reconnect) return last_error_;
  const Clock::time_point now = Clock::now();
  if (now < next_attempt_at_) {
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(next_attempt_at_ - now);
    return Status::FromCode(
        static_cast<uint32_t>(last_error_.code()),
        last_error_.message() + "; next attempt in " + std::to_string(wait.count()) + " ms");
  }
  StartConnecting();
  return Status::Ok();
}

void ClientImpl::StartConnecting() {
  link_ = Link::kConnecting;
  const uint64_t generation = ++generation_;
  connect_timer_.expires_after(std::chrono::milliseconds(options_.connect_timeout_ms));
  connect_timer_.async_wait([this, generation](const boost::system::error_code& ec) {
    if (ec || generation != generation_) return;
    Disconnect(Status::TimedOut("connect to " + options_.address + ": no handshake within " +
                                std::to_string(options_.connect_timeout_ms) + " ms"));
  });
  resolver_.async_resolve(
      host_, port_,
      [this, generation](const boost::system::error_code& ec,
                         tcp::resolver::results_type endpoints) {
        if (generation != generation_) return;
        if (ec) {
          Disconnect(Status::IOError("resolve " + options_.address + ": " + ec.message()));
          return;
        }
        asio::async_connect(
            socket_, endpoints,
            [this, generation](const boost::system::error_code& connect_ec, const tcp::endpoint&) {
              if (generation != generation_) return;
              if (connect_ec) {
                Disconnect(Status::IOError("connect to " + options_.address + ": " +
                                           connect_ec.message()));
                return;
              }
              boost::system::error_code ignored;
              socket_.set_option(tcp::no_delay(true), ignored);
              OnTcpConnected();
            });
      });
}

void ClientImpl::OnTcpConnected() {
  if (!tls_context_) {
    DoRead();
    SendHello();
    return;
  }
  tls_ = std::make_shared<TlsStream>(socket_, *tls_context_);
  if (Status s = ConfigureClientTls(tls_->native_handle(), tls_server_name_); !s.ok()) {
    Disconnect(s);
    return;
  }
  tls_->async_handshake(
      asio::ssl::stream_base::client,
      [this, tls = tls_, generation = generation_](const boost::system::error_code& ec) {
        if (generation != generation_) return;
        if (ec) {
          Disconnect(Status::IOError("TLS handshake with " + options_.address +
                                     " failed: " + TlsErrorReason(ec, tls->native_handle())));
          return;
        }
        DoRead();
        SendHello();
      });
}

// The Hello goes out alone; the calls made meanwhile are held until its reply.
void ClientImpl::SendHello() {
  const uint64_t id = next_id_++;
  const uint64_t generation = generation_;
  waiting_.emplace(id, Waiting{[this, generation](Status status, const wire::Frame* frame, size_t) {
                                 if (generation != generation_) return;  // already failed
                                 if (status.ok()) status = AcceptHello(*frame);
                                 if (status.ok()) {
                                   Connected();
                                 } else {
                                   Disconnect(status);
                                 }
                               },
                               nullptr});
  outbox_.push_back(EncodeHello(id, options_.client_name, options_.token));
  DoWrite();
}

Status ClientImpl::AcceptHello(const wire::Frame& frame) {
  if (Status error = DecodeError(frame.error()); !error.ok()) return error;
  const wire::HelloReply* reply = frame.body_as_HelloReply();
  if (reply == nullptr) return Status::Corruption("expected HelloReply");
  if (reply->protocol_version() != kProtocolVersion) {
    return Status::NotSupported("server speaks protocol version " +
                                std::to_string(reply->protocol_version()));
  }
  ServerInfo info = DecodeHelloReply(*reply);
  server_max_frame_bytes_ = info.max_frame_bytes;
  // Responses may be as large as the server says they can be, up to our own cap (a server may
  // announce 4 GiB); a server that does not say is held to our own limit.
  parser_.set_max_frame_bytes(info.max_reply_bytes != 0
                                  ? std::min<size_t>(info.max_reply_bytes, options_.max_reply_bytes)
                                  : std::min(options_.max_frame_bytes, options_.max_reply_bytes));
  if (on_first_connect_) info_ = std::move(info);  // read by callers only after this
  return Status::Ok();
}

void ClientImpl::Connected() {
  link_ = Link::kUp;
  connect_timer_.cancel();
  backoff_ms_ = options_.reconnect_backoff_ms;
  for (auto& [id, frame] : held_) {
    if (waiting_.count(id) != 0) outbox_.push_back(std::move(frame));  // else it timed out
  }
  held_.clear();
  DoWrite();
  if (on_first_connect_) std::exchange(on_first_connect_, nullptr)(Status::Ok());
}

// Ends the connection or the attempt: every call waiting on it fails with `why`. A failed
// attempt also sets the time before which calls fail at once instead of connecting.
void ClientImpl::Disconnect(const Status& why) {
  if (link_ == Link::kConnecting) {
    // A refused token is refused again until the server's credentials change, and every refusal
    // counts against this address's failure limit, which also bars the other clients behind it.
    const int64_t wait_ms = why.IsUnauthenticated()
                                ? std::max(backoff_ms_, ClientOptions::kRefusedTokenRetryMs)
                                : backoff_ms_;
    next_attempt_at_ = Clock::now() + std::chrono::milliseconds(wait_ms);
    backoff_ms_ = std::min(backoff_ms_ * 2, options_.reconnect_backoff_max_ms);
  }
  link_ = Link::kDown;
  last_error_ = why;
  ++generation_;
  boost::system::error_code ignored;
  socket_.close(ignored);
  tls_.reset();
  resolver_.cancel();
  connect_timer_.cancel();
  parser_.Reset();
  writing_active_ = false;
  outbox_.clear();
  held_.clear();
  auto waiting = std::move(waiting_);
  waiting_.clear();
  for (auto& [id, w] : waiting) {
    if (w.timer) w.timer->cancel();
    w.on_response(why, nullptr, 0);
  }
  if (on_first_connect_) std::exchange(on_first_connect_, nullptr)(why);
}

void ClientImpl::DoWrite() {
  if (writing_active_ || outbox_.empty()) return;
  // The batch belongs to this write (and its generation): a new connection never shares it.
  auto batch = std::make_shared<std::vector<FrameBytes>>(std::make_move_iterator(outbox_.begin()),
                                                         std::make_move_iterator(outbox_.end()));
  outbox_.clear();
  std::vector<asio::const_buffer> buffers;
  buffers.reserve(batch->size());
  for (const FrameBytes& frame : *batch) buffers.emplace_back(frame.data(), frame.size());
  writing_active_ = true;
  auto on_written = [this, batch, tls = tls_, generation = generation_](
                        const boost::system::error_code& ec, size_t) {
    if (generation != generation_) return;
    writing_active_ = false;
    if (ec) {
      Disconnect(Status::IOError("write to " + options_.address + ": " + ec.message()));
      return;
    }
    DoWrite();
  };
  if (tls_) {
    // One buffer, so that the batch is one TLS record rather than one per request.
    auto joined = std::make_shared<std::vector<uint8_t>>();
    for (const FrameBytes& frame : *batch) {
      joined->insert(joined->end(), frame.data(), frame.data() + frame.size());
    }
    asio::async_write(*tls_, asio::buffer(*joined),
                      [joined, on_written = std::move(on_written)](
                          const boost::system::error_code& ec, size_t n) { on_written(ec, n); });
  } else {
    asio::async_write(socket_, buffers, std::move(on_written));
  }
}

void ClientImpl::DoRead() {
  auto on_read = [this, tls = tls_, generation = generation_](const boost::system::error_code& ec,
                                                              size_t n) {
    if (generation != generation_) return;
    if (ec) {
      // A TLS server may close without a close_notify (stream_truncated): still a close.
      const bool closed = ec == asio::error::eof || ec == asio::ssl::error::stream_truncated;
      Disconnect(Status::IOError(closed ? "connection closed by the server " + options_.address
                                        : "read from " + options_.address + ": " + ec.message()));
      return;
    }
    size_t offset = 0;
    while (offset < n) {
      size_t consumed = 0;
      FrameParser::State state = parser_.Feed(read_buf_.data() + offset, n - offset, &consumed);
      offset += consumed;
      if (state == FrameParser::State::kBad) {
        Disconnect(Status::Corruption(
            "response frame length " + std::to_string(parser_.bad_length()) + " is outside 1.." +
            std::to_string(parser_.max_frame_bytes()) +
            " (the server's max_reply_bytes capped by ClientOptions::max_reply_bytes, or"
            " ClientOptions::max_frame_bytes)"));
        return;
      }
      if (state == FrameParser::State::kComplete) {
        OnFrame(parser_.TakeFrame());
        if (generation != generation_) return;  // the frame ended the connection
      }
    }
    DoRead();
  };
  if (tls_) {
    tls_->async_read_some(asio::buffer(read_buf_), std::move(on_read));
  } else {
    socket_.async_read_some(asio::buffer(read_buf_), std::move(on_read));
  }
}

void ClientImpl::OnFrame(std::vector<uint8_t> body) {
  const wire::Frame* frame = VerifyFrame(body.data(), body.size());
  if (frame == nullptr) {
    Disconnect(Status::Corruption("response frame failed verification"));
    return;
  }
  if (frame->id() == 0) {  // a connection-level error: the server closes after it
    Status error = DecodeError(frame->error());
    Disconnect(error.ok() ? Status::IOError("server sent a frame with id 0") : error);
    return;
  }
  auto it = waiting_.find(frame->id());
  if (it == waiting_.end()) return;  // timed out earlier
  OnResponse on_response = std::move(it->second.on_response);
  if (it->second.timer) it->second.timer->cancel();
  waiting_.erase(it);
  on_response(Status::Ok(), frame, body.size());
}

void ClientImpl::ApplyAsync(std::span<const Op> ops, Callback done) {
  const uint64_t id = next_id_++;
  const size_t expected = ops.size();
  Send(id, EncodeApplyRequest(id, ops),
       [expected, done = std::move(done)](Status status, const wire::Frame* frame,
                                          size_t frame_bytes) {
         std::vector<Result<OpResult>> results;
         if (status.ok()) status = DecodeApplyResponse(*frame, frame_bytes, expected, &results);
         if (!status.ok()) results.clear();
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
  Result<ServerStats> stats = GetServerStats();
  if (!stats.ok()) return stats.status();
  return std::move(stats->store);
}

Result<ServerStats> ClientImpl::GetServerStats() {
  if (OnIoThread()) {
    return Status::InvalidArgument("Client::Stats called from a Client callback");
  }
  std::promise<Result<ServerStats>> promise;
  const uint64_t id = next_id_++;
  Send(id, EncodeStatsRequest(id), [&](Status status, const wire::Frame* frame, size_t) {
    if (status.ok()) status = DecodeError(frame->error());
    const wire::StatsResponse* response = status.ok() ? frame->body_as_StatsResponse() : nullptr;
    if (!status.ok()) {
      promise.set_value(status);
    } else if (response == nullptr) {
      promise.set_value(Status::Corruption("expected StatsResponse"));
    } else {
      Result<StoreStats> store = DecodeStats(*response);
      Result<std::vector<MetricFamily>> metrics = DecodeMetrics(*response);
      if (!store.ok()) {
        promise.set_value(store.status());
      } else if (!metrics.ok()) {
        promise.set_value(metrics.status());
      } else {
        promise.set_value(ServerStats{std::move(*store), std::move(*metrics)});
      }
    }
  });
  return promise.get_future().get();
}

Result<BackupManifest> ClientImpl::Backup(std::string_view to) {
  if (OnIoThread()) {
    return Status::InvalidArgument("Client::Backup called from a Client callback");
  }
  std::promise<Result<BackupManifest>> promise;
  const uint64_t id = next_id_++;
  Send(id, EncodeBackupRequest(id, to), [&](Status status, const wire::Frame* frame, size_t) {
    if (status.ok()) status = DecodeError(frame->error());
    const wire::BackupResponse* response = status.ok() ? frame->body_as_BackupResponse() : nullptr;
    if (!status.ok()) {
      promise.set_value(status);
    } else if (response == nullptr) {
      promise.set_value(Status::Corruption("expected BackupResponse"));
    } else {
      promise.set_value(DecodeBackupResponse(*response));
    }
  });
  return promise.get_future().get();
}

template <typename Response, typename T, typename Encode, typename Decode>
Result<T> ClientImpl::Ask(std::string_view what, Encode encode, Decode decode) {
  if (OnIoThread()) {
    return Status::InvalidArgument("Client::" + std::string(what) +
                                   " called from a Client callback");
  }
  std::promise<Result<T>> promise;
  const uint64_t id = next_id_++;
  Send(id, encode(id), [&](Status status, const wire::Frame* frame, size_t frame_bytes) {
    if (status.ok()) status = DecodeError(frame->error());
    const Response* response = status.ok() ? frame->body_as<Response>() : nullptr;
    if (!status.ok()) {
      promise.set_value(status);
    } else if (response == nullptr) {
      promise.set_value(Status::Corruption("expected " + std::string(what) + "'s response"));
    } else {
      promise.set_value(decode(*response, frame_bytes));
    }
  });
  return promise.get_future().get();
}

Result<ScanPage> ClientImpl::Scan(const ScanRequest& request) {
  return Ask<wire::ScanResponse, ScanPage>(
      "Scan", [&](uint64_t id) { return EncodeScanRequest(id, request); },
      [](const wire::ScanResponse& response, size_t frame_bytes) {
        return DecodeScanResponse(response, frame_bytes);
      });
}

Result<PurgeStep> ClientImpl::Purge(const PurgeRequest& request) {
  return Ask<wire::PurgeResponse, PurgeStep>(
      "Purge", [&](uint64_t id) { return EncodePurgeRequest(id, request); },
      [](const wire::PurgeResponse& response, size_t) -> Result<PurgeStep> {
        return DecodePurgeResponse(response);
      });
}

Status ClientImpl::Compact(std::string_view ns) {
  Result<bool> done = Ask<wire::CompactResponse, bool>(
      "Compact", [&](uint64_t id) { return EncodeCompactRequest(id, ns); },
      [](const wire::CompactResponse&, size_t) -> Result<bool> { return true; });
  return done.ok() ? Status::Ok() : done.status();
}

}  // namespace

Result<std::unique_ptr<Client>> Client::Connect(const ClientOptions& options) {
  auto client = std::make_unique<ClientImpl>(options);
  if (Status s = client->ConnectFirst(); !s.ok()) return s;
  return std::unique_ptr<Client>(std::move(client));
}

}  // namespace idem
