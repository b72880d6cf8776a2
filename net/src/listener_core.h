// ListenerCore: what the HTTP and gateway listeners share — the acceptor, the accept loop with
// its backoff on failures (EMFILE and the like: one log line an episode, no spinning), and the
// set of open connections with its two limits:
//  - over max_connections, a connection is refused (ListenedConnection::Reject: an answer, then
//    close) instead of served;
//  - while max_refusing_connections are being refused, no more are accepted (they wait in the
//    listen queue), so that a connect flood holds at most max_connections +
//    max_refusing_connections descriptors (idemstored's budget: tools/server_config/fd_budget.h).
// What a connection reads and what a refusal says stay with the listener.
//
// Threads: the accept loop runs on its own strand; OnClosed may be called from any thread.
// Serve/Stop are called from the Server's lifecycle thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded

#include <boost/asio.hpp>

#include "accept_backoff.h"
#include "idem/server.h"
#include "server_metrics.h"

namespace idem {

// One accepted connection as the ListenerCore drives it. Each calls ListenerCore::OnClosed once,
// when its socket is closed, whichever way it ends.
class ListenedConnection {
 public:
  virtual ~ListenedConnection() = default;
  virtual void Start() = 0;   // within max_connections: serve
  virtual void Reject() = 0;  // over it: the listener's refusal, then close
  virtual void Drain() = 0;   // stop: an idle connection closes now, a busy one after its answer
  virtual void Close() = 0;   // stop, past the grace: close now
};

class ListenerCore {
 public:
  struct Limits {
    size_t max_connections = 0;
    size_t max_refusing_connections = 0;
  };
  struct Hooks {
    // The connection for an accepted socket (on the accept strand).
    std::function<std::shared_ptr<ListenedConnection>(boost::asio::ip::tcp::socket)> make;
    // Each accepted connection, before it is started or rejected (metrics; may be empty).
    std::function<void(bool refused)> accepted;
    // A served (not refused) connection closed (metrics; may be empty).
    std::function<void()> served_closed;
  };

  // `io` must outlive the ListenerCore. `name` ("HTTP", "gateway") starts its log lines and
  // `label` ("http", "gateway") is their listener field; `metrics` may be null.
  ListenerCore(boost::asio::io_context& io, std::string name, std::string label, Limits limits,
               LogSink log, ServerMetrics* metrics);

  // For OpenListenSocket, before Serve.
  boost::asio::ip::tcp::acceptor& acceptor() { return acceptor_; }

  // Starts accepting.
  void Serve(Hooks hooks);
  // A connection's socket closed. Any thread.
  void OnClosed(ListenedConnection* connection);
  // Stops accepting, drains every connection, waits up to `grace` for them to close, closes the
  // rest. Not from an io thread.
  void Stop(std::chrono::milliseconds grace);

 private:
  void DoAccept();
  void OnAccepted(const boost::system::error_code& ec, boost::asio::ip::tcp::socket socket);

  boost::asio::io_context& io_;
  const std::string name_;
  const std::string label_;
  const Limits limits_;
  const LogSink log_;
  ServerMetrics* const metrics_;
  Hooks hooks_;
  boost::asio::strand<boost::asio::io_context::executor_type> accept_strand_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer retry_timer_;  // on accept_strand_: the next accept after a failure
  AcceptBackoff backoff_;                  // on accept_strand_
  bool serving_ = false;                   // Serve was called (lifecycle thread)

  std::mutex mu_;
  std::condition_variable closed_cv_;                          // a connection closed
  std::set<std::shared_ptr<ListenedConnection>> connections_;  // guarded by mu_
  size_t served_ = 0;                                          // guarded by mu_; within the limit
  std::set<ListenedConnection*> rejected_;                     // guarded by mu_; being refused
  bool accept_paused_ = false;  // guarded by mu_; max_refusing_connections are being refused
  bool stopping_ = false;       // guarded by mu_
};

}  // namespace idem
