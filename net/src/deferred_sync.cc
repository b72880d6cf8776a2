#include "deferred_sync.h"

#include <pthread.h>

#include <chrono>
#include <utility>

namespace idem {

DeferredSync::DeferredSync(ServingEngine* engine, Post post, ServerMetrics* metrics)
    : engine_(engine), post_(std::move(post)), metrics_(metrics) {
  thread_ = std::thread([this] { SyncLoop(); });
}

DeferredSync::~DeferredSync() { Stop(); }

void DeferredSync::Hold(std::vector<Completion>* batch) {
  {
    // Numbered under the lock the sync thread reads: a sync that sees this number began after
    // the batch was written to the WAL.
    std::lock_guard<std::mutex> lock(mu_);
    const uint64_t seq = ++held_seq_;
    for (Completion& c : *batch) held_.push_back(Held{seq, std::move(c)});
  }
  batch->clear();
  cv_.notify_one();
}

void DeferredSync::Stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();   // after a last sync covering every batch held
  ReleaseSynced();  // the loop may be stopped before the one it posted runs
}

void DeferredSync::SyncLoop() {
  pthread_setname_np(pthread_self(), "idem-sync");  // for top -H and perf
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return held_seq_ > synced_seq_ || stopping_; });
    if (held_seq_ == synced_seq_) return;  // stopping, and every batch is covered
    // Every batch held so far wrote to the WAL before this point: the sync covers them.
    const uint64_t covers = held_seq_;
    lock.unlock();
    const auto began = std::chrono::steady_clock::now();
    Status s = engine_->SyncWal();
    if (metrics_) metrics_->CountWalSync(std::chrono::steady_clock::now() - began, s.ok());
    lock.lock();
    if (!s.ok()) {  // every batch this sync covers fails; later syncs may succeed again
      sync_error_ = s;
      sync_error_through_seq_ = covers;
    }
    synced_seq_ = covers;
    if (release_posted_) continue;  // the loop has not run the last one yet: it takes these too
    release_posted_ = true;
    lock.unlock();
    post_([this] { ReleaseSynced(); });
    lock.lock();
  }
}

void DeferredSync::ReleaseSynced() {
  std::vector<Held> ready;
  Status failed;
  uint64_t failed_through = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    release_posted_ = false;
    while (!held_.empty() && held_.front().seq <= synced_seq_) {
      ready.push_back(std::move(held_.front()));
      held_.pop_front();
    }
    failed = sync_error_;
    failed_through = sync_error_through_seq_;
  }
  for (Held& h : ready) {
    Completion& c = h.completion;
    // A failed sync leaves durability unknown: say so rather than report the outcome.
    if (h.seq <= failed_through) {
      c.done(Status::IOError("not confirmed durable: " + failed.ToString()), {});
    } else {
      c.done(std::move(c.status), std::move(c.results));
    }
  }
}

}  // namespace idem
