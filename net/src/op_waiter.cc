#include "op_waiter.h"

#include <algorithm>

namespace idem {

using SteadyClock = std::chrono::steady_clock;

struct OpWaiter::Waiting {
  Op op;                      // without its wait: each re-apply answers at once
  std::string line;           // Locks: their key's line in lines_ (ns '\0' key); Begins: none
  bool first_in_line = true;  // guarded by OpWaiter::mu_
  bool armed = false;         // guarded by OpWaiter::mu_; Wait was called
  SteadyClock::time_point deadline;
  Done done;  // set by Wait, before `armed`

  std::mutex mu;
  std::optional<Result<OpResult>> last;  // guarded by mu
  uint64_t round = 0;                    // guarded by mu; wakes of older rounds are ignored
  bool awaiting_result = false;          // guarded by mu; the round's re-apply is in the queue
  bool woken = false;                    // guarded by mu; the round's watch or timer fired
  ServingEngine::WatchId watch = 0;      // guarded by mu
  bool finished = false;                 // guarded by mu

  explicit Waiting(const Op& o) : op(o) {
    op.wait.reset();
    if (op.type == OpType::kLock) {
      line.reserve(op.ns.size() + 1 + op.key.size());
      line.append(op.ns).push_back('\0');
      line.append(op.key);
    }
  }
};

OpWaiter::OpWaiter(ServingEngine* engine, CommitQueue* queue, RunAfter run_after)
    : engine_(engine), queue_(queue), run_after_(std::move(run_after)) {}

OpWaiter::Ticket OpWaiter::Arrive(const Op& op) {
  Ticket ticket;
  ticket.status_ = engine_->Validate(op);
  if (!ticket.status_.ok()) return ticket;
  ticket.waiting_ = std::make_shared<Waiting>(op);
  const std::shared_ptr<Waiting>& w = ticket.waiting_;
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_) return ticket;  // applied, then answered at once by Wait
  waiting_.insert(w);
  if (!w->line.empty()) {
    Line& line = lines_[w->line];
    // The holder (as the line last saw it) retrying runs its own rounds outside the line: its
    // re-lock is ACQUIRED at once, and it must not wait for those who wait for it.
    const bool holder = line.holder && line.holder->owner == op.owner;
    if (!holder || line.waiting.empty()) {
      line.waiting.push_back(w);
      w->first_in_line = line.waiting.size() == 1;
    }
  }
  ticket.apply_now_ = w->first_in_line;
  return ticket;
}

void OpWaiter::Wait(const Ticket& ticket, SteadyClock::time_point deadline,
                    std::optional<Result<OpResult>> first, Done done) {
  const std::shared_ptr<Waiting>& w = ticket.waiting_;
  w->deadline = deadline;
  w->done = std::move(done);
  const bool held = first && first->ok() && StillHeld(w->op.type, (*first)->outcome);
  {
    std::lock_guard<std::mutex> lock(w->mu);
    w->last = first;
  }
  bool stopped;
  bool start;
  std::optional<OpResult> holder;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped = stopped_;
    w->armed = true;
    start = w->first_in_line;
    if (first && !w->line.empty()) NoteHolderLocked(*w, *first);
    if (stopped && !first) holder = HolderAnswerLocked(*w);
  }
  if (first && (!held || stopped)) {
    Finish(w, *std::move(first));
    return;
  }
  if (stopped) {
    Finish(w, holder ? Result<OpResult>(*std::move(holder))
                     : Result<OpResult>(Status::Shutdown("server is stopping")));
    return;
  }
  if (start) {
    Round(w, 1);
  } else {
    // In line behind others: only its deadline concerns it until its turn.
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - SteadyClock::now());
    run_after_(std::max(left, std::chrono::milliseconds(0)), [this, w] { Expire(w); });
  }
}

void OpWaiter::Leave(const Ticket& ticket) {
  const std::shared_ptr<Waiting>& w = ticket.waiting_;
  {
    std::lock_guard<std::mutex> lock(w->mu);
    w->finished = true;
  }
  std::shared_ptr<Waiting> next;
  {
    std::lock_guard<std::mutex> lock(mu_);
    waiting_.erase(w);
    next = LeaveLineLocked(w);
  }
  if (next) Round(next, 1);
}

void OpWaiter::Round(const std::shared_ptr<Waiting>& w, uint64_t round) {
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

void OpWaiter::OnResult(const std::shared_ptr<Waiting>& w, uint64_t round, Status status,
                        std::vector<Result<OpResult>> results) {
  Result<OpResult> r = status.ok() ? std::move(results.at(0)) : Result<OpResult>(status);
  const bool still_waiting = r.ok() && StillHeld(w->op.type, r->outcome);
  if (!w->line.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    NoteHolderLocked(*w, r);
  }
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
        final_result = *w->last;
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
void OpWaiter::Wake(const std::shared_ptr<Waiting>& w, uint64_t round) {
  {
    std::lock_guard<std::mutex> lock(w->mu);
    if (w->finished || w->round != round || w->woken) return;
    w->woken = true;
    if (w->awaiting_result) return;  // OnResult sees `woken` and retries
  }
  run_after_(std::chrono::milliseconds(0), [this, w, round] { Retry(w, round); });
}

void OpWaiter::Retry(const std::shared_ptr<Waiting>& w, uint64_t round) {
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

// At the deadline: the holder may have let go right then, so read once more and answer.
void OpWaiter::LastLook(const std::shared_ptr<Waiting>& w) {
  queue_->Submit({w->op}, [this, w](Status s, std::vector<Result<OpResult>> results) {
    Result<OpResult> r = s.ok() ? std::move(results.at(0)) : Result<OpResult>(s);
    if (!w->line.empty()) {
      std::lock_guard<std::mutex> lock(mu_);
      NoteHolderLocked(*w, r);
    }
    Finish(w, std::move(r));
  });
}

void OpWaiter::Expire(const std::shared_ptr<Waiting>& w) {
  std::optional<OpResult> holder;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Its turn came: its own rounds answer at the deadline.
    if (w->first_in_line || waiting_.count(w) == 0) return;
    holder = HolderAnswerLocked(*w);
    LeaveLineLocked(w);  // not first: nobody moves up
  }
  if (holder) {
    Finish(w, *std::move(holder));
    return;
  }
  // The first in line has had no answer yet (it arrived moments before): read who holds the
  // key. Read only: applying its own Lock could take a free lock ahead of the first in line.
  queue_->Submit({Op::Get({.ns = w->op.ns, .key = w->op.key})},
                 [this, w](Status s, std::vector<Result<OpResult>> results) {
                   Result<OpResult> r = s.ok() ? std::move(results.at(0)) : Result<OpResult>(s);
                   if (!r.ok()) {
                     Finish(w, std::move(r));
                     return;
                   }
                   OpResult held;
                   held.outcome = Outcome::kHeld;
                   held.record = std::move(r->record);  // none: free, the first in line takes it
                   Finish(w, std::move(held));
                 });
}

void OpWaiter::Finish(const std::shared_ptr<Waiting>& w, Result<OpResult> result) {
  {
    std::lock_guard<std::mutex> lock(w->mu);
    if (w->finished) return;
    w->finished = true;
  }
  std::shared_ptr<Waiting> next;
  {
    std::lock_guard<std::mutex> lock(mu_);
    waiting_.erase(w);
    next = LeaveLineLocked(w);
  }
  w->done(std::move(result));
  if (next) Round(next, 1);
}

void OpWaiter::NoteHolderLocked(const Waiting& w, const Result<OpResult>& result) {
  if (!result.ok() || !result->record) return;
  if (result->outcome != Outcome::kHeld && result->outcome != Outcome::kAcquired) return;
  auto it = lines_.find(w.line);
  if (it != lines_.end()) it->second.holder = result->record;
}

std::shared_ptr<OpWaiter::Waiting> OpWaiter::LeaveLineLocked(const std::shared_ptr<Waiting>& w) {
  if (w->line.empty()) return nullptr;
  auto it = lines_.find(w->line);
  if (it == lines_.end()) return nullptr;
  auto& waiting = it->second.waiting;
  auto pos = std::find(waiting.begin(), waiting.end(), w);
  if (pos == waiting.end()) return nullptr;
  const bool was_first = pos == waiting.begin();
  waiting.erase(pos);
  if (waiting.empty()) {
    lines_.erase(it);
    return nullptr;
  }
  if (!was_first) return nullptr;
  std::shared_ptr<Waiting> next = waiting.front();
  next->first_in_line = true;
  // Not armed yet: its Wait starts it.
  return next->armed ? next : nullptr;
}

std::optional<OpResult> OpWaiter::HolderAnswerLocked(const Waiting& w) const {
  auto it = lines_.find(w.line);
  if (it == lines_.end() || !it->second.holder) return std::nullopt;
  OpResult held;
  held.outcome = Outcome::kHeld;
  held.record = it->second.holder;
  return held;
}

void OpWaiter::Stop() {
  std::set<std::shared_ptr<Waiting>> waiting;
  std::vector<std::pair<std::shared_ptr<Waiting>, std::optional<OpResult>>> armed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    waiting.swap(waiting_);
    // Those whose Wait has not come yet are answered by it (it sees stopped_).
    for (const auto& w : waiting) {
      if (w->armed) armed.emplace_back(w, w->line.empty() ? std::nullopt : HolderAnswerLocked(*w));
    }
    lines_.clear();
  }
  for (auto& [w, holder] : armed) {
    ServingEngine::WatchId id;
    std::optional<Result<OpResult>> last;
    {
      std::lock_guard<std::mutex> lock(w->mu);
      if (w->finished) continue;
      id = w->watch;
      last = w->last;
    }
    engine_->Unwatch(id);
    if (last) {
      Finish(w, *std::move(last));
    } else if (holder) {
      Finish(w, *std::move(holder));
    } else {
      Finish(w, Status::Shutdown("server is stopping"));
    }
  }
}

}  // namespace idem
