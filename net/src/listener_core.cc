#include "listener_core.h"

#include <algorithm>
#include <vector>

namespace idem {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

ListenerCore::ListenerCore(asio::io_context& io, std::string name, std::string label, Limits limits,
                           LogSink log, ServerMetrics* metrics)
    : io_(io),
      name_(std::move(name)),
      label_(std::move(label)),
      limits_(limits),
      log_(std::move(log)),
      metrics_(metrics),
      accept_strand_(asio::make_strand(io)),
      acceptor_(accept_strand_),
      retry_timer_(accept_strand_) {}

void ListenerCore::Serve(Hooks hooks) {
  hooks_ = std::move(hooks);
  serving_ = true;
  asio::post(accept_strand_, [this] { DoAccept(); });
}

void ListenerCore::DoAccept() {
  acceptor_.async_accept(
      asio::make_strand(io_),
      asio::bind_executor(accept_strand_, [this](boost::system::error_code ec, tcp::socket s) {
        OnAccepted(ec, std::move(s));
      }));
}

void ListenerCore::OnAccepted(const boost::system::error_code& ec, tcp::socket s) {
  if (!acceptor_.is_open()) return;
  std::string line;
  if (ec) {
    // EMFILE and the like: back off instead of spinning on the error, one log line an episode.
    if (metrics_) metrics_->AcceptFailed();
    const std::chrono::milliseconds delay =
        backoff_.OnFailure(std::chrono::steady_clock::now(), ec.message(), &line);
    if (!line.empty() && log_) {
      log_(LogRecord(LogLevel::kError, "accept_failed", name_ + ": " + line)
               .With("listener", label_));
    }
    retry_timer_.expires_after(delay);
    retry_timer_.async_wait([this](boost::system::error_code timer_ec) {
      if (!timer_ec) DoAccept();
    });
    return;
  }
  backoff_.OnSuccess(std::chrono::steady_clock::now(), &line);
  if (!line.empty() && log_) {
    log_(
        LogRecord(LogLevel::kInfo, "accept_resumed", name_ + ": " + line).With("listener", label_));
  }
  std::shared_ptr<ListenedConnection> connection = hooks_.make(std::move(s));
  bool reject;
  bool pause;
  {
    std::lock_guard<std::mutex> lock(mu_);
    reject = served_ >= limits_.max_connections;
    if (reject) {
      rejected_.insert(connection.get());
    } else {
      ++served_;
    }
    connections_.insert(connection);
    pause = accept_paused_ = rejected_.size() >= limits_.max_refusing_connections;
  }
  if (hooks_.accepted) hooks_.accepted(reject);
  if (reject) {
    connection->Reject();
  } else {
    connection->Start();
  }
  // Paused: OnClosed resumes when a refusal is done, so that refusals never hold more than
  // max_refusing_connections descriptors.
  if (!pause) DoAccept();
}

void ListenerCore::OnClosed(ListenedConnection* connection) {
  bool resume = false;
  std::shared_ptr<ListenedConnection> closed;  // released after the lock: it may be the last
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::find_if(connections_.begin(), connections_.end(),
                           [connection](const auto& c) { return c.get() == connection; });
    if (it == connections_.end()) return;
    closed = *it;
    connections_.erase(it);
    if (rejected_.erase(connection) == 0) {
      --served_;
      if (hooks_.served_closed) hooks_.served_closed();
    }
    if (accept_paused_ && rejected_.size() < limits_.max_refusing_connections) {
      accept_paused_ = false;
      resume = true;  // after Stop() closed the acceptor, OnAccepted returns at once
    }
  }
  if (resume) asio::post(accept_strand_, [this] { DoAccept(); });
  closed_cv_.notify_all();
}

void ListenerCore::Stop(std::chrono::milliseconds grace) {
  if (!serving_) {  // never served: no io thread runs the accept strand
    boost::system::error_code ec;
    acceptor_.close(ec);
    return;
  }
  std::vector<std::shared_ptr<ListenedConnection>> live;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
    live.assign(connections_.begin(), connections_.end());
  }
  asio::post(accept_strand_, [this] {
    boost::system::error_code ec;
    acceptor_.close(ec);
    retry_timer_.cancel();
  });
  for (const auto& c : live) c->Drain();
  std::unique_lock<std::mutex> lock(mu_);
  closed_cv_.wait_for(lock, grace, [this] { return connections_.empty(); });
  live.assign(connections_.begin(), connections_.end());
  lock.unlock();
  for (const auto& c : live) c->Close();
}

}  // namespace idem
