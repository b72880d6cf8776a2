#include "apply_path.h"

#include <mutex>
#include <utility>

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

bool WaitsForOutcome(const Op& op, Outcome outcome) {
  return op.type == OpType::kBegin && op.wait && op.wait->count() > 0 &&
         outcome == Outcome::kInProgress;
}

void ApplyPath::OnApplied(Transport /*transport*/, std::span<const OpType> /*op_types*/,
                          const Status& /*status*/, std::span<const Result<OpResult>> /*results*/,
                          std::chrono::steady_clock::duration /*latency*/) {}

void ApplyPath::Apply(Transport transport, DecodedOps request, Done done) {
  const size_t n = request.count;
  const auto received = request.received;
  if (request.errors) request.errors->resize(n);
  // Ops that may have to wait (request index, op), kept past the Submit that takes `ops`; and
  // every op's type, for OnApplied. Both indexed like the request.
  std::shared_ptr<std::vector<std::pair<size_t, Op>>> waits;
  std::vector<OpType> types(n, OpType::kGet);
  for (size_t i = 0, next = 0; i < n; ++i) {
    if (request.errors && (*request.errors)[i]) continue;
    const Op& op = request.ops[next++];
    types[i] = op.type;
    if (waiter_ && op.wait && op.wait->count() > 0) {
      if (!waits) waits = std::make_shared<std::vector<std::pair<size_t, Op>>>();
      waits->emplace_back(i, op);
    }
  }
  auto finish = [transport, received, types = std::move(types), done = std::move(done)](
                    Status status, std::vector<Result<OpResult>> results) {
    OnApplied(transport, types, status, results, std::chrono::steady_clock::now() - received);
    done(std::move(status), std::move(results));
  };
  queue_->Submit(
      std::move(request.ops),
      [this, n, owner = request.owner, errors = request.errors, waits, received,
       finish = std::move(finish)](Status status, std::vector<Result<OpResult>> results) mutable {
        if (!status.ok()) {
          finish(std::move(status), {});
          return;
        }
        if (errors && results.size() != n) {  // ops were left out: merge their errors in
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
        std::vector<std::pair<size_t, Op>> waiting;
        if (waits) {
          for (auto& [i, op] : *waits) {
            if (results[i].ok() && WaitsForOutcome(op, results[i]->outcome)) {
              waiting.emplace_back(i, op);
            }
          }
        }
        if (waiting.empty()) {
          finish(Status::Ok(), std::move(results));
          return;
        }
        // Answer once every waiting op has its final result.
        struct Pending {
          std::mutex mu;
          std::vector<Result<OpResult>> results;  // guarded by mu
          size_t remaining;                       // guarded by mu
        };
        auto pending = std::make_shared<Pending>();
        pending->results = std::move(results);
        pending->remaining = waiting.size();
        auto shared_finish = std::make_shared<decltype(finish)>(std::move(finish));
        for (auto& [i, op] : waiting) {
          Result<OpResult> last = pending->results[i];
          waiter_->Wait(op, received + *op.wait, std::move(last),
                        [i = i, owner, pending, shared_finish](Result<OpResult> final_result) {
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
