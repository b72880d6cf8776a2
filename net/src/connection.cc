#include "connection.h"

#include <cassert>

namespace idem {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

Connection::Connection(tcp::socket socket, RequestHandler* handler, const Options& options,
                       OnClosed on_closed)
    : socket_(std::move(socket)),
      timer_(socket_.get_executor()),
      handler_(handler),
      options_(options),
      on_closed_(std::move(on_closed)),
      parser_(options.max_frame_bytes) {
  boost::system::error_code ec;
  tcp::endpoint remote = socket_.remote_endpoint(ec);
  peer_ = ec ? std::string("unknown peer")
             : remote.address().to_string() + ":" + std::to_string(remote.port());
  if (!ec) session_.peer_address = remote.address().to_string();
  socket_.set_option(tcp::no_delay(true), ec);  // responses are small and latency-bound
}

void Connection::Start() {
  asio::dispatch(socket_.get_executor(), [self = shared_from_this()] {
    self->last_activity_ = Clock::now();
    self->ArmTimer();
    self->DoRead();
  });
}

void Connection::Reject(const Status& error) {
  asio::dispatch(socket_.get_executor(), [self = shared_from_this(), error] { self->Fail(error); });
}

void Connection::Drain() {
  asio::dispatch(socket_.get_executor(), [self = shared_from_this()] {
    if (self->state_ == State::kClosed) return;
    self->StopInput();
    self->buf_begin_ = self->buf_end_;  // requests not yet handed over are never started
    self->MaybeFinish();
  });
}

void Connection::Close() {
  asio::dispatch(socket_.get_executor(), [self = shared_from_this()] { self->CloseNow(); });
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
    case State::kDraining:
    case State::kClosing:  // no new requests
    case State::kClosed:
      return;
  }
  reading_ = true;
  socket_.async_read_some(asio::buffer(read_buf_),
                          [self = shared_from_this()](const boost::system::error_code& ec,
                                                      size_t n) { self->OnRead(ec, n); });
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

void Connection::ProcessBuffered() {
  while (buf_begin_ < buf_end_ && inflight_ < options_.max_inflight &&
         queued_bytes_ < options_.max_queued_reply_bytes && state_ == State::kOpen) {
    size_t consumed = 0;
    FrameParser::State state =
        parser_.Feed(read_buf_.data() + buf_begin_, buf_end_ - buf_begin_, &consumed);
    buf_begin_ += consumed;
    if (state == FrameParser::State::kBad) {
      Status error = Status::InvalidArgument(
          "frame length " + std::to_string(parser_.bad_length()) + " is outside 1.." +
          std::to_string(parser_.max_frame_bytes()) + " (max_frame_bytes)");
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
  asio::async_write(socket_, buffers,
                    [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
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
                    });
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
    case State::kOpen:
    case State::kLingering:
    case State::kClosed:
      break;
  }
}

void Connection::ArmTimer() {
  timer_.expires_at(closing()
                        ? close_deadline_
                        : last_activity_ + std::chrono::milliseconds(options_.idle_timeout_ms));
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
  } else if (now >= last_activity_ + std::chrono::milliseconds(options_.idle_timeout_ms)) {
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
