#include "authenticator.h"

#include <utility>

namespace idem {

Result<std::unique_ptr<Authenticator>> Authenticator::Open(Options options,
                                                           std::shared_ptr<Clock> clock,
                                                           LogSink log, ServerMetrics* metrics) {
  if (options.failures_per_minute < 1) {
    return Status::InvalidArgument("the auth failure limit must be at least 1 a minute");
  }
  Result<std::shared_ptr<const Credentials>> credentials = Credentials::Load(options.auth_file);
  if (!credentials.ok()) return credentials.status();
  return std::unique_ptr<Authenticator>(new Authenticator(
      std::move(options), std::move(*credentials), std::move(clock), std::move(log), metrics));
}

Authenticator::Authenticator(Options options, std::shared_ptr<const Credentials> credentials,
                             std::shared_ptr<Clock> clock, LogSink log, ServerMetrics* metrics)
    : options_(std::move(options)),
      log_(std::move(log)),
      metrics_(metrics),
      limiter_(options_.failures_per_minute, std::move(clock), options_.max_peers),
      credentials_(std::move(credentials)) {}

Status Authenticator::Reload() {
  // Read and parsed outside the lock: authentications go on meanwhile with the old credentials.
  Result<std::shared_ptr<const Credentials>> credentials = Credentials::Load(options_.auth_file);
  if (!credentials.ok()) return credentials.status();
  std::lock_guard<std::mutex> lock(mu_);
  credentials_ = std::move(*credentials);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  return Status::Ok();
}

Authenticator::Snapshot Authenticator::Current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return Snapshot{credentials_, generation_.load(std::memory_order_relaxed)};
}

Result<Identity> Authenticator::Authenticate(std::string_view peer_address,
                                             std::optional<std::string_view> token) {
  if (limiter_.Blocked(peer_address)) {
    return Fail(AuthFailure::kRateLimited, peer_address,
                Status::Unauthenticated("too many failed attempts from " +
                                        std::string(peer_address) + " (--auth-failure-limit " +
                                        std::to_string(options_.failures_per_minute) +
                                        " a minute); try again later"));
  }
  if (!token || token->empty()) {
    limiter_.CountFailure(peer_address);
    return Fail(AuthFailure::kNoToken, peer_address,
                Status::Unauthenticated("this server requires a token: --token or IDEM_TOKEN"));
  }
  Snapshot current = Current();
  // The length is checked here, not only by Credentials::Authenticate, so that no peer can make
  // the server hash more than kMaxTokenBytes per principal.
  const Principal* principal = token->size() <= Credentials::kMaxTokenBytes
                                   ? current.credentials->Authenticate(*token)
                                   : nullptr;
  if (principal == nullptr) {
    limiter_.CountFailure(peer_address);
    return Fail(AuthFailure::kBadToken, peer_address,
                Status::Unauthenticated("token not accepted"));
  }
  return Identity{std::shared_ptr<const Principal>(current.credentials, principal),
                  current.generation};
}

Status Authenticator::Recheck(Identity* identity, std::string_view peer_address) {
  if (!identity->principal || identity->generation == generation()) return Status::Ok();
  Snapshot current = Current();
  const Principal& was = *identity->principal;
  const Principal* now = current.credentials->Find(was.name);
  if (now == nullptr || now->secret_hash != was.secret_hash) {
    return Fail(AuthFailure::kRevoked, peer_address,
                Status::Unauthenticated("credentials of '" + was.name + "' were revoked"),
                was.name);
  }
  *identity =
      Identity{std::shared_ptr<const Principal>(current.credentials, now), current.generation};
  return Status::Ok();
}

Status Authenticator::Fail(AuthFailure reason, std::string_view peer_address, Status error,
                           std::string_view principal) {
  if (metrics_) metrics_->AuthFailed(reason);
  if (log_) {
    LogRecord record(LogLevel::kWarn, "auth_failed", "authentication failed: " + error.message());
    record.With("peer", std::string(peer_address))
        .With("reason", std::string(kAuthFailureNames[static_cast<size_t>(reason)]));
    if (!principal.empty()) record.With("principal", std::string(principal));
    log_(record);
  }
  return error;
}

}  // namespace idem
