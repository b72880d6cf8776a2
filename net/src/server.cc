// The server: an acceptor, the event-loop (I/O) threads, the commit queue and the set of live
// connections, wired together as in Asio's HTTP server example.
//
// Threads:
//  - io_threads threads run io_: accept, read, parse, write, timers. With engine_threads == 0
//    (the default) they also apply: each loop turn's requests become one Store::Apply, run by a
//    handler posted behind that turn's reads (commit_queue.h); under Durability::kSync the
//    queue's sync thread does the fsyncs, so the loop never waits for the disk.
//  - With engine_threads > 0, that many threads in the CommitQueue call Store::Apply/Stats and
//    post the responses back to each connection's strand; the I/O threads never touch the Store.
//  - The thread that calls Wait()/Stop() (idemstored's main thread) only waits and coordinates.
#include "idem/server.h"

#include <atomic>
#include <condition_variable>
#include <csignal>
#include <mutex>
#include <set>
#include <thread>
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange unincluded

#include <boost/asio.hpp>
#include <boost/asio/ssl/context.hpp>

#include "accept_backoff.h"
#include "authenticator.h"
#include "commit_queue.h"
#include "connection.h"
#include "gateway_handler.h"
#include "gateway_key.h"
#include "gateway_server.h"
#include "http_handler.h"
#include "http_server.h"
#include "idem/version.h"
#include "listen_socket.h"
#include "log_rate_limiter.h"
#include "op_waiter.h"
#include "prometheus_text.h"
#include "remote_backup.h"
#include "request_handler.h"
#include "server_metrics.h"
#include "tls_context.h"
#include "upstream_client.h"

namespace idem {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

class ServerImpl final : public Server {
 public:
  explicit ServerImpl(ServerOptions options)
      : options_(std::move(options)),
        log_(options_.log ? options_.log : StderrLogSink(options_.log_format)),
        peer_log_(log_, MonotonicClock::Default()),
        accept_strand_(asio::make_strand(io_)),
        acceptor_(accept_strand_),
        signals_(io_),
        retry_timer_(accept_strand_) {}

  ~ServerImpl() override { Stop(); }

  Status Listen();
  Status AnswerWhileOpening() override;
  Status Serve(ServingEngine* engine) override;

  uint16_t port() const override { return port_; }
  uint16_t http_port() const override { return http_ ? http_->port() : 0; }
  uint16_t gateway_port() const override { return gateway_ ? gateway_->port() : 0; }
  std::string address() const override {
    return (options_.host.find(':') != std::string::npos ? "[" + options_.host + "]"
                                                         : options_.host) +
           ":" + std::to_string(port_);
  }
  void Wait() override {
    std::unique_lock<std::mutex> lock(mu_);
    stop_cv_.wait(lock, [this] { return stop_requested_; });
  }
  void RequestStop() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_requested_ = true;
    }
    stop_cv_.notify_all();
  }
  void Stop() override;
  Status Reload() override;
  std::string MetricsText() override;
  // The metrics text, with `engine`'s figures when it is not null.
  std::string MetricsTextOf(ServingEngine* engine);
  bool StopRequested() override {
    std::lock_guard<std::mutex> lock(mu_);
    return stop_requested_;
  }

 private:
  static ServerInfo MakeInfo(const ServerOptions& o) {
    ServerInfo info;
    info.server_version = "idemstored " + std::string(Version());
    info.max_frame_bytes = o.max_frame_bytes;
    info.max_reply_bytes = o.max_reply_bytes;
    info.max_inflight_requests = o.max_inflight_per_connection;
    info.idle_timeout_ms = o.idle_timeout_ms;
    info.limits = o.limits;
    return info;
  }
  std::unique_ptr<OpWaiter> MakeWaiter(ServingEngine* engine) {
    return std::make_unique<OpWaiter>(
        engine, queue_.get(), [this](std::chrono::milliseconds delay, std::function<void()> fn) {
          auto timer = std::make_shared<asio::steady_timer>(io_, delay);
          timer->async_wait(
              [timer, fn = std::move(fn)](const boost::system::error_code&) { fn(); });
        });
  }
  void Log(const LogRecord& record) const { log_(record); }
  // Handles SIGINT, SIGTERM and SIGHUP from now on (once; lifecycle_mu_ held).
  void WatchSignals();
  // SIGINT/SIGTERM: RequestStop(); SIGHUP: Reload(), then wait for the next signal.
  void WaitForSignal();
  // Reload()'s step for the auth file: ok with nothing to do when authentication is off.
  Status ReloadCredentials();
  // Listen()'s step for the gateway: checks its options against the limits, resolves the
  // upstream and binds.
  Status ListenGateway();
  // Accepting runs on accept_strand_: one accept in flight, or a retry timer, or neither while
  // paused (too many refusals in progress).
  void DoAccept();
  void OnAccepted(const boost::system::error_code& ec, tcp::socket socket);
  void OnClosed(const std::shared_ptr<Connection>& connection);
  // Listen() and Reload(): builds the TLS context from options_.tls's files and makes it the one
  // new connections of both listeners get. On an error nothing changes.
  Status LoadTls();
  std::shared_ptr<asio::ssl::context> tls_context() {
    std::lock_guard<std::mutex> lock(tls_mu_);
    return tls_context_;
  }

  // What a client is told before there is a store (AnswerWhileOpening).
  static Status Opening() { return Status::Busy("the database is opening; retry later"); }
  // Starts accepting and the I/O threads (lifecycle_mu_ held).
  void StartThreads();

  enum class State { kListening, kOpening, kServing, kStopped };

  const ServerOptions options_;
  const LogSink log_;        // options_.log, or stderr
  LogRateLimiter peer_log_;  // what peers cause once per connection: connection_options_.log
  ServerMetrics metrics_;
  // Created by Listen() when options_.auth_file is set; null: authentication off.
  std::unique_ptr<Authenticator> auth_;
  // Serve()'s engine, until Stop(): the store MetricsText reads.
  std::atomic<ServingEngine*> engine_{nullptr};
  // Built by Serve(), when there is an engine.
  std::unique_ptr<CommitQueue> queue_;
  std::unique_ptr<OpWaiter> waiter_;
  std::unique_ptr<RequestHandler> handler_;
  // handler_ once Serve() has built it: null while opening (connections are refused).
  std::atomic<RequestHandler*> serving_handler_{nullptr};
  asio::io_context io_;
  // The HTTP listener (options_.http) and what answers it; after io_, so destroyed before it.
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<ApplyPath> http_apply_;
  std::unique_ptr<HttpHandler> http_handler_;
  std::unique_ptr<HttpHandler> http_opening_handler_;  // AnswerWhileOpening()'s
  // The gateway (options_.gateway): its listener, upstream pool and handler; after io_ too.
  std::unique_ptr<GatewayServer> gateway_;
  std::unique_ptr<UpstreamPool> upstream_;
  std::unique_ptr<ApplyPath> gateway_apply_;
  std::unique_ptr<GatewayHandler> gateway_handler_;
  asio::strand<asio::io_context::executor_type> accept_strand_;
  tcp::acceptor acceptor_;
  asio::signal_set signals_;
  asio::steady_timer retry_timer_;  // accept retry after e.g. EMFILE; on accept_strand_
  AcceptBackoff backoff_;           // on accept_strand_
  std::vector<std::thread> io_threads_;
  uint16_t port_ = 0;
  Connection::Options connection_options_;  // but tls: tls_context() when accepting

  std::mutex reload_mu_;  // one Reload() at a time
  std::mutex tls_mu_;
  std::shared_ptr<asio::ssl::context> tls_context_;  // guarded by tls_mu_; null without TLS

  std::mutex lifecycle_mu_;          // held by Serve() and Stop() throughout
  State state_ = State::kListening;  // guarded by lifecycle_mu_
  bool watching_signals_ = false;    // guarded by lifecycle_mu_

  std::mutex mu_;
  std::condition_variable stop_cv_;  // stop_requested_ set, or a connection closed
  bool stop_requested_ = false;      // guarded by mu_
  std::set<std::shared_ptr<Connection>> connections_;  // guarded by mu_; served and rejected
  size_t served_ = 0;                // guarded by mu_; connections counted against the limit
  std::set<Connection*> rejected_;   // guarded by mu_; being sent BUSY
  bool accept_paused_ = false;       // guarded by mu_; rejected_ is full
  uint64_t refused_in_episode_ = 0;  // guarded by mu_; since the server last had a free slot
};

namespace {

// allow_remote opens both listeners to the network: without TLS anyone on the path reads the
// stored responses and the tokens, without authentication anyone who can connect changes any
// record. Serving so takes the operator's explicit word (insecure_remote).
Status CheckRemoteIsSecured(const ServerOptions& options) {
  if (!options.allow_remote || options.insecure_remote) return Status::Ok();
  const bool tls = options.tls.has_value(), auth = !options.auth_file.empty();
  if (tls && auth) return Status::Ok();
  const std::string missing = !tls && !auth ? "TLS (--tls-cert, --tls-key) and authentication "
                                              "(--auth-file)"
                              : !tls        ? "TLS (--tls-cert, --tls-key)"
                                            : "authentication (--auth-file)";
  return Status::InvalidArgument(
      "--allow-remote without " + missing + " would let anyone who can reach the port " +
      (!tls ? "read every stored response on the wire" : "read and change any record") +
      "; configure it (docs/security.md), or add --insecure-remote if the network is trusted");
}

}  // namespace

Status ServerImpl::Listen() {
  if (options_.io_threads < 1 || options_.engine_threads < 0 || options_.max_connections < 1 ||
      options_.max_refusing_connections < 1 || options_.max_frame_bytes < 1024 ||
      options_.idle_timeout_ms <= 0 || options_.max_inflight_per_connection < 1 ||
      options_.max_reply_bytes < 1024 || options_.max_reply_bytes > 0xffffffffu ||
      options_.max_queued_reply_bytes < 1 || options_.max_admin_requests < 1 ||
      options_.auth_timeout_ms <= 0) {
    return Status::InvalidArgument("server options out of range");
  }
  if (Status s = CheckRemoteIsSecured(options_); !s.ok()) return s;
  if (Status s = LoadTls(); !s.ok()) return s;
  Result<uint16_t> port =
      OpenListenSocket(acceptor_, options_.host, options_.port, options_.allow_remote, "");
  if (!port.ok()) return port.status();
  port_ = *port;

  connection_options_.max_frame_bytes = options_.max_frame_bytes;
  connection_options_.idle_timeout_ms = options_.idle_timeout_ms;
  connection_options_.max_inflight = options_.max_inflight_per_connection;
  connection_options_.max_queued_reply_bytes = options_.max_queued_reply_bytes;
  connection_options_.log = [this](const LogRecord& record) { peer_log_.Log(record); };
  connection_options_.metrics = &metrics_;
  if (!options_.auth_file.empty()) {
    Authenticator::Options auth_options;
    auth_options.auth_file = options_.auth_file;
    auth_options.failures_per_minute = options_.auth_failures_per_minute;
    Result<std::unique_ptr<Authenticator>> auth = Authenticator::Open(
        std::move(auth_options), MonotonicClock::Default(),
        [this](const LogRecord& record) { peer_log_.Log(record); }, &metrics_);
    if (!auth.ok()) return auth.status();
    auth_ = std::move(*auth);
  }
  // The greeting deadline guards what a connection costs before it is known to be a client;
  // without TLS or authentication there is nothing between accept and serving to bound.
  const bool greeting_deadline = options_.tls.has_value() || auth_ != nullptr;
  connection_options_.auth_timeout_ms = greeting_deadline ? options_.auth_timeout_ms : 0;
  if (options_.http) {
    std::optional<HttpServer::Tls> http_tls;
    if (options_.tls) {
      http_tls = HttpServer::Tls{[this] { return tls_context(); }, options_.auth_timeout_ms,
                                 connection_options_.log};
    }
    http_ = std::make_unique<HttpServer>(io_, *options_.http, options_.allow_remote, log_,
                                         &metrics_, std::move(http_tls));
    if (Status s = http_->Listen(); !s.ok()) return s;
  }
  if (options_.gateway) {
    if (Status s = ListenGateway(); !s.ok()) return s;
  }
  return Status::Ok();
}

Status ServerImpl::ListenGateway() {
  const GatewayOptions& g = *options_.gateway;
  const GatewayRoute& route = g.route;
  const Limits& limits = options_.limits;
  const auto bad = [](const std::string& what) {
    return Status::InvalidArgument("gateway options: " + what);
  };
  if (g.max_connections < 1 || g.max_refusing_connections < 1 || g.max_header_bytes < 1024 ||
      g.max_header_bytes > (64u << 20) || g.upstream_timeout_ms <= 0 || g.idle_timeout_ms <= 0) {
    return bad(
        "a limit is out of range (max_connections >= 1, max_refusing_connections >= 1, "
        "max_header_bytes 1 KiB..64 MiB, upstream_timeout_ms and idle_timeout_ms > 0)");
  }
  if (route.methods.empty()) return bad("route.methods is empty: the gateway would cover nothing");
  if (route.lease_ms <= 0) return bad("route.lease_ms must be > 0");
  if (route.wait_ms < 0 || route.wait_ms > limits.max_wait_ms) {
    return bad("route.wait_ms must be 0.." + std::to_string(limits.max_wait_ms) +
               " (Limits::max_wait_ms)");
  }
  // A stored response is one record's payload: one that could never fit is a configuration
  // error, not something to find out per request.
  if (g.max_stored_response_bytes > limits.max_payload_bytes) {
    return bad("max_stored_response_bytes (" + std::to_string(g.max_stored_response_bytes) +
               ") exceeds the store's max_payload_bytes (" +
               std::to_string(limits.max_payload_bytes) + "): such a response could not be stored");
  }
  if (limits.max_key_bytes < kScopePrefixBytes + kMaxIdempotencyKeyChars) {
    return bad("the store's max_key_bytes (" + std::to_string(limits.max_key_bytes) +
               ") is below " + std::to_string(kScopePrefixBytes + kMaxIdempotencyKeyChars) +
               ", the longest gateway key (scope and a 255-character Idempotency-Key)");
  }
  Result<UpstreamAddress> address = UpstreamAddress::Parse(g.upstream);
  if (!address.ok()) return address.status();
  Result<std::unique_ptr<UpstreamPool>> pool =
      UpstreamPool::Open(io_, std::move(*address), g.max_idle_upstream_connections);
  if (!pool.ok()) return pool.status();
  upstream_ = std::move(*pool);
  std::optional<GatewayServer::Tls> tls;
  if (options_.tls)
    tls = GatewayServer::Tls{[this] { return tls_context(); }, options_.auth_timeout_ms};
  gateway_ = std::make_unique<GatewayServer>(io_, g, options_.allow_remote, log_, &metrics_,
                                             std::move(tls));
  return gateway_->Listen();
}

Status ServerImpl::LoadTls() {
  if (!options_.tls) return Status::Ok();
  Result<std::shared_ptr<asio::ssl::context>> context = MakeServerTlsContext(*options_.tls);
  if (!context.ok()) return context.status();
  std::lock_guard<std::mutex> lock(tls_mu_);
  tls_context_ = std::move(*context);
  return Status::Ok();
}

// Each step re-reads its own files and keeps what it had when they are bad: TLS, then the auth
// file. The first error is returned and the steps after it do not run (a fix and a second reload
// apply everything).
Status ServerImpl::Reload() {
  std::lock_guard<std::mutex> reload(reload_mu_);
  Status status = LoadTls();
  if (status.ok()) status = ReloadCredentials();
  if (!status.ok()) {
    Log(LogRecord(LogLevel::kError, "reload_failed",
                  "reload failed; what that file gave before stays in force: " + status.ToString())
            .With("code", std::string(CodeName(status.code()))));
    return status;
  }
  Log(LogRecord(LogLevel::kInfo, "reloaded",
                std::string(options_.tls ? "reloaded the TLS files" : "no TLS") +
                    (auth_ ? "; reloaded the auth file " + options_.auth_file : "; no auth file"))
          .With("tls", options_.tls ? "on" : "off")
          .With("auth_generation", auth_ ? auth_->generation() : 0));
  return Status::Ok();
}

Status ServerImpl::AnswerWhileOpening() {
  std::lock_guard<std::mutex> lifecycle(lifecycle_mu_);
  if (state_ != State::kListening) {
    return Status::InvalidArgument(
        "AnswerWhileOpening: the server is already answering, serving or stopped");
  }
  state_ = State::kOpening;
  if (http_) {
    HttpHandler::Options http_options;
    http_options.readiness = [] { return Opening(); };
    http_opening_handler_ = std::make_unique<HttpHandler>(nullptr, std::move(http_options));
    http_->Serve(http_opening_handler_.get());
  }
  // From now on: a stop requested while the database opens is not lost, nor fatal.
  if (options_.handle_signals) WatchSignals();
  StartThreads();
  return Status::Ok();
}

void ServerImpl::StartThreads() {
  asio::post(accept_strand_, [this] { DoAccept(); });
  for (int i = 0; i < options_.io_threads; ++i) io_threads_.emplace_back([this] { io_.run(); });
}

Status ServerImpl::Serve(ServingEngine* engine) {
  std::lock_guard<std::mutex> lifecycle(lifecycle_mu_);
  if (state_ != State::kListening && state_ != State::kOpening) {
    return Status::InvalidArgument("Serve: the server is already serving or stopped");
  }
  const bool opening = state_ == State::kOpening;
  state_ = State::kServing;
  queue_ = std::make_unique<CommitQueue>(
      engine, options_.limits.max_batch_ops, options_.engine_threads,
      [this](std::function<void()> flush) { asio::post(io_, std::move(flush)); }, &metrics_);
  queue_->SetMaxBlockingTasks(options_.max_admin_requests);
  waiter_ = MakeWaiter(engine);
  handler_ = std::make_unique<RequestHandler>(engine, queue_.get(), waiter_.get(),
                                              MakeInfo(options_), &metrics_, engine, auth_.get());
  engine_.store(engine);
  serving_handler_.store(handler_.get());
  if (http_) {
    http_apply_ = std::make_unique<ApplyPath>(queue_.get(), waiter_.get(), &metrics_);
    HttpHandler::Options http_options;
    http_options.auth = auth_.get();
    http_options.server_metrics = &metrics_;
    http_options.limits = options_.limits;
    http_options.max_reply_bytes = options_.max_reply_bytes;
    // Like the binary Stats request: the store's figures are read on an engine thread.
    http_options.metrics = [this, engine](std::function<void(std::string)> done) {
      queue_->Run([this, engine, done = std::move(done)](bool stopped) {
        done(MetricsTextOf(stopped ? nullptr : engine));
      });
    };
    http_options.readiness = [this, engine]() -> Status {
      if (StopRequested()) return Status::Shutdown("the server is stopping");
      return engine->WriteReadiness();
    };
    http_options.backup = [this, engine](std::string to,
                                         std::function<void(Result<BackupManifest>)> done) {
      RunRemoteBackup(queue_.get(), engine, std::move(to), std::move(done));
    };
    http_handler_ = std::make_unique<HttpHandler>(http_apply_.get(), std::move(http_options));
    if (opening) {
      http_->SwitchHandler(http_handler_.get());
    } else {
      http_->Serve(http_handler_.get());
    }
  }
  if (gateway_) {
    gateway_apply_ = std::make_unique<ApplyPath>(queue_.get(), waiter_.get(), &metrics_);
    GatewayHandler::Options gateway_options;
    gateway_options.gateway = *options_.gateway;
    gateway_options.max_payload_bytes = options_.limits.max_payload_bytes;
    // Retry-After counts to the lease's end, which is in the engine's time.
    gateway_options.clock =
        engine->options().clock ? engine->options().clock : SystemClock::Default();
    gateway_options.metrics = &metrics_;
    gateway_options.log = [this](const LogRecord& record) { peer_log_.Log(record); };
    gateway_handler_ = std::make_unique<GatewayHandler>(gateway_apply_.get(), upstream_.get(),
                                                        std::move(gateway_options));
    gateway_->Serve(gateway_handler_.get());
  }
  if (options_.handle_signals) WatchSignals();
  if (!opening) StartThreads();
  return Status::Ok();
}

void ServerImpl::WatchSignals() {
  if (watching_signals_) return;  // since AnswerWhileOpening()
  watching_signals_ = true;
  signals_.add(SIGINT);
  signals_.add(SIGTERM);
  signals_.add(SIGHUP);
  WaitForSignal();
}

void ServerImpl::WaitForSignal() {
  signals_.async_wait([this](const boost::system::error_code& ec, int signal) {
    if (ec) return;
    if (signal == SIGHUP) {
      Log(LogRecord(LogLevel::kInfo, "reload_requested", "received SIGHUP; reloading")
              .With("signal", "SIGHUP"));
      (void)Reload();  // logs its outcome; the server serves on either way
      WaitForSignal();
      return;
    }
    const char* name = signal == SIGINT ? "SIGINT" : "SIGTERM";
    Log(LogRecord(LogLevel::kInfo, "stop_requested", std::string("received ") + name + "; stopping")
            .With("signal", name));
    RequestStop();
  });
}

Status ServerImpl::ReloadCredentials() { return auth_ ? auth_->Reload() : Status::Ok(); }

// Runs on an I/O thread. With several I/O threads each connection gets its own strand, so its
// handlers never run concurrently while different connections proceed in parallel. With one,
// the thread is the strand, and a reply produced on it is handled inline (asio::dispatch)
// instead of being queued once more.
void ServerImpl::DoAccept() {
  asio::any_io_executor executor = io_.get_executor();
  if (options_.io_threads > 1) executor = asio::make_strand(io_);
  acceptor_.async_accept(
      executor, asio::bind_executor(accept_strand_, [this](const boost::system::error_code& ec,
                                                           tcp::socket socket) {
        OnAccepted(ec, std::move(socket));
      }));
}

void ServerImpl::OnAccepted(const boost::system::error_code& ec, tcp::socket socket) {
  if (!acceptor_.is_open()) return;
  std::string line;
  if (ec) {
    // Typically EMFILE/ENFILE, which the descriptor budget should make rare: back off instead of
    // spinning on the error, and tell the operator once per episode.
    std::chrono::milliseconds delay =
        backoff_.OnFailure(std::chrono::steady_clock::now(), ec.message(), &line);
    metrics_.AcceptFailed();
    if (!line.empty()) {
      Log(LogRecord(LogLevel::kError, "accept_failed", line).With("listener", "binary"));
    }
    retry_timer_.expires_after(delay);
    retry_timer_.async_wait([this](const boost::system::error_code& timer_ec) {
      if (!timer_ec) DoAccept();
    });
    return;
  }
  backoff_.OnSuccess(std::chrono::steady_clock::now(), &line);
  if (!line.empty()) {
    Log(LogRecord(LogLevel::kInfo, "accept_resumed", line).With("listener", "binary"));
  }
  metrics_.ConnectionAccepted();
  Connection::Options connection_options = connection_options_;
  connection_options.tls = tls_context();
  RequestHandler* const handler = serving_handler_.load();
  auto connection =
      std::make_shared<Connection>(std::move(socket), handler, connection_options,
                                   [this](const std::shared_ptr<Connection>& c) { OnClosed(c); });
  const bool opening = handler == nullptr;
  bool reject;
  bool first_refusal = false;
  bool pause;
  {
    std::lock_guard<std::mutex> lock(mu_);
    reject = opening || served_ >= options_.max_connections;
    connections_.insert(connection);
    if (reject) {
      rejected_.insert(connection.get());
      // While opening every connection is refused: no episode of the connection limit.
      first_refusal = !opening && refused_in_episode_++ == 0;
    } else {
      ++served_;
    }
    pause = accept_paused_ = rejected_.size() >= options_.max_refusing_connections;
  }
  if (reject) {
    metrics_.ConnectionRefused();
    // Once per episode: a flood would otherwise write a line per refused connection.
    if (first_refusal) {
      Log(LogRecord(LogLevel::kWarn, "connections_refused",
                    "refusing connections with BUSY: " + std::to_string(options_.max_connections) +
                        " open (max_connections); first refused: peer " + connection->peer())
              .With("max_connections", options_.max_connections)
              .With("peer", connection->peer()));
    }
    connection->Reject(opening
                           ? Opening()
                           : Status::Busy("server has " + std::to_string(options_.max_connections) +
                                          " connections open; retry later"));
  } else {
    connection->Start();
  }
  // Paused: OnClosed resumes when a refusal is done, so that refusals never hold more than
  // max_refusing_connections descriptors.
  if (!pause) DoAccept();
}

void ServerImpl::OnClosed(const std::shared_ptr<Connection>& connection) {
  bool resume = false;
  uint64_t refused = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (connections_.erase(connection) == 0) return;
    if (rejected_.erase(connection.get()) == 0) {
      --served_;
      metrics_.ConnectionClosed();
      if (refused_in_episode_ > 0 && served_ < options_.max_connections) {
        refused = refused_in_episode_;
        refused_in_episode_ = 0;
      }
    }
    if (accept_paused_ && rejected_.size() < options_.max_refusing_connections) {
      accept_paused_ = false;
      resume = true;  // after Stop() closed the acceptor, OnAccepted returns at once
    }
  }
  if (refused > 0) {
    Log(LogRecord(LogLevel::kInfo, "refusals_ended",
                  "accepting connections again; refused " + std::to_string(refused) +
                      " with BUSY while " + std::to_string(options_.max_connections) +
                      " were open (max_connections)")
            .With("refused", refused)
            .With("max_connections", options_.max_connections));
  }
  if (resume) asio::post(accept_strand_, [this] { DoAccept(); });
  stop_cv_.notify_all();
}

void ServerImpl::Stop() {
  std::lock_guard<std::mutex> lifecycle(lifecycle_mu_);
  const State was = state_;
  if (was == State::kStopped) return;
  state_ = State::kStopped;
  engine_.store(nullptr);
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_requested_ = true;
  }
  stop_cv_.notify_all();
  if (was == State::kListening) {  // never served: no threads, no connections
    boost::system::error_code ec;
    acceptor_.close(ec);
    if (http_) http_->Stop(std::chrono::milliseconds(0));
    if (gateway_) gateway_->Stop(std::chrono::milliseconds(0));
    return;
  }
  // 1. Stop accepting (on the accept strand, which owns the acceptor).
  asio::post(accept_strand_, [this] {
    boost::system::error_code ec;
    acceptor_.close(ec);
    retry_timer_.cancel();
    signals_.cancel();
  });
  // 2. Waiting Begins and Locks answer now (IN_PROGRESS, HELD) instead of holding the stop up.
  if (waiter_) waiter_->Stop();
  // 3. Let every connection answer what it has read, then close.
  std::vector<std::shared_ptr<Connection>> live;
  {
    std::lock_guard<std::mutex> lock(mu_);
    live.assign(connections_.begin(), connections_.end());
  }
  for (const auto& c : live) c->Drain();
  // HTTP connections answer the request they are on, within the same grace period.
  if (http_) http_->Stop(std::chrono::milliseconds(options_.stop_grace_ms));
  // Gateway connections finish the request they are on (a first request completes or aborts its
  // attempt); past the grace, an attempt left behind ends with its lease.
  if (gateway_) gateway_->Stop(std::chrono::milliseconds(options_.stop_grace_ms));
  {
    std::unique_lock<std::mutex> lock(mu_);
    stop_cv_.wait_for(lock, std::chrono::milliseconds(options_.stop_grace_ms),
                      [this] { return connections_.empty(); });
    live.assign(connections_.begin(), connections_.end());
  }
  // 4. Past the grace period: close whatever is left.
  for (const auto& c : live) c->Close();
  live.clear();
  // 5. Apply what is still queued (responses to closed connections are dropped), then stop the
  // I/O threads. The caller may close the Store after this returns.
  if (queue_) queue_->Stop();  // none if stopped while opening
  io_.stop();
  if (upstream_) upstream_->Clear();
  for (std::thread& t : io_threads_) t.join();
  io_threads_.clear();
  {
    std::lock_guard<std::mutex> lock(mu_);
    connections_.clear();
    rejected_.clear();
  }
  peer_log_.Flush();  // the counts of peers' errors not logged one by one
}

std::string ServerImpl::MetricsText() {
  // The store's figures only under the lifecycle lock, so that Stop() cannot return (and the
  // embedder close the engine) while they are read. Only tried: Serve() or Stop() in progress
  // leaves them out, and a call from an I/O thread that Stop() is joining cannot deadlock.
  std::unique_lock<std::mutex> lifecycle(lifecycle_mu_, std::try_to_lock);
  return MetricsTextOf(lifecycle.owns_lock() ? engine_.load() : nullptr);
}

std::string ServerImpl::MetricsTextOf(ServingEngine* engine) {
  std::vector<MetricFamily> families = metrics_.Families();
  // Read at scrape time: RocksDB properties, never counted per operation. A store that cannot
  // answer (suspended after a write error) leaves its figures out rather than failing the scrape.
  if (engine != nullptr) {
    if (Result<StoreStats> stats = engine->Stats(); stats.ok()) {
      std::vector<MetricFamily> store = StoreStatsFamilies(*stats);
      families.insert(families.end(), std::make_move_iterator(store.begin()),
                      std::make_move_iterator(store.end()));
    }
  }
  std::string text;
  AppendPrometheusText(families, &text);
  return text;
}

}  // namespace

Result<std::unique_ptr<Server>> Server::Listen(ServerOptions options) {
  auto server = std::make_unique<ServerImpl>(std::move(options));
  if (Status s = server->Listen(); !s.ok()) return s;
  return std::unique_ptr<Server>(std::move(server));
}

Result<std::unique_ptr<Server>> Server::Start(ServingEngine* engine, ServerOptions options) {
  Result<std::unique_ptr<Server>> server = Listen(std::move(options));
  if (!server.ok()) return server;
  if (Status s = (*server)->Serve(engine); !s.ok()) return s;
  return server;
}

}  // namespace idem
