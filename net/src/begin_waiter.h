// BeginWaiter: a Begin with wait_ms > 0 that finds an attempt in progress must wait for it (up
// to wait_ms) before answering. Engine::Apply does that by blocking its thread; in the server
// that would park an engine thread, and with it every other request of its group commit, for
// up to limits.max_wait_ms. So the server applies with ServingEngine::ApplyNoWait (IN_PROGRESS
// comes back at once) and hands such ops here, which waits without any thread:
//
//   1. Watch the key (before reading, so that no change is missed), re-apply the Begin through
//      the CommitQueue with wait_ms = 0;
//   2. not IN_PROGRESS any more: that is the answer;
//   3. otherwise sleep (a timer on the server's I/O threads) until the watch fires, the
//      attempt's lease ends (then Begin takes over) or the deadline; at the deadline re-apply
//      once more and answer whatever it says; otherwise go to 1.
//
// Threads: Wait() is called from engine threads (CommitQueue callbacks). Watch callbacks run on
// the committing engine thread and only schedule work; everything else runs from `run_after`.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <set>

#include "commit_queue.h"
#include "idem/serving.h"

namespace idem {

class BeginWaiter {
 public:
  // Runs `fn` after `delay` on some thread other than the caller's (never inline).
  using RunAfter = std::function<void(std::chrono::milliseconds delay, std::function<void()> fn)>;
  using Done = std::function<void(Result<OpResult> result)>;

  BeginWaiter(ServingEngine* engine, CommitQueue* queue, RunAfter run_after);

  // `op` is a Begin with wait_ms > 0 whose result `last` was IN_PROGRESS; its strings must stay
  // valid until `done` runs (keep their owner in `done`). `done` runs exactly once, with the
  // first result that is not IN_PROGRESS or the last one at `deadline`.
  void Wait(const Op& op, std::chrono::steady_clock::time_point deadline, Result<OpResult> last,
            Done done);

  // Answers every wait now with its last result; later Waits answer at once. For server stop.
  void Stop();

 private:
  struct Waiting;
  void Round(const std::shared_ptr<Waiting>& w, uint64_t round);
  void OnResult(const std::shared_ptr<Waiting>& w, uint64_t round, Status status,
                std::vector<Result<OpResult>> results);
  void Wake(const std::shared_ptr<Waiting>& w, uint64_t round);
  void Retry(const std::shared_ptr<Waiting>& w, uint64_t round);
  void LastLook(const std::shared_ptr<Waiting>& w);
  void Finish(const std::shared_ptr<Waiting>& w, Result<OpResult> result);

  ServingEngine* const engine_;
  CommitQueue* const queue_;
  const RunAfter run_after_;

  std::mutex mu_;
  std::set<std::shared_ptr<Waiting>> waiting_;  // guarded by mu_
  bool stopped_ = false;                        // guarded by mu_
};

}  // namespace idem
