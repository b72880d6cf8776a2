// ApplyPath: how the server applies a decoded request, whatever the transport (binary frames:
// request_handler.h; HTTP/JSON: http_handler.h). The ops go to the CommitQueue (group commit,
// deferred sync, durability as configured); ops that must wait for another client's work (a
// Begin or Lock with wait_ms that finds its key held: WaitsForHolder) go to the OpWaiter; `done`
// gets one result per op of the request once every one is final. No thread blocks anywhere on
// the way. Every request's ops, results and latency are counted in ServerMetrics by transport.
//
// Both transports decode into a DecodedOps and call Apply, so they cannot differ in semantics:
// one request is one atomic batch of one Store::Apply (commit_queue.h), an op that failed to
// decode fails alone in its place, and waits are bounded by each op's wait_ms.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "commit_queue.h"
#include "credentials.h"
#include "idem/operation.h"
#include "idem/result.h"
#include "idem/status.h"
#include "op_waiter.h"
#include "server_metrics.h"

namespace idem {

// One request's ops, decoded. The Ops borrow their bytes from `owner`, which ApplyPath keeps
// alive until `done` has returned.
struct DecodedOps {
  size_t count = 0;     // ops in the request
  std::vector<Op> ops;  // those that decoded, in request order
  // Null when every op decoded (the common case: nothing allocated); else `count` entries, the
  // decoding error of each op left out of `ops`.
  std::shared_ptr<std::vector<std::optional<Status>>> errors;
  std::shared_ptr<const void> owner;
  // Who sent the request (authenticator.h); null when authentication is off: every op allowed.
  std::shared_ptr<const Principal> principal;
  // When the request was read: waits (wait_ms) and latency count from here.
  std::chrono::steady_clock::time_point received = std::chrono::steady_clock::now();

  // Appends the next op of the request, or records why it could not be decoded.
  void Add(Result<Op> op);
};

class ApplyPath {
 public:
  // `status` not ok: the whole request failed (results empty). Otherwise one result per op.
  using Done = std::function<void(Status status, std::vector<Result<OpResult>> results)>;

  // `waiter` may be null: ops that would wait are answered with their first outcome at once.
  // `metrics` may be null (nothing counted). All must outlive the ApplyPath.
  ApplyPath(CommitQueue* queue, OpWaiter* waiter, ServerMetrics* metrics = nullptr)
      : queue_(queue), waiter_(waiter), metrics_(metrics) {}

  // Calls `done` exactly once, from an engine thread, the event loop or a waiter's timer (or
  // before returning when request.principal may not do one of the ops: then every op's result is
  // PERMISSION_DENIED and nothing was applied; authorization.h).
  void Apply(Transport transport, DecodedOps request, Done done);

 private:
  // Every request's ops (their types, in request order), results and latency (receipt to final
  // results) pass here, per transport, just before `done`: where they are counted.
  void OnApplied(Transport transport, std::span<const OpType> op_types, const Status& status,
                 std::span<const Result<OpResult>> results,
                 std::chrono::steady_clock::duration latency) const;

  CommitQueue* const queue_;
  OpWaiter* const waiter_;
  ServerMetrics* const metrics_;
};

}  // namespace idem
