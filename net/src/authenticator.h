// Authenticator: who a connection (binary: its Hello) or a request (HTTP: its bearer token) is,
// for a server with --auth-file (docs/security.md). It holds the current Credentials and a
// generation number that each Reload() that succeeds increments; what a peer authenticated as
// is an Identity, which remembers the generation it was checked against, so that a connection
// authenticated before a reload is re-checked (Recheck) on its next request.
//
// Failures are counted (ServerMetrics::AuthFailed), logged (event=auth_failed, with the peer and
// the reason; the sink is expected to be rate-limited) and, except for revocations, counted
// against the peer's address in a FailureLimiter: past its limit, that address's attempts are
// refused without their token being checked.
//
// Thread-safe: connections on every I/O thread authenticate at once while Reload swaps the
// credentials. Reading them is a shared_ptr copy under a mutex; the hashing happens outside it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "credentials.h"
#include "failure_limiter.h"
#include "idem/clock.h"
#include "idem/log.h"
#include "idem/result.h"
#include "idem/status.h"
#include "server_metrics.h"

namespace idem {

// What a peer authenticated as. An empty Identity (no principal) stands for "authentication is
// off": everything is allowed.
struct Identity {
  std::shared_ptr<const Principal> principal;  // keeps the Credentials it belongs to alive
  uint64_t generation = 0;                     // of those Credentials
};

class Authenticator {
 public:
  struct Options {
    std::string auth_file;
    uint32_t failures_per_minute = 10;  // per peer address; >= 1
    size_t max_peers = FailureLimiter::kDefaultMaxPeers;
  };

  // Loads options.auth_file: its error when it cannot be read (IOError) or parsed
  // (InvalidArgument "PATH:LINE: ..."); InvalidArgument for failures_per_minute 0.
  // `clock` times the failure windows; `log` and `metrics` (may be null) take the failures.
  static Result<std::unique_ptr<Authenticator>> Open(Options options, std::shared_ptr<Clock> clock,
                                                     LogSink log, ServerMetrics* metrics);

  // Re-reads the file. On success the new credentials apply to every authentication from now on
  // and to open connections at their next request (Recheck); on error the current ones stay and
  // the error is returned.
  Status Reload();

  // The principal whose secret `token` is (nullopt: none presented), for a peer at `peer_address`
  // (an IP address: the failure limit is per address, whatever the port). Unauthenticated, with
  // the reason in the message, for no token, a token no principal has (a token longer than
  // Credentials::kMaxTokenBytes is refused before any hashing), or a peer past its limit (its
  // token is then not checked).
  Result<Identity> Authenticate(std::string_view peer_address,
                                std::optional<std::string_view> token);

  // Brings `identity` up to date after a reload: ok and nothing done when the credentials have
  // not changed since it was checked (an atomic load); ok with the principal's new grants when
  // it is still there with the same secret hash; Unauthenticated "credentials of 'NAME' were
  // revoked" (counted and logged) when it is gone or its secret changed. An empty identity stays
  // as it is.
  Status Recheck(Identity* identity, std::string_view peer_address);

  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }

 private:
  Authenticator(Options options, std::shared_ptr<const Credentials> credentials,
                std::shared_ptr<Clock> clock, LogSink log, ServerMetrics* metrics);

  struct Snapshot {
    std::shared_ptr<const Credentials> credentials;
    uint64_t generation;
  };
  Snapshot Current() const;
  Status Fail(AuthFailure reason, std::string_view peer_address, Status error,
              std::string_view principal = {});

  const Options options_;
  const LogSink log_;
  ServerMetrics* const metrics_;
  FailureLimiter limiter_;

  mutable std::mutex mu_;
  std::shared_ptr<const Credentials> credentials_;  // guarded by mu_
  std::atomic<uint64_t> generation_{1};             // written under mu_, with credentials_
};

}  // namespace idem
