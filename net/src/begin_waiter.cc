#include "begin_waiter.h"

#include <algorithm>

namespace idem {

using SteadyClock = std::chrono::steady_clock;

struct BeginWaiter::Waiting {
  Op op;  // without its wait: each re-apply answers at once
  SteadyClock::time_point deadline;
  Done done;

  std::mutex mu;
  Result<OpResult> last;             // guarded by mu
  uint64_t round = 0;                // guarded by mu; wakes of older rounds are ignored
  bool awaiting_result = false;      // guarded by mu; the round's re-apply is in the queue
  bool woken = false;                // guarded by mu; the round's watch or timer fired
  ServingEngine::WatchId watch = 0;  // guarded by mu
  bool finished = false;             // guarded by mu

  Waiting(const Op& o, SteadyClock::time_point d, Result<OpResult> l, Done dn)
      : op(o), deadline(d), done(std::move(dn)), last(std::move(l)) {
    op.wait.reset();
  }
};

BeginWaiter::BeginWaiter(ServingEngine* engine, CommitQueue* queue, RunAfter run_after)
    : engine_(engine), queue_(queue), run_after_(std::move(run_after)) {}

void BeginWaiter::Wait(const Op& op, SteadyClock::time_point deadline, Result<OpResult> last,
                       Done done) {
  auto w = std::make_shared<Waiting>(op, deadline, std::move(last), std::move(done));
  bool stopped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped = stopped_;
    if (!stopped) waiting_.insert(w);
  }
  if (stopped) {  // answer with what we have
    Finish(w, w->last);
    return;
  }
  Round(w, 1);
}

void BeginWaiter::Round(const std::shared_ptr<Waiting>& w, uint64_t round) {
  {
    std::lock_guard<std::mutex> lock(w->mu);
    if (w->finished) return;
    w->round = round;
    w->awaiting_result = true;
    w->woken = false;
  }
  // Watch first, then read: a commit after the read always fires the watch.
  ServingEngine::WatchId id =
      engine_->Watch(w->op.ns, w->op.key, [this, w, round] { Wake(w, round); });
  {
    std::lock_guard<std::mutex> lock(w->mu);
    w->watch = id;
    if (w->finished) {  // Stop() came in between: it could not see this watch
      engine_->Unwatch(id);
      return;
    }
  }
  queue_->Submit({w->op}, [this, w, round](Status s, std::vector<Result<OpResult>> results) {
    OnResult(w, round, std::move(s), std::move(results));
  });
}

void BeginWaiter::OnResult(const std::shared_ptr<Waiting>& w, uint64_t round, Status status,
                           std::vector<Result<OpResult>> results) {
  Result<OpResult> r = status.ok() ? std::move(results.at(0)) : Result<OpResult>(status);
  const bool still_waiting = r.ok() && r->outcome == Outcome::kInProgress;
  std::chrono::milliseconds sleep(0);
  bool retry_now = false;
  {
    std::lock_guard<std::mutex> lock(w->mu);
    if (w->finished || w->round != round) return;
    w->awaiting_result = false;
    if (still_waiting) {
      // Sleep until the lease ends (engine clock) or the deadline (steady clock).
      int64_t lease_left_ms = 1;
      if (r->record) {
        lease_left_ms =
            std::max<int64_t>(1, r->record->lease_until_ms - engine_->options().clock->NowMillis());
      }
      auto to_deadline =
          std::chrono::duration_cast<std::chrono::milliseconds>(w->deadline - SteadyClock::now());
      sleep = std::max(std::chrono::milliseconds(0),
                       std::min(to_deadline, std::chrono::milliseconds(lease_left_ms)));
      retry_now = w->woken;
    }
    w->last = std::move(r);
  }
  if (!still_waiting) {
    run_after_(std::chrono::milliseconds(0), [this, w] {
      ServingEngine::WatchId id;
      Result<OpResult> final_result = Status::Shutdown("unset");
      {
        std::lock_guard<std::mutex> lock(w->mu);
        id = w->watch;
        final_result = w->last;
      }
      engine_->Unwatch(id);
      Finish(w, std::move(final_result));
    });
  } else if (retry_now) {
    run_after_(std::chrono::milliseconds(0), [this, w, round] { Retry(w, round); });
  } else {
    run_after_(sleep, [this, w, round] { Wake(w, round); });
  }
}

// From the watch (an engine thread, inside the commit: schedule only) or the timer.
void BeginWaiter::Wake(const std::shared_ptr<Waiting>& w, uint64_t round) {
  {
    std::lock_guard<std::mutex> lock(w->mu);
    if (w->finished || w->round != round || w->woken) return;
    w->woken = true;
    if (w->awaiting_result) return;  // OnResult sees `woken` and retries
  }
  run_after_(std::chrono::milliseconds(0), [this, w, round] { Retry(w, round); });
}

void BeginWaiter::Retry(const std::shared_ptr<Waiting>& w, uint64_t round) {
  ServingEngine::WatchId id;
  {
    std::lock_guard<std::mutex> lock(w->mu);
    if (w->finished || w->round != round) return;
    id = w->watch;
  }
  engine_->Unwatch(id);
  if (SteadyClock::now() >= w->deadline) {
    LastLook(w);
  } else {
    Round(w, round + 1);
  }
}

// At the deadline: the attempt may have finished right then, so read once more and answer.
void BeginWaiter::LastLook(const std::shared_ptr<Waiting>& w) {
  queue_->Submit({w->op}, [this, w](Status s, std::vector<Result<OpResult>> results) {
    Finish(w, s.ok() ? std::move(results.at(0)) : Result<OpResult>(s));
  });
}

void BeginWaiter::Finish(const std::shared_ptr<Waiting>& w, Result<OpResult> result) {
  {
    std::lock_guard<std::mutex> lock(w->mu);
    if (w->finished) return;
    w->finished = true;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    waiting_.erase(w);
  }
  w->done(std::move(result));
}

void BeginWaiter::Stop() {
  std::set<std::shared_ptr<Waiting>> waiting;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    waiting.swap(waiting_);
  }
  for (const auto& w : waiting) {
    ServingEngine::WatchId id;
    Result<OpResult> last = Status::Shutdown("unset");
    {
      std::lock_guard<std::mutex> lock(w->mu);
      if (w->finished) continue;
      id = w->watch;
      last = w->last;
    }
    engine_->Unwatch(id);
    Finish(w, std::move(last));
  }
}

}  // namespace idem
