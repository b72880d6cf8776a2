// DeferredSync: the CommitQueue's fsync stage on the event loop under Durability::kSync.
//
// The problem: the loop that applies a batch is the loop that reads the next requests; if it
// fsynced each batch itself it would read nothing while the disk syncs, and every batch would
// pay its own fsync. The mechanism: the loop applies with ServingEngine::ApplyDeferSync (written
// to the WAL, visible, not yet fsynced) and hands the batch's completions here with Hold(); a
// sync thread runs ServingEngine::SyncWal whenever completions are held, and each finished sync
// has the loop release every batch held before the sync began. So the loop applies the next
// batches while the disk syncs the previous ones, with one fsync per sync rather than per batch.
// A failed sync answers every batch it covered "not confirmed durable" (IOError); later batches
// wait for syncs of their own (the engine refuses to sync until it has recovered:
// write_health.h).
//
// Threads: Hold() is called by the applying thread (the loop, or Stop's last flush); the sync
// thread only syncs and posts; the completions run where `post` runs them (the loop) or, at
// Stop(), on the caller.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "idem/result.h"
#include "idem/serving.h"
#include "idem/status.h"
#include "idem/store.h"
#include "server_metrics.h"

namespace idem {

class DeferredSync {
 public:
  using Done = std::function<void(Status status, std::vector<Result<OpResult>> results)>;
  // Runs `fn` later on the event loop (e.g. asio::post onto it).
  using Post = std::function<void(std::function<void()> fn)>;

  // A request of an applied batch, answered once a sync covers the batch.
  struct Completion {
    Done done;
    Status status;
    std::vector<Result<OpResult>> results;
  };

  // Starts the sync thread. `engine`, and `metrics` unless null (each sync's latency), must
  // outlive this object.
  DeferredSync(ServingEngine* engine, Post post, ServerMetrics* metrics = nullptr);
  ~DeferredSync();  // Stop()
  DeferredSync(const DeferredSync&) = delete;
  DeferredSync& operator=(const DeferredSync&) = delete;

  // Takes the completions of one batch just applied with ApplyDeferSync (leaving `batch` empty)
  // and runs them, on the loop, after a SyncWal that began after this call: with their own
  // status and results if it succeeded, with IOError "not confirmed durable" if it failed.
  void Hold(std::vector<Completion>* batch);

  // Syncs once more if anything is held, joins the sync thread, then runs every completion on the
  // caller (the loop may already be stopped). Nothing may be held after it. Idempotent.
  void Stop();

 private:
  struct Held {
    uint64_t seq;  // the batch's number in held_seq_
    Completion completion;
  };
  // The sync thread: SyncWal while batches are held, then has the loop release them.
  void SyncLoop();
  // Runs the completions of every batch a finished sync covered.
  void ReleaseSynced();

  ServingEngine* const engine_;
  const Post post_;
  ServerMetrics* const metrics_;

  std::mutex mu_;
  std::condition_variable cv_;  // a batch was held, or stopping
  std::deque<Held> held_;       // guarded by mu_; in seq order
  uint64_t held_seq_ = 0;       // guarded by mu_; batches held
  uint64_t synced_seq_ = 0;     // guarded by mu_; batches a finished sync covered
  // guarded by mu_: the last failed sync, and the last batch it covered. Batches up to there
  // fail; those after are answered by the syncs that cover them.
  Status sync_error_;
  uint64_t sync_error_through_seq_ = 0;
  bool release_posted_ = false;  // guarded by mu_; a ReleaseSynced is on its way to the loop
  bool stopping_ = false;        // guarded by mu_
  std::thread thread_;
};

}  // namespace idem
