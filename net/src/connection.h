// Connection: one accepted socket. Reads and parses frames, hands them to the RequestHandler,
// writes the responses in the order they become ready (one write in flight at a time, all
// ready responses gathered into it), and closes on protocol errors, idle timeout or Drain().
//
// Threads: every member is touched only on the connection's strand (the socket's executor),
// whichever of the server's I/O threads runs it. Replies arriving from engine threads are
// posted onto that strand. Start/Drain/Close may be called from any thread.
//
// Pipelining: a client may send requests without waiting for responses. Up to
// max_inflight requests are read ahead (counting those answered but not yet written); past
// that the connection stops reading, so a client that floods or stops reading gets TCP
// backpressure instead of growing the server's memory. Reading also stops while
// max_queued_reply_bytes of responses wait to be written: a few requests for large records
// would otherwise pile up far more memory than many small ones.
//
// Closing after an error: the error frame is written, then the sending side is shut down and
// incoming bytes are discarded until the peer closes (bounded by kLingerMs), so the peer reads
// the error instead of a connection reset.
//
// TLS (Options::tls): the server's handshake comes first, bounded by the greeting deadline
// (Options::auth_timeout_ms); a failed one is counted, logged and the connection closed. Then
// the same frames flow through the TLS session. The plain path pays one branch per read and
// write for it.
#pragma once

#include <array>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded
#include <vector>

#include <boost/asio.hpp>

#include "frame_parser.h"
#include "idem/log.h"
#include "request_handler.h"
#include "server_metrics.h"

namespace boost::asio::ssl {
class context;
}  // namespace boost::asio::ssl

namespace idem {

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  struct Options {
    size_t max_frame_bytes = 4u << 20;
    int64_t idle_timeout_ms = 300'000;
    size_t max_inflight = 256;
    size_t max_queued_reply_bytes = 8u << 20;
    // Peers cause these as often as they like: the server passes a LogRateLimiter's sink.
    LogSink log;
    ServerMetrics* metrics = nullptr;  // bytes, idle timeouts, protocol errors; may be null
    // TLS on this connection; null: plain TCP. Shared: a reload swaps the server's context
    // while connections made with the old one go on with it.
    std::shared_ptr<boost::asio::ssl::context> tls;
    // > 0: the connection is closed unless its session is greeted (Session::greeted: its Hello
    // accepted) this long after Start(). 0: no such deadline.
    int64_t auth_timeout_ms = 0;
  };
  using OnClosed = std::function<void(const std::shared_ptr<Connection>&)>;

  static constexpr int64_t kLingerMs = 1'000;
  // The first frame must be a Hello (a few fields, a token of at most 1 KiB): until one is
  // accepted, a longer frame is refused from its length prefix. So a peer that has not
  // authenticated cannot make the server hold max_frame_bytes for it.
  static constexpr size_t kMaxHelloFrameBytes = 16u << 10;

  // `socket` must have been accepted onto a strand (its executor serializes this connection).
  Connection(boost::asio::ip::tcp::socket socket, RequestHandler* handler, const Options& options,
             OnClosed on_closed);
  ~Connection();

  void Start();
  // Sends `error` (as an id-0 error frame) and closes: for a connection over the server's limit.
  void Reject(const Status& error);
  // Graceful stop: reads nothing more, answers what was read, then closes.
  void Drain();
  // Closes now; replies still to come are dropped.
  void Close();

  const std::string& peer() const { return peer_; }

 private:
  using Clock = std::chrono::steady_clock;
  struct TlsLayer;  // the TLS session over socket_

  // TLS: the handshake, then `next`; plain: `next` now.
  void Handshake(std::function<void()> next);
  void DoRead();
  void OnRead(const boost::system::error_code& ec, size_t n);
  // Parses buffered bytes into requests while the in-flight limit allows.
  void ProcessBuffered();
  void OnReply(FrameBytes frame);
  void Send(FrameBytes frame);
  void DoWrite();
  // Closes once nothing is pending when a close was asked for (error, drain, peer EOF).
  void MaybeFinish();
  void ArmTimer();
  void OnTimer(const boost::system::error_code& ec);
  // Past the greeting deadline (Options::auth_timeout_ms) without a greeted session.
  bool GreetingOverdue(Clock::time_point now) const;
  void Fail(const Status& error);  // error frame (id 0), then close
  void CloseNow();
  void Log(LogRecord record) const;  // with the peer's address

  boost::asio::ip::tcp::socket socket_;
  std::unique_ptr<TlsLayer> tls_;  // null: plain TCP
  boost::asio::steady_timer timer_;
  RequestHandler* const handler_;
  const Options options_;
  OnClosed on_closed_;
  std::string peer_;

  FrameParser parser_;
  Session session_;
  std::array<uint8_t, 64 * 1024> read_buf_;
  size_t buf_begin_ = 0, buf_end_ = 0;  // unparsed bytes of read_buf_

  struct Outgoing {
    FrameBytes bytes;
    bool answers_request;  // false for a connection-level error frame
  };
  std::deque<Outgoing> outbox_;    // ready, not yet handed to the socket
  std::vector<Outgoing> writing_;  // the write in flight

  size_t in_engine_ = 0;                 // requests given to the handler, not yet replied
  size_t inflight_ = 0;                  // requests read, response not yet written
  size_t queued_bytes_ = 0;              // bytes of outbox_ and writing_
  Clock::time_point last_activity_;      // last complete request read or response written
  Clock::time_point close_deadline_;     // hard limit once closing after an error
  Clock::time_point greeting_deadline_;  // with auth_timeout_ms: Start() + auth_timeout_ms

  // The lifecycle. Every change goes through TransitionTo, which asserts (in builds without
  // NDEBUG) that IsLegalTransition allows it:
  //   kHandshaking (TLS only) --handshake done--> kOpen
  //   kOpen --Drain() or the peer's EOF--> kDraining --all answered--> kClosed
  //   kOpen, kDraining --error (bad frame, handler error, idle timeout, Reject)--> kClosing
  //   kClosing --all written, FIN sent--> kLingering --peer's EOF--> kClosed
  //   any but kClosed --CloseNow() (I/O error, Close(), close_deadline_, a failed or overdue
  //   handshake, Drain() while handshaking)--> kClosed
  enum class State {
    kHandshaking,  // TLS handshake in progress: nothing to answer yet
    kOpen,         // reading, answering
    kDraining,     // reading nothing more; closes once every request read is answered
    kClosing,      // after an error: writes what is pending (the error frame last), no new requests
    kLingering,  // kClosing and all written: FIN sent, input discarded until EOF or close_deadline_
    kClosed,     // socket closed; late replies are dropped
  };
  static bool IsLegalTransition(State from, State to);
  void TransitionTo(State next);
  // Drain() or the peer's EOF: nothing more is read, not even to discard while lingering.
  void StopInput();
  // An error: the connection closes once what is pending is written, within kLingerMs.
  void BeginClosing();
  bool closing() const { return state_ == State::kClosing || state_ == State::kLingering; }

  State state_;  // kHandshaking with TLS, else kOpen
  // Facts independent of the lifecycle:
  // - input_stopped_: Drain() was called or the peer sent EOF. It outlives kDraining: a draining
  //   connection that then fails (idle timeout) lingers without reading, and Drain() while
  //   closing stops the discarding reads; so it is a fact about the input, not a state.
  // - reading_, writing_active_, write_scheduled_: an operation is outstanding on the socket or
  //   the strand. Its completion handler still runs after any transition (even to kClosed) and
  //   looks at state_ then, so these only stop a second read, write or post being started.
  bool input_stopped_ = false;
  bool reading_ = false;
  bool writing_active_ = false;
  bool write_scheduled_ = false;  // a DoWrite is posted
};

}  // namespace idem
