// CommitQueue: group commit across requests and connections.
//
// The problem: under Durability::kSync every Store::Apply pays one fsync, so a server that
// applied each request on its own would be capped at one request per fsync, however many
// clients wait. The mechanism: I/O threads only queue decoded requests here; each engine thread
// takes EVERYTHING queued (from every connection, in arrival order, up to max_batch_ops ops),
// applies it as ONE Store::Apply call (one RocksDB write batch, one WAL write, one fsync) and
// hands each request its slice of the results. While one batch is fsyncing, the next one
// accumulates, so durable throughput grows with the number of concurrent requests.
//
// Semantics are those of Store::Apply over the concatenated ops: each request's ops run in
// order and see earlier ops of the same batch, an invalid op fails alone, and a failure of the
// whole Apply fails every request of the batch with that Status. Requests in different batches
// may run concurrently on different engine threads (no order between them is promised).
//
// Given a ServingEngine (the server's case), batches are applied with ApplyNoWait: a Begin or Lock
// that would wait for its key's holder answers IN_PROGRESS or HELD at once instead of parking
// this thread and its whole batch; the request handler then waits for it with an OpWaiter. Given a
// plain Store, batches are applied with Store::Apply.
//
// Threads: Submit/Run are called from any thread (the server's I/O threads). `done` callbacks
// and tasks run on an engine thread, never while holding the queue's lock.
//
// With engine_threads == 0 there are no engine threads: the event loop is the engine thread
// (Redis's model). The first Submit after a flush asks `defer` to run a flush later on the
// loop, after the handlers already ready (the other connections' reads of the same loop turn);
// the flush applies everything submitted meanwhile as one Store::Apply and runs the `done`
// callbacks inline. No thread hand-off, no lock hand-off, and the batch still spans
// connections. Run() tasks run at once on the caller. Without `defer` each Submit flushes at
// once (tests that drive the request handler without a loop).
//
// On the loop with a ServingEngine under Durability::kSync the fsync leaves the loop too:
// batches are applied with ServingEngine::ApplyDeferSync (written to the WAL, visible, not yet
// fsynced) and their `done` callbacks wait in a DeferredSync (deferred_sync.h), whose thread
// fsyncs while the loop applies the next batches. Nothing is acknowledged before it is durable,
// and neither is anything that might have read a write not yet durable: every batch that wrote,
// or may have read a write not yet synced, waits for a sync that began after it was applied (a
// batch that did neither is answered at once). docs/design.md has the argument.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "deferred_sync.h"
#include "idem/engine.h"
#include "idem/operation.h"
#include "idem/result.h"
#include "idem/serving.h"
#include "idem/store.h"
#include "server_metrics.h"

namespace idem {

class CommitQueue {
 public:
  using Done = std::function<void(Status status, std::vector<Result<OpResult>> results)>;

  // Runs `flush` later on the event loop that calls Submit (e.g. asio::post onto it).
  using Defer = std::function<void(std::function<void()> flush)>;

  // Applies with store->Apply: a waiting Begin or Lock blocks the thread that applies its batch.
  CommitQueue(Store* store, size_t max_batch_ops, int engine_threads, Defer defer = nullptr);
  // Applies with engine->ApplyNoWait (ApplyDeferSync on the loop under Durability::kSync).
  // `metrics`, unless null, counts each batch's size and each WAL sync; it must outlive the queue.
  CommitQueue(ServingEngine* engine, size_t max_batch_ops, int engine_threads,
              Defer defer = nullptr, ServerMetrics* metrics = nullptr);
  // An Engine is served through ServingEngine::Open: applying it as a plain Store would block
  // on waiting Begins and Locks and fsync on the loop without saying so.
  CommitQueue(Engine* engine, size_t max_batch_ops, int engine_threads,
              Defer defer = nullptr) = delete;
  ~CommitQueue();  // Stop()
  CommitQueue(const CommitQueue&) = delete;
  CommitQueue& operator=(const CommitQueue&) = delete;

  // Queues `ops` (whose strings must stay valid until `done` is called: keep their owner inside
  // `done`) and calls `done` once they are applied and durable as the Store is configured.
  // More than max_batch_ops ops: done(InvalidArgument) at once. After Stop(): done(Shutdown).
  void Submit(std::vector<Op> ops, Done done);

  // Runs `task` on an engine thread (in queue order): any other Store call, e.g. Stats, so that
  // no I/O thread ever blocks on the database. With engine_threads == 0 it runs at once on the
  // caller (the loop). After Stop(): runs it inline with `stopped`=true.
  void Run(std::function<void(bool stopped)> task);

  // Runs `task`, which may block for long (a backup's checkpoint: a flush, then links or copies
  // of every table file), on a thread of its own: never on the event loop (engine_threads == 0)
  // nor on an engine thread, whose group commits would wait behind it. Stop() waits for it.
  // After Stop(): runs it inline with `stopped`=true. At most max_blocking_tasks run at once:
  // past that, Busy naming the limit, and `task` is not run.
  // The task returns its answer (or null), which runs once the task no longer counts towards
  // the limit: a client that waits for each answer before asking again is never refused.
  using BlockingAnswer = std::function<void()>;
  [[nodiscard]] Status RunBlocking(std::function<BlockingAnswer(bool stopped)> task);
  // Before the first RunBlocking (ServerOptions::max_admin_requests); >= 1.
  void SetMaxBlockingTasks(size_t n) { max_blocking_tasks_ = n; }

  // Applies everything already queued, then joins the engine threads and RunBlocking's
  // threads. Idempotent.
  void Stop();

  // For tests and stats: Store::Apply calls made and requests they carried.
  uint64_t applies() const;
  uint64_t requests() const;

 private:
  struct Item {
    std::vector<Op> ops;
    Done done;
    std::function<void(bool)> task;  // set instead of ops/done for Run()
  };

  CommitQueue(Store* store, ServingEngine* engine, size_t max_batch_ops, int engine_threads,
              Defer defer, ServerMetrics* metrics);

  void EngineLoop();
  // engine_threads == 0: applies everything queued, in batches of at most max_batch_ops ops.
  void FlushOnLoop();
  // Moves the queued requests at the front, up to max_batch_ops ops, into `batch`. Requires mu_.
  void TakeBatch(std::vector<Item>& batch);
  // Applies the ops of a batch as one Store::Apply (ApplyDeferSync with sync_).
  Status ApplyBatch(std::span<const Op> ops, std::vector<Result<OpResult>>* results,
                    bool* needs_sync);
  // Applies `batch` and completes each request (or, with sync_, has it held until a sync covers
  // it).
  void Commit(std::vector<Item>& batch, std::vector<Op>& ops,
              std::vector<Result<OpResult>>& results);
  // Completes each request of `batch` with its share of `results` (`ops` in all), or holds
  // them until a sync covers them (with sync_ and `needs_sync`).
  void Answer(std::vector<Item>& batch, Status status, size_t ops,
              std::vector<Result<OpResult>>& results, bool needs_sync);

  Store* const store_;
  ServingEngine* const engine_;  // store_ as a ServingEngine, or null for a plain Store
  const size_t max_batch_ops_;
  ServerMetrics* const metrics_;  // may be null

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;        // guarded by mu_
  bool stopping_ = false;         // guarded by mu_
  uint64_t applies_ = 0;          // guarded by mu_
  uint64_t requests_ = 0;         // guarded by mu_
  bool flush_scheduled_ = false;  // guarded by mu_; loop mode: a FlushOnLoop is coming
  // Held for a whole FlushOnLoop: one flush at a time, so Stop's flush also waits for a flush
  // in progress on the loop, and no batch is applied after Stop's last sync.
  std::mutex flush_mu_;
  // FlushOnLoop's working vectors, guarded by flush_mu_: kept across flushes so that a loop turn
  // does not allocate them again.
  std::vector<Item> flush_batch_;
  std::vector<Op> flush_ops_;
  std::vector<Result<OpResult>> flush_results_;
  std::vector<DeferredSync::Completion> flush_held_;  // with sync_: only the loop commits
  std::vector<std::thread> threads_;
  // RunBlocking's threads, guarded by mu_; each sets its flag when it has answered, so the next
  // RunBlocking joins it. blocking_running_ counts the tasks that have not returned yet.
  struct BlockingThread {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::vector<BlockingThread> blocking_;
  size_t blocking_running_ = 0;
  size_t max_blocking_tasks_ = 4;
  const bool on_loop_;  // engine_threads == 0
  const Defer defer_;
  // On the loop, a ServingEngine, Durability::kSync (see above); else null.
  std::unique_ptr<DeferredSync> sync_;
};

}  // namespace idem
