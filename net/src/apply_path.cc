#include "apply_path.h"

#include <mutex>
#include <utility>

#include "authorization.h"

namespace idem {

void DecodedOps::Add(Result<Op> op) {
  const size_t index = count++;
  if (op.ok()) {
    ops.push_back(std::move(*op));
    return;
  }
  if (!errors) errors = std::make_shared<std::vector<std::optional<Status>>>();
  errors->resize(count);
  (*errors)[index] = op.status();
}

void ApplyPath::OnApplied(Transport transport, std::span<const OpType> op_types,
                          const Status& status, std::span<const Result<OpResult>> results,
                          std::chrono::steady_clock::duration latency) const {
  if (!metrics_) return;
  if (!status.ok()) {
    metrics_->CountRequestError(transport, status.code());
    return;
  }
  metrics_->CountResults(transport, op_types, results,
                         std::chrono::duration_cast<std::chrono::nanoseconds>(latency));
}

void ApplyPath::Apply(Transport transport, DecodedOps request, Done done) {
  const size_t n = request.count;
  const auto received = request.received;
  if (request.errors) request.errors->resize(n);
  // Every op's type, for OnApplied (an op that did not decode counts as "unknown"), indexed
  // like the request.
  std::vector<OpType> types(n, static_cast<OpType>(0));
  for (size_t i = 0, next = 0; i < n; ++i) {
    if (!request.errors || !(*request.errors)[i]) types[i] = request.ops[next++].type;
  }
  if (request.principal) {
    if (auto denied = DeniedResults(*request.principal, request)) {
      if (metrics_) metrics_->PermissionDenied();
      OnApplied(transport, types, Status::Ok(), *denied,
                std::chrono::steady_clock::now() - received);
      done(Status::Ok(), std::move(*denied));
      return;
    }
  }
  // Ops that wait for their key's holder (op_waiter.h), kept past the Submit that takes the ops.
  struct Wait {
    size_t index;
    std::chrono::milliseconds wait;
    OpWaiter::Ticket ticket;
  };
  std::shared_ptr<std::vector<Wait>> waits;
  // A waiting Lock queued behind others is left out of the batch (it is applied in its turn):
  // the ops kept are moved down in place, and its place gets a stand-in result, replaced by its
  // wait's answer.
  size_t kept = 0;
  for (size_t i = 0, next = 0; i < n; ++i) {
    if (request.errors && (*request.errors)[i]) continue;
    Op& op = request.ops[next++];
    if (waiter_ && WaitsForHolder(op)) {
      OpWaiter::Ticket ticket = waiter_->Arrive(op);
      const bool valid = ticket.status().ok();
      if (valid) {
        if (!waits) waits = std::make_shared<std::vector<Wait>>();
        waits->push_back({i, *op.wait, std::move(ticket)});
      }
      if (!valid || !waits->back().ticket.apply_now()) {
        if (!request.errors)
          request.errors = std::make_shared<std::vector<std::optional<Status>>>(n);
        // Invalid: answered with its error in its place, like an op that did not decode.
        (*request.errors)[i] = valid ? Status::Busy("waiting its turn") : ticket.status();
        continue;
      }
    }
    if (kept != next - 1) request.ops[kept] = std::move(op);
    ++kept;
  }
  request.ops.resize(kept);
  auto finish = [this, transport, received, types = std::move(types), done = std::move(done)](
                    Status status, std::vector<Result<OpResult>> results) {
    OnApplied(transport, types, status, results, std::chrono::steady_clock::now() - received);
    done(std::move(status), std::move(results));
  };
  queue_->Submit(std::move(request.ops), [this, n, owner = request.owner, errors = request.errors,
                                          waits, received, finish = std::move(finish)](
                                             Status status,
                                             std::vector<Result<OpResult>> results) mutable {
    if (!status.ok()) {
      if (waits) {
        for (const Wait& w : *waits) waiter_->Leave(w.ticket);
      }
      finish(std::move(status), {});
      return;
    }
    if (errors && results.size() != n) {  // ops were left out: merge their stand-ins in
      std::vector<Result<OpResult>> merged;
      merged.reserve(n);
      size_t next = 0;
      for (size_t i = 0; i < n; ++i) {
        if ((*errors)[i]) {
          merged.push_back(*(*errors)[i]);
        } else {
          merged.push_back(std::move(results[next++]));
        }
      }
      results = std::move(merged);
    }
    if (!waits) {
      finish(Status::Ok(), std::move(results));
      return;
    }
    // Answer once every waiting op has its final result (at once for those whose first
    // answer is final).
    struct Pending {
      std::mutex mu;
      std::vector<Result<OpResult>> results;  // guarded by mu
      size_t remaining;                       // guarded by mu
    };
    auto pending = std::make_shared<Pending>();
    pending->results = std::move(results);
    pending->remaining = waits->size();
    auto shared_finish = std::make_shared<decltype(finish)>(std::move(finish));
    for (const Wait& w : *waits) {
      std::optional<Result<OpResult>> first;
      if (w.ticket.apply_now()) {
        std::lock_guard<std::mutex> lock(pending->mu);
        first = pending->results[w.index];
      }
      // w.wait is within limits.max_wait_ms (Arrive validated it): no overflow.
      waiter_->Wait(w.ticket, received + w.wait, std::move(first),
                    [i = w.index, owner, pending, shared_finish](Result<OpResult> final_result) {
                      std::unique_lock<std::mutex> lock(pending->mu);
                      pending->results[i] = std::move(final_result);
                      if (--pending->remaining > 0) return;
                      std::vector<Result<OpResult>> all = std::move(pending->results);
                      lock.unlock();
                      (*shared_finish)(Status::Ok(), std::move(all));
                    });
    }
  });
}

}  // namespace idem
