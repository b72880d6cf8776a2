// ServerMetrics: what the server counts as it works (operations by op and outcome, request
// latency, group-commit batches, WAL syncs, connections, protocol errors, bytes), and the
// families GET /metrics and idemctl stats show (docs/operations.md lists them).
//
// Every hook is a few relaxed atomic adds on slots resolved ahead of time (metric_cells.h):
// safe from any thread, no lock, no allocation. Reading (Families) sums the shards and builds
// strings; it is for scrapes, not for the request path.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "idem/metrics.h"
#include "idem/operation.h"
#include "idem/result.h"
#include "idem/status.h"
#include "idem/store.h"
#include "metric_cells.h"

namespace idem {

// The transports requests arrive by; each has its own latency histograms and byte counters.
// A new transport is one line here: its enumerator and its `transport` label value.
#define IDEM_TRANSPORTS(X) \
  X(kBinary, "binary")     \
  X(kHttp, "http")         \
  X(kGateway, "gateway")

enum class Transport : uint8_t {
#define IDEM_TRANSPORT_ENUM(e, name) e,
  IDEM_TRANSPORTS(IDEM_TRANSPORT_ENUM)
#undef IDEM_TRANSPORT_ENUM
};
inline constexpr std::array kTransportNames = {
#define IDEM_TRANSPORT_NAME(e, name) std::string_view(name),
    IDEM_TRANSPORTS(IDEM_TRANSPORT_NAME)
#undef IDEM_TRANSPORT_NAME
};
inline constexpr size_t kTransports = kTransportNames.size();

// How the gateway answered a request: the `outcome` label of idem_gateway_requests_total.
//   first        a covered request executed upstream, its response stored
//   replayed     a duplicate answered with the stored response
//   conflict     a duplicate of a request in flight: 409
//   mismatch     the key reused for a different request: 422
//   expired      the key is remembered past its retention: 410
//   aborted      the upstream failed (error, timeout, or a 5xx not stored): the attempt aborted
//   fenced       executed, but the attempt had been taken over: the response is not stored
//   not_stored   executed, the response too large to store (duplicates get 409)
//   passthrough  not covered (method, path, or no key): proxied without a store op
//   rejected     refused before anything was done (400, 413, 431, 503 over max_connections)
//   store_error  the store failed or a stored response was damaged (503, 502)
#define IDEM_GATEWAY_OUTCOMES(X) \
  X(kFirst, "first")             \
  X(kReplayed, "replayed")       \
  X(kConflict, "conflict")       \
  X(kMismatch, "mismatch")       \
  X(kExpired, "expired")         \
  X(kAborted, "aborted")         \
  X(kFenced, "fenced")           \
  X(kNotStored, "not_stored")    \
  X(kPassthrough, "passthrough") \
  X(kRejected, "rejected")       \
  X(kStoreError, "store_error")

enum class GatewayOutcome : uint8_t {
#define IDEM_GATEWAY_OUTCOME_ENUM(e, name) e,
  IDEM_GATEWAY_OUTCOMES(IDEM_GATEWAY_OUTCOME_ENUM)
#undef IDEM_GATEWAY_OUTCOME_ENUM
};
inline constexpr std::array kGatewayOutcomeNames = {
#define IDEM_GATEWAY_OUTCOME_NAME(e, name) std::string_view(name),
    IDEM_GATEWAY_OUTCOMES(IDEM_GATEWAY_OUTCOME_NAME)
#undef IDEM_GATEWAY_OUTCOME_NAME
};

// Why an authentication failed: the `reason` label of idem_auth_failures_total and the log's.
enum class AuthFailure : uint8_t { kNoToken, kBadToken, kRateLimited, kRevoked };
inline constexpr std::array<std::string_view, 4> kAuthFailureNames = {"no_token", "bad_token",
                                                                      "rate_limited", "revoked"};

class ServerMetrics {
 public:
  // Slots of the op x outcome matrix: OpType and Outcome numbers (wire numbers, append-only)
  // below these; a larger number counts as "unknown" (slot 0, which no op or outcome uses).
  static constexpr size_t kOpSlots = 32;
  static constexpr size_t kOutcomeSlots = 64;
  static constexpr size_t kCodeSlots = 16;  // Status::Code numbers

  ServerMetrics();
  ServerMetrics(const ServerMetrics&) = delete;
  ServerMetrics& operator=(const ServerMetrics&) = delete;

  // One operation of a request answered after `latency` (from the request read to its answer):
  // idem_ops_total{op,outcome} or idem_op_errors_total{op,code}, and one observation of
  // idem_request_duration_seconds{transport,op}. A request of n ops calls this n times (or
  // CountResults once).
  void CountOp(Transport transport, OpType op, const Result<OpResult>& result,
               std::chrono::nanoseconds latency);
  // CountOp for each (ops[i], results[i]).
  void CountResults(Transport transport, std::span<const OpType> ops,
                    std::span<const Result<OpResult>> results, std::chrono::nanoseconds latency);
  // A whole request answered with an error instead of results (too many ops, a failed batch,
  // shutdown, a response over max_reply_bytes).
  void CountRequestError(Transport transport, Status::Code code);

  // Group commit: one Store::Apply of `requests` requests holding `ops` operations.
  void CountBatch(size_t requests, size_t ops);
  // One WAL sync of deferred writes (deferred_sync.h) that took `latency`.
  void CountWalSync(std::chrono::nanoseconds latency, bool ok);

  // Connections (all transports).
  void ConnectionAccepted() { conns_.Add(kAccepted); }
  void ConnectionRefused() { conns_.Add(kRefused); }  // over max_connections: BUSY and closed
  void ConnectionClosed() { conns_.Add(kClosed); }    // an accepted, not refused, one
  void ConnectionTimedOut() { conns_.Add(kTimedOut); }
  void AcceptFailed() { conns_.Add(kAcceptErrors); }
  void TlsHandshakeFailed() { conns_.Add(kTlsHandshakeFailures); }  // either listener
  // An error that closes the connection (bad frame length, a frame that fails verification,
  // no Hello first, an unsupported protocol version).
  void ProtocolError(Status::Code code) { protocol_errors_.Add(CodeSlot(code)); }
  // Authentication (--auth-file): a failure, either transport; a request (an ApplyRequest,
  // whatever number of its ops were denied, or an admin request) refused PERMISSION_DENIED.
  void AuthFailed(AuthFailure reason) { auth_failures_.Add(static_cast<size_t>(reason)); }
  void PermissionDenied() { permission_denied_.Add(0); }
  void BytesReceived(Transport t, size_t n) { bytes_.Add(2 * static_cast<size_t>(t), n); }
  void BytesSent(Transport t, size_t n) { bytes_.Add(2 * static_cast<size_t>(t) + 1, n); }

  // The gateway (gateway_server.h): a request answered, an upstream exchange that took
  // `latency` (from sending the request to the response's last byte, or the failure), client
  // connections opened and closed.
  void GatewayRequest(GatewayOutcome outcome) {
    gateway_requests_.Add(static_cast<size_t>(outcome));
  }
  void GatewayUpstream(std::chrono::nanoseconds latency);
  void GatewayConnectionOpened() { gateway_connections_.Add(0); }
  void GatewayConnectionClosed() { gateway_connections_.Add(1); }

  // Every family above, with every series that has counted something (and the unlabelled ones
  // always). Any thread.
  std::vector<MetricFamily> Families() const;

 private:
  static size_t CodeSlot(Status::Code code) {
    const size_t c = static_cast<size_t>(code);
    return c < kCodeSlots ? c : 0;
  }
  static size_t OpSlot(OpType op) {
    const size_t o = static_cast<size_t>(op);
    return o < kOpSlots ? o : 0;
  }

  enum ConnectionSlot : size_t {
    kAccepted,
    kRefused,
    kClosed,
    kTimedOut,
    kAcceptErrors,
    kTlsHandshakeFailures,
    kCount
  };

  static constexpr size_t kLatencyBounds = 17;
  static constexpr size_t kBatchBounds = 11;
  static constexpr size_t kSyncBounds = 15;

  CounterArray<kOpSlots * kOutcomeSlots> ops_;
  CounterArray<kOpSlots * kCodeSlots> op_errors_;
  CounterArray<kTransports * kCodeSlots> request_errors_;
  HistogramArray<kTransports * kOpSlots, kLatencyBounds> latency_;  // nanoseconds
  HistogramArray<2, kBatchBounds> batches_;                         // requests, ops
  HistogramArray<1, kSyncBounds> wal_sync_;                         // nanoseconds
  CounterArray<1> wal_sync_failures_;
  CounterArray<kCount> conns_;
  CounterArray<kCodeSlots> protocol_errors_;
  CounterArray<kTransports * 2> bytes_;  // received, sent
  CounterArray<kAuthFailureNames.size()> auth_failures_;
  CounterArray<1> permission_denied_;
  CounterArray<kGatewayOutcomeNames.size()> gateway_requests_;
  HistogramArray<1, kLatencyBounds> gateway_upstream_;  // nanoseconds
  CounterArray<2> gateway_connections_;                 // opened, closed
};

// The store's own figures (StoreStats, read at scrape time) as metric families.
std::vector<MetricFamily> StoreStatsFamilies(const StoreStats& stats);

}  // namespace idem
