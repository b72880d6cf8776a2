#include "connection.h"

#include <algorithm>
#include <cassert>

#include <boost/asio/ssl.hpp>

#include "listen_socket.h"
#include "tls_context.h"

namespace idem {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

struct Connection::TlsLayer {
  TlsLayer(tcp::socket& socket, asio::ssl::context& context) : stream(socket, context) {}

  asio::ssl::stream<tcp::socket&> stream;
  // A write's frames copied into one buffer: Asio encrypts a buffer sequence one buffer at a
  // time, which would make a pipelined batch one TLS record and one syscall per response.
  std::vector<uint8_t> gathered;
};

Connection::Connection(tcp::socket socket, RequestHandler* handler, const Options& options,
                       OnClosed on_closed)
    : socket_(std::move(socket)),
      timer_(socket_.get_executor()),
      handler_(handler),
      options_(options),
      on_closed_(std::move(on_closed)),
      parser_(std::min(options.max_frame_bytes, kMaxHelloFrameBytes)),
      state_(options.tls ? State::kHandshaking : State::kOpen) {
  if (options_.tls) tls_ = std::make_unique<TlsLayer>(socket_, *options_.tls);
  PeerIdentity peer = DescribePeer(socket_);
  peer_ = std::move(peer.name);
  session_.peer_address = std::move(peer.address);
  boost::system::error_code ec;
  socket_.set_option(tcp::no_delay(true), ec);  // responses are small and latency-bound
}

Connection::~Connection() = default;

void Connection::Start() {
  asio::dispatch(socket_.get_executor(), [self = shared_from_this()] {
    self->last_activity_ = Clock::now();
    self->greeting_deadline_ =
        self->last_activity_ + std::chrono::milliseconds(self->options_.auth_timeout_ms);
    self->ArmTimer();
    self->Handshake([self] { self->DoRead(); });
  });
}

void Connection::Reject(const Status& error) {
  asio::dispatch(socket_.get_executor(), [self = shared_from_this(), error] {
    // Over TLS the refusal needs a session to travel in; the deadlines bound its handshake.
    self->last_activity_ = Clock::now();
    self->greeting_deadline_ =
        self->last_activity_ + std::chrono::milliseconds(self->options_.auth_timeout_ms);
    self->ArmTimer();
    self->Handshake([self, error] { self->Fail(error); });
  });
}

void Connection::Drain() {
  asio::dispatch(socket_.get_executor(), [self = shared_from_this()] {
    if (self->state_ == State::kClosed) return;
    if (self->state_ == State::kHandshaking) {  // nothing read, nothing to answer
      self->CloseNow();
      return;
    }
    self->StopInput();
    self->buf_begin_ = self->buf_end_;  // requests not yet handed over are never started
    self->MaybeFinish();
  });
}

void Connection::Close() {
  asio::dispatch(socket_.get_executor(), [self = shared_from_this()] { self->CloseNow(); });
}

void Connection::Handshake(std::function<void()> next) {
  if (!tls_) {
    next();
    return;
  }
  tls_->stream.async_handshake(
      asio::ssl::stream_base::server,
      [self = shared_from_this(), next = std::move(next)](const boost::system::error_code& ec) {
        if (self->state_ == State::kClosed) return;  // closed meanwhile (a deadline, Close())
        if (ec) {
          const std::string reason = TlsErrorReason(ec, self->tls_->stream.native_handle());
          if (self->options_.metrics) self->options_.metrics->TlsHandshakeFailed();
          self->Log(LogRecord(LogLevel::kWarn, "tls_handshake_failed",
                              "TLS handshake failed: " + reason + "; closing")
                        .With("reason", reason));
          self->CloseNow();
          return;
        }
        self->TransitionTo(State::kOpen);
        next();
      });
}

void Connection::DoRead() {
  if (reading_ || input_stopped_) return;
  switch (state_) {
    case State::kOpen:
      if (inflight_ >= options_.max_inflight || buf_begin_ < buf_end_ ||
          queued_bytes_ >= options_.max_queued_reply_bytes) {
        return;
      }
      break;
    case State::kLingering:  // input is discarded until EOF
      break;
    case State::kHandshaking:
    case State::kDraining:
    case State::kClosing:  // no new requests
    case State::kClosed:
      return;
  }
  reading_ = true;
  auto on_read = [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
    self->OnRead(ec, n);
  };
  // Input discarded while lingering is not worth decrypting: it is read off the TCP socket.
  if (tls_ && state_ == State::kOpen) {
    tls_->stream.async_read_some(asio::buffer(read_buf_), std::move(on_read));
  } else {
    socket_.async_read_some(asio::buffer(read_buf_), std::move(on_read));
  }
}

void Connection::OnRead(const boost::system::error_code& ec, size_t n) {
  reading_ = false;
  if (state_ == State::kClosed) return;
  if (ec) {
    if (ec == asio::error::eof && !closing()) {
      // The peer finished sending; it may still be waiting for the responses.
      StopInput();
      MaybeFinish();
    } else {
      CloseNow();
    }
    return;
  }
  if (state_ != State::kOpen) {  // discarding
    DoRead();
    return;
  }
  if (options_.metrics) options_.metrics->BytesReceived(Transport::kBinary, n);
  buf_begin_ = 0;
  buf_end_ = n;
  ProcessBuffered();
}

namespace {
// A TLS ClientHello's record header: handshake (22), then version 3.1-3.3 (TLS 1.0-1.2; 1.3
// sends 3.1 here too). As a frame prefix it reads 66,326 bytes or more, so without this check a
// TLS client on a plain port would wait for a handshake while the server waits for the rest of
// a "frame"; no Hello is that long.
bool LooksLikeTlsClientHello(const uint8_t* data, size_t size) {
  return size >= 3 && data[0] == 0x16 && data[1] == 0x03 && data[2] >= 0x01 && data[2] <= 0x03;
}
}  // namespace

void Connection::ProcessBuffered() {
  while (buf_begin_ < buf_end_ && inflight_ < options_.max_inflight &&
         queued_bytes_ < options_.max_queued_reply_bytes && state_ == State::kOpen) {
    if (!tls_ && !session_.greeted && parser_.AtFrameStart() &&
        LooksLikeTlsClientHello(read_buf_.data() + buf_begin_, buf_end_ - buf_begin_)) {
      Status error = Status::InvalidArgument(
          "received a TLS handshake: this port speaks the idemstore protocol without TLS");
      Log(LogRecord(LogLevel::kWarn, "bad_frame", "closing: " + error.ToString())
              .With("code", std::string(CodeName(error.code()))));
      if (options_.metrics) options_.metrics->ProtocolError(error.code());
      Fail(error);
      return;
    }
    size_t consumed = 0;
    FrameParser::State state =
        parser_.Feed(read_buf_.data() + buf_begin_, buf_end_ - buf_begin_, &consumed);
    buf_begin_ += consumed;
    if (state == FrameParser::State::kBad) {
      Status error = Status::InvalidArgument(
          "frame length " + std::to_string(parser_.bad_length()) + " is outside 1.." +
          std::to_string(parser_.max_frame_bytes()) +
          (session_.greeted ? " (max_frame_bytes)" : " (the first frame is a Hello)"));
      Log(LogRecord(LogLevel::kWarn, "bad_frame", "closing: " + error.ToString())
              .With("code", std::string(CodeName(error.code()))));
      if (options_.metrics) options_.metrics->ProtocolError(error.code());
      Fail(error);
      return;
    }
    if (state != FrameParser::State::kComplete) continue;

    last_activity_ = Clock::now();
    ++inflight_;
    ++in_engine_;
    auto self = shared_from_this();
    Status status = handler_->Handle(parser_.TakeFrame(), &session_, [self](FrameBytes frame) {
      // May run on an engine thread: hop onto this connection's strand (inline when already
      // there, as when the event loop applies the batch itself).
      asio::dispatch(self->socket_.get_executor(), [self, frame = std::move(frame)]() mutable {
        self->OnReply(std::move(frame));
      });
    });
    if (session_.greeted) parser_.set_max_frame_bytes(options_.max_frame_bytes);
    if (!status.ok()) {  // the handler's reply is the error frame; close once it is written
      // An authentication failure is no protocol error: the Authenticator counted and logged it.
      if (!status.IsUnauthenticated()) {
        Log(LogRecord(LogLevel::kWarn, "bad_request", "closing: " + status.ToString())
                .With("code", std::string(CodeName(status.code()))));
        if (options_.metrics) options_.metrics->ProtocolError(status.code());
      }
      BeginClosing();
    }
  }
  if (buf_begin_ == buf_end_) DoRead();
}

void Connection::OnReply(FrameBytes frame) {
  --in_engine_;
  if (state_ == State::kClosed) return;
  queued_bytes_ += frame.size();
  outbox_.push_back(Outgoing{std::move(frame), true});
  // The other replies of the same batch are on their way: write once they are all queued (one
  // syscall for a pipelined client's whole batch instead of one for the first reply and one
  // for the rest).
  if (write_scheduled_ || writing_active_) return;
  write_scheduled_ = true;
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    self->write_scheduled_ = false;
    self->DoWrite();
  });
}

void Connection::Send(FrameBytes frame) {
  queued_bytes_ += frame.size();
  outbox_.push_back(Outgoing{std::move(frame), false});
  DoWrite();
}

void Connection::DoWrite() {
  if (writing_active_ || state_ == State::kClosed) return;
  if (outbox_.empty()) {
    MaybeFinish();
    return;
  }
  // Gather every ready response into one write: under pipelining this is one syscall for many.
  std::vector<asio::const_buffer> buffers;
  buffers.reserve(outbox_.size());
  while (!outbox_.empty()) {
    writing_.push_back(std::move(outbox_.front()));
    outbox_.pop_front();
    buffers.emplace_back(writing_.back().bytes.data(), writing_.back().bytes.size());
  }
  writing_active_ = true;
  auto on_written = [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
    self->writing_active_ = false;
    if (self->options_.metrics) {
      self->options_.metrics->BytesSent(Transport::kBinary, n);
    }
    if (self->state_ == State::kClosed) return;
    if (ec) {
      self->CloseNow();
      return;
    }
    for (const Outgoing& out : self->writing_) {
      if (out.answers_request) --self->inflight_;
      self->queued_bytes_ -= out.bytes.size();
    }
    self->writing_.clear();
    self->last_activity_ = Clock::now();
    self->DoWrite();
    self->ProcessBuffered();  // reading resumes if the in-flight cap held it
  };
  if (tls_) {
    tls_->gathered.clear();
    for (const asio::const_buffer& b : buffers) {
      const auto* bytes = static_cast<const uint8_t*>(b.data());
      tls_->gathered.insert(tls_->gathered.end(), bytes, bytes + b.size());
    }
    asio::async_write(tls_->stream, asio::buffer(tls_->gathered), std::move(on_written));
  } else {
    asio::async_write(socket_, buffers, std::move(on_written));
  }
}

void Connection::MaybeFinish() {
  if (in_engine_ > 0 || writing_active_ || !outbox_.empty()) return;
  switch (state_) {
    case State::kClosing: {
      // Everything is written. Send FIN and read until the peer closes, so that bytes it sent
      // after the bad frame do not turn our close into a reset that could destroy the error
      // frame before the peer reads it. The close deadline bounds this.
      TransitionTo(State::kLingering);
      boost::system::error_code ec;
      socket_.shutdown(tcp::socket::shutdown_send, ec);
      DoRead();
      break;
    }
    case State::kDraining:
      CloseNow();
      break;
    case State::kHandshaking:
    case State::kOpen:
    case State::kLingering:
    case State::kClosed:
      break;
  }
}

void Connection::ArmTimer() {
  Clock::time_point at = last_activity_ + std::chrono::milliseconds(options_.idle_timeout_ms);
  if (closing()) {
    at = close_deadline_;
  } else if (options_.auth_timeout_ms > 0 && !session_.greeted) {
    at = std::min(at, greeting_deadline_);
  }
  timer_.expires_at(at);
  timer_.async_wait(
      [self = shared_from_this()](const boost::system::error_code& ec) { self->OnTimer(ec); });
}

void Connection::OnTimer(const boost::system::error_code& ec) {
  if (ec == asio::error::operation_aborted || state_ == State::kClosed) return;
  const Clock::time_point now = Clock::now();
  if (closing()) {
    if (now >= close_deadline_) {
      CloseNow();
      return;
    }
  } else if (GreetingOverdue(now)) {
    Log(LogRecord(LogLevel::kInfo, "auth_timeout",
                  "not greeted within " + std::to_string(options_.auth_timeout_ms) +
                      " ms (auth_timeout_ms); closing")
            .With("auth_timeout_ms", options_.auth_timeout_ms)
            .With("tls_handshake_done", state_ != State::kHandshaking ? "yes" : "no"));
    if (options_.metrics) options_.metrics->ConnectionTimedOut();
    if (state_ == State::kHandshaking) {  // no session to carry an error frame
      CloseNow();
      return;
    }
    Fail(Status::TimedOut("no Hello accepted within " + std::to_string(options_.auth_timeout_ms) +
                          " ms of connecting (auth_timeout_ms)"));
    return;  // Fail re-armed the timer
  } else if (now >= last_activity_ + std::chrono::milliseconds(options_.idle_timeout_ms)) {
    if (state_ == State::kHandshaking) {
      if (options_.metrics) options_.metrics->ConnectionTimedOut();
      CloseNow();
      return;
    }
    if (in_engine_ > 0) {
      last_activity_ = now;  // waiting on the server, not on the client
    } else {
      Log(LogRecord(LogLevel::kInfo, "idle_timeout",
                    "idle for " + std::to_string(options_.idle_timeout_ms) + " ms; closing")
              .With("idle_timeout_ms", options_.idle_timeout_ms));
      if (options_.metrics) options_.metrics->ConnectionTimedOut();
      Fail(Status::TimedOut("connection idle for " + std::to_string(options_.idle_timeout_ms) +
                            " ms"));
      return;  // Fail re-armed the timer
    }
  }
  ArmTimer();
}

bool Connection::GreetingOverdue(Clock::time_point now) const {
  return options_.auth_timeout_ms > 0 && !session_.greeted && now >= greeting_deadline_;
}

void Connection::Fail(const Status& error) {
  if (state_ != State::kOpen && state_ != State::kDraining) return;
  BeginClosing();
  Send(EncodeError(0, error));
}

void Connection::CloseNow() {
  if (state_ == State::kClosed) return;
  TransitionTo(State::kClosed);
  boost::system::error_code ec;
  timer_.cancel();
  socket_.close(ec);
  outbox_.clear();
  if (on_closed_) on_closed_(shared_from_this());
}

bool Connection::IsLegalTransition(State from, State to) {
  switch (from) {
    case State::kHandshaking:
      return to == State::kOpen || to == State::kClosed;
    case State::kOpen:
      return to == State::kDraining || to == State::kClosing || to == State::kClosed;
    case State::kDraining:
      return to == State::kClosing || to == State::kClosed;
    case State::kClosing:
      return to == State::kLingering || to == State::kClosed;
    case State::kLingering:
      return to == State::kClosed;
    case State::kClosed:
      return false;
  }
  return false;
}

void Connection::TransitionTo(State next) {
  assert(IsLegalTransition(state_, next));
  state_ = next;
}

void Connection::StopInput() {
  input_stopped_ = true;
  if (state_ == State::kOpen) TransitionTo(State::kDraining);
}

void Connection::BeginClosing() {
  TransitionTo(State::kClosing);
  close_deadline_ = Clock::now() + std::chrono::milliseconds(kLingerMs);
  ArmTimer();
}

void Connection::Log(LogRecord record) const {
  if (!options_.log) return;
  record.fields.insert(record.fields.begin(), LogField{"peer", peer_});
  options_.log(record);
}

}  // namespace idem
