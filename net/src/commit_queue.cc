#include "commit_queue.h"

#include <algorithm>
#include <iterator>
#include <string>

namespace idem {

CommitQueue::CommitQueue(Store* store, size_t max_batch_ops, int engine_threads, Defer defer)
    : CommitQueue(store, nullptr, max_batch_ops, engine_threads, std::move(defer), nullptr) {}

CommitQueue::CommitQueue(ServingEngine* engine, size_t max_batch_ops, int engine_threads,
                         Defer defer, ServerMetrics* metrics)
    : CommitQueue(engine, engine, max_batch_ops, engine_threads, std::move(defer), metrics) {}

CommitQueue::CommitQueue(Store* store, ServingEngine* engine, size_t max_batch_ops,
                         int engine_threads, Defer defer, ServerMetrics* metrics)
    : store_(store),
      engine_(engine),
      max_batch_ops_(max_batch_ops),
      metrics_(metrics),
      on_loop_(engine_threads == 0),
      defer_(std::move(defer)) {
  for (int i = 0; i < engine_threads; ++i) threads_.emplace_back([this] { EngineLoop(); });
  if (on_loop_ && defer_ && engine_ != nullptr &&
      engine_->options().durability == Durability::kSync) {
    sync_ = std::make_unique<DeferredSync>(engine_, defer_, metrics_);
  }
}

CommitQueue::~CommitQueue() { Stop(); }

void CommitQueue::Submit(std::vector<Op> ops, Done done) {
  if (ops.size() > max_batch_ops_) {
    done(Status::InvalidArgument("request has " + std::to_string(ops.size()) +
                                 " operations; max_batch_ops is " + std::to_string(max_batch_ops_)),
         {});
    return;
  }
  std::unique_lock<std::mutex> lock(mu_);
  if (stopping_) {
    lock.unlock();
    done(Status::Shutdown("server is stopping"), {});
    return;
  }
  queue_.push_back(Item{std::move(ops), std::move(done), nullptr});
  if (!on_loop_) {
    lock.unlock();
    cv_.notify_one();
    return;
  }
  const bool schedule = !flush_scheduled_;
  flush_scheduled_ = true;
  lock.unlock();
  if (!schedule) return;
  if (defer_) {
    defer_([this] { FlushOnLoop(); });
  } else {
    FlushOnLoop();
  }
}

void CommitQueue::Run(std::function<void(bool stopped)> task) {
  std::unique_lock<std::mutex> lock(mu_);
  if (stopping_ || on_loop_) {
    bool stopped = stopping_;
    lock.unlock();
    task(stopped);
    return;
  }
  queue_.push_back(Item{{}, nullptr, std::move(task)});
  lock.unlock();
  cv_.notify_one();
}

Status CommitQueue::RunBlocking(std::function<BlockingAnswer(bool stopped)> task) {
  std::vector<BlockingThread> finished;
  Status refused;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) {
      auto first_running = std::partition(blocking_.begin(), blocking_.end(),
                                          [](const BlockingThread& b) { return b.done->load(); });
      finished.assign(std::make_move_iterator(blocking_.begin()),
                      std::make_move_iterator(first_running));
      blocking_.erase(blocking_.begin(), first_running);
    }
    if (!stopping_ && blocking_running_ >= max_blocking_tasks_) {
      refused = Status::Busy(std::to_string(blocking_running_) +
                             " admin requests (backup, scan, purge, compact) are running, the "
                             "most at once (max_admin_requests): retry when one has finished");
      task = nullptr;
    } else if (!stopping_) {
      auto done = std::make_shared<std::atomic<bool>>(false);
      ++blocking_running_;
      blocking_.push_back(BlockingThread{std::thread([this, task = std::move(task), done] {
                                           BlockingAnswer answer = task(false);
                                           {
                                             std::lock_guard<std::mutex> count_lock(mu_);
                                             --blocking_running_;
                                           }
                                           if (answer) answer();
                                           done->store(true);
                                         }),
                                         done});
      task = nullptr;
    }
  }
  for (BlockingThread& b : finished) b.thread.join();
  if (task) {  // stopping
    if (BlockingAnswer answer = task(true)) answer();
  }
  return refused;
}

void CommitQueue::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && threads_.empty() && queue_.empty()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (on_loop_) FlushOnLoop();  // the loop may be stopped before its scheduled flush runs
  if (sync_) sync_->Stop();     // a last sync covering every batch applied, then their answers
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  std::vector<BlockingThread> blocking;
  {
    std::lock_guard<std::mutex> lock(mu_);
    blocking.swap(blocking_);
  }
  for (BlockingThread& b : blocking) b.thread.join();
}

uint64_t CommitQueue::applies() const {
  std::lock_guard<std::mutex> lock(mu_);
  return applies_;
}

uint64_t CommitQueue::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

// Runs on each engine thread until Stop() and the queue is empty.
void CommitQueue::EngineLoop() {
  std::vector<Item> batch;
  std::vector<Op> ops;  // reused across batches: the concatenation of the batch's requests
  std::vector<Result<OpResult>> results;
  while (true) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping, and everything queued was applied

    std::function<void(bool)> task;
    if (queue_.front().task) {
      task = std::move(queue_.front().task);
      queue_.pop_front();
    } else {
      TakeBatch(batch);
    }
    const bool more = !queue_.empty();
    lock.unlock();
    if (more) cv_.notify_one();  // another engine thread can start on the rest meanwhile

    if (task) {
      task(false);
    } else {
      Commit(batch, ops, results);
      batch.clear();
    }
  }
}

void CommitQueue::FlushOnLoop() {
  std::lock_guard<std::mutex> flushing(flush_mu_);
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (queue_.empty()) {
        flush_scheduled_ = false;
        return;
      }
      TakeBatch(flush_batch_);
    }
    Commit(flush_batch_, flush_ops_, flush_results_);
    flush_batch_.clear();
  }
}

void CommitQueue::TakeBatch(std::vector<Item>& batch) {
  // Every request queued, in order, while the batch stays within max_batch_ops.
  size_t op_count = 0;
  while (!queue_.empty() && !queue_.front().task &&
         (batch.empty() || op_count + queue_.front().ops.size() <= max_batch_ops_)) {
    op_count += queue_.front().ops.size();
    batch.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
  ++applies_;
  requests_ += batch.size();
}

Status CommitQueue::ApplyBatch(std::span<const Op> ops, std::vector<Result<OpResult>>* results,
                               bool* needs_sync) {
  *needs_sync = false;
  if (sync_) return engine_->ApplyDeferSync(ops, results, needs_sync);
  return engine_ ? engine_->ApplyNoWait(ops, results) : store_->Apply(ops, results);
}

void CommitQueue::Commit(std::vector<Item>& batch, std::vector<Op>& ops,
                         std::vector<Result<OpResult>>& results) {
  ops.clear();
  for (Item& item : batch) {
    for (Op& op : item.ops) ops.push_back(std::move(op));
  }
  // A batch that wrote nothing and saw nothing unsynced is answered at once, even with sync_
  // (a duplicate on an idle server costs no fsync). So is a batch whose Apply failed: it is
  // answered with its own error and no results, so nothing it may have read leaves; held, its
  // refusal would wait for a sync that is refused too, and then read "not confirmed durable",
  // as if the write might have happened.
  bool needs_sync = false;
  Status status = ApplyBatch(ops, &results, &needs_sync);
  if (status.IsInvalidArgument() && batch.size() > 1) {
    // A batch refused whole with InvalidArgument was not applied: the engine refuses before it
    // writes, and a remote store answers so only for a request its server refused whole (a
    // lost connection is an IOError, whose effect is unknown: store.h). Requests that are each
    // within the limits can exceed one together: under the journal layout a batch is one
    // journal entry, which must fit in a segment. So each is applied, and answered, alone.
    size_t offset = 0;
    for (Item& item : batch) {
      const std::span<const Op> own = std::span<const Op>(ops).subspan(offset, item.ops.size());
      offset += item.ops.size();
      std::vector<Result<OpResult>> mine;
      bool own_sync = false;
      Status own_status = ApplyBatch(own, &mine, &own_sync);
      if (metrics_) metrics_->CountBatch(1, own.size());
      std::vector<Item> one;
      one.push_back(std::move(item));
      Answer(one, own_status, own.size(), mine, own_sync);
    }
    return;
  }
  if (metrics_) metrics_->CountBatch(batch.size(), ops.size());
  Answer(batch, status, ops.size(), results, needs_sync);
}

void CommitQueue::Answer(std::vector<Item>& batch, Status status, size_t ops,
                         std::vector<Result<OpResult>>& results, bool needs_sync) {
  if (status.ok() && results.size() != ops) {
    status = Status::Corruption("store returned " + std::to_string(results.size()) +
                                " results for " + std::to_string(ops) + " operations");
  }
  const bool hold = sync_ && needs_sync && status.ok();
  size_t next = 0;
  for (Item& item : batch) {
    std::vector<Result<OpResult>> mine;
    if (status.ok()) {
      mine.reserve(item.ops.size());
      for (size_t i = 0; i < item.ops.size(); ++i) mine.push_back(std::move(results[next++]));
    }
    if (hold) {
      flush_held_.push_back(
          DeferredSync::Completion{std::move(item.done), status, std::move(mine)});
    } else {
      item.done(status, std::move(mine));
    }
  }
  if (hold) sync_->Hold(&flush_held_);
}

}  // namespace idem
