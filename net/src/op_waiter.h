// OpWaiter: a Begin or Lock with a wait (WaitsForHolder, idem/operation.h) that finds its key held
// — an attempt in progress, a lock — must wait for the holder to let go (up to its wait) before
// answering. Engine::Apply does that by blocking its thread; in the server that would park an
// engine thread, and with it every other request of its group commit, for up to
// limits.max_wait_ms. So the server applies with ServingEngine::ApplyNoWait (IN_PROGRESS or HELD
// comes back at once) and hands such ops here, which waits without any thread:
//
//   1. Watch the key (before reading, so that no change is missed), re-apply the op through the
//      CommitQueue without its wait;
//   2. not held any more (StillHeld is false): that is the answer;
//   3. otherwise sleep (a timer on the server's I/O threads) until the watch fires, the holder's
//      lease ends (then the op takes over) or the deadline; at the deadline re-apply once more
//      and answer whatever it says; otherwise go to 1.
//
// Fairness among waiting Locks: each key has a line, in the order the server decoded the
// requests (Arrive is called in that order, from the I/O threads, under one mutex). Only the
// first in line runs the loop above; the others are not applied at all, so a Lock that arrives
// while others wait for its key cannot take the lock before them: waiters acquire first come,
// first served. When the first leaves the line (acquired, wait over, error) the next one starts.
// A waiter whose wait runs out before its turn answers HELD with the holder the line last saw.
// Not ordered by the line: Locks without a wait, and ops from other servers or embedded users of
// the same database, which may take a lock in the moment between its release and the first
// waiter's retry. Begins have no line (when an attempt ends every waiter gets its answer).
//
// Threads: Arrive() is called from I/O threads; Wait() from engine threads (CommitQueue
// callbacks). Watch callbacks run on the committing engine thread and only schedule work;
// everything else runs from `run_after`.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "commit_queue.h"
#include "idem/serving.h"

namespace idem {

class OpWaiter {
 public:
  // Runs `fn` after `delay` on some thread other than the caller's (never inline).
  using RunAfter = std::function<void(std::chrono::milliseconds delay, std::function<void()> fn)>;
  using Done = std::function<void(Result<OpResult> result)>;

  OpWaiter(ServingEngine* engine, CommitQueue* queue, RunAfter run_after);

  struct Waiting;
  // One waiting op's place, from Arrive to its answer.
  class Ticket {
   public:
    // Whether the op is applied in its request's batch. False: it queued behind other waiting
    // Locks for its key and must be left out of the batch; Wait applies it in its turn.
    bool apply_now() const { return apply_now_; }
    // Not ok: the op is invalid (ServingEngine::Validate) and took no place; answer it with this
    // status, without Wait or Leave.
    const Status& status() const { return status_; }

   private:
    friend class OpWaiter;
    std::shared_ptr<Waiting> waiting_;
    bool apply_now_ = true;
    Status status_;
  };

  // Called for each op that WaitsForHolder, as its request is decoded (arrival order). The
  // op's strings must stay valid until its Done runs or it Leaves. Validates the op first: one
  // that waits in line is applied only in its turn, so its errors must be found here (and its
  // wait_ms is then within limits.max_wait_ms, so a deadline computed from it cannot overflow).
  // The holder of the key's lock asking again is not queued behind those waiting for its own
  // lock: it is applied at once, like a Lock without a wait (which re-locks).
  Ticket Arrive(const Op& op);

  // After the op's batch. `first`: its result there (absent when !apply_now()). `done` runs
  // exactly once (possibly inline, from this call): at once with `first` when that is an error
  // or not StillHeld; else with the first result that is not StillHeld, or the last one at
  // `deadline`.
  void Wait(const Ticket& ticket, std::chrono::steady_clock::time_point deadline,
            std::optional<Result<OpResult>> first, Done done);

  // The op's batch failed as a whole: gives up its place without an answer.
  void Leave(const Ticket& ticket);

  // Answers every wait now with its last result (a Lock not yet applied: the holder its line
  // last saw, else Shutdown); later waits answer at once. For server stop.
  void Stop();

 private:
  // A key's waiting Locks, first in line first.
  struct Line {
    std::deque<std::shared_ptr<Waiting>> waiting;
    std::optional<Record> holder;  // the holder the line last saw (from HELD and ACQUIRED)
  };

  void Round(const std::shared_ptr<Waiting>& w, uint64_t round);
  void OnResult(const std::shared_ptr<Waiting>& w, uint64_t round, Status status,
                std::vector<Result<OpResult>> results);
  void Wake(const std::shared_ptr<Waiting>& w, uint64_t round);
  void Retry(const std::shared_ptr<Waiting>& w, uint64_t round);
  void LastLook(const std::shared_ptr<Waiting>& w);
  // A waiter still in line at its deadline.
  void Expire(const std::shared_ptr<Waiting>& w);
  void Finish(const std::shared_ptr<Waiting>& w, Result<OpResult> result);
  // Records what `result` says about the holder of w's key in its line. Requires mu_.
  void NoteHolderLocked(const Waiting& w, const Result<OpResult>& result);
  // Removes `w` from its line; returns the waiter that is now first, when `w` was first and that
  // one may start (Wait was called for it). Requires mu_.
  std::shared_ptr<Waiting> LeaveLineLocked(const std::shared_ptr<Waiting>& w);
  // The answer of a Lock that leaves without its own: HELD by the line's last seen holder.
  std::optional<OpResult> HolderAnswerLocked(const Waiting& w) const;

  ServingEngine* const engine_;
  CommitQueue* const queue_;
  const RunAfter run_after_;

  std::mutex mu_;
  std::set<std::shared_ptr<Waiting>> waiting_;  // guarded by mu_
  std::map<std::string, Line> lines_;           // guarded by mu_; by Waiting::line
  bool stopped_ = false;                        // guarded by mu_
};

}  // namespace idem
