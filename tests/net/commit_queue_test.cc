#include "commit_queue.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "engine_open.h"
#include "support/fault_injection_fs.h"
#include "support/outcome_name.h"
#include "support/temp_dir.h"

namespace idem {
namespace {

// A Store whose first Apply blocks until Release(), so a test can queue requests behind it and
// see exactly how the queue groups them. Each result echoes its op's key in record->payload.
class GatedStore : public Store {
 public:
  Status Apply(std::span<const Op> ops, std::vector<Result<OpResult>>* results) override {
    std::unique_lock<std::mutex> lock(mu_);
    calls_.push_back(ops.size());
    cv_.notify_all();
    cv_.wait(lock, [this] { return released_; });
    results->clear();
    if (calls_.size() == fail_call_) return Status::IOError("disk on fire");
    if (ops.size() > max_ops_at_once_) return Status::InvalidArgument("too many at once");
    for (const Op& op : ops) {
      OpResult r;
      r.outcome = Outcome::kInserted;
      r.record.emplace().payload = std::string(op.key);
      results->push_back(std::move(r));
    }
    return Status::Ok();
  }
  Result<StoreStats> Stats() override { return StoreStats{}; }

  void WaitForCalls(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return calls_.size() >= n; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }
  void FailCall(size_t n) { fail_call_ = n; }
  // Refuses (applying nothing) a batch of more than `n` ops, as the journal layout refuses a
  // batch that does not fit in one of its segments.
  void RefuseMoreThan(size_t n) { max_ops_at_once_ = n; }
  std::vector<size_t> calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<size_t> calls_;  // op count of each Apply
  bool released_ = false;
  size_t fail_call_ = 0;  // 1-based; 0 = never
  size_t max_ops_at_once_ = SIZE_MAX;
};

// Collects the completions of submitted requests.
class Completions {
 public:
  CommitQueue::Done Expect(std::string name) {
    return [this, name](Status s, std::vector<Result<OpResult>> results) {
      std::string got = s.ok() ? "" : std::string(CodeName(s.code()));
      for (const auto& r : results) got += (got.empty() ? "" : ",") + r->record->payload;
      std::lock_guard<std::mutex> lock(mu_);
      done_[name] = got;
      cv_.notify_all();
    };
  }
  std::map<std::string, std::string> WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return done_.size() >= n; });
    return done_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::string> done_;
};

std::vector<Op> Gets(std::vector<std::string_view> keys) {
  std::vector<Op> ops;
  for (std::string_view k : keys) ops.push_back(Op::Get({.ns = "ns", .key = k}));
  return ops;
}

TEST(CommitQueueTest, RequestsQueuedDuringACommitShareTheNextApply) {
  GatedStore store;
  CommitQueue queue(&store, 100, 1);
  Completions done;
  queue.Submit(Gets({"a1"}), done.Expect("a"));
  store.WaitForCalls(1);  // the engine thread is inside the first Apply
  queue.Submit(Gets({"b1", "b2"}), done.Expect("b"));
  queue.Submit(Gets({"c1", "c2", "c3"}), done.Expect("c"));
  queue.Submit(Gets({"d1"}), done.Expect("d"));
  store.Release();
  auto results = done.WaitFor(4);
  EXPECT_EQ((std::vector<size_t>{1, 6}), store.calls());  // one Apply for b, c and d
  EXPECT_EQ("a1", results["a"]);
  EXPECT_EQ("b1,b2", results["b"]);
  EXPECT_EQ("c1,c2,c3", results["c"]);
  EXPECT_EQ("d1", results["d"]);
  EXPECT_EQ(2u, queue.applies());
  EXPECT_EQ(4u, queue.requests());
}

TEST(CommitQueueTest, ABatchStaysWithinMaxBatchOps) {
  GatedStore store;
  CommitQueue queue(&store, 4, 1);
  Completions done;
  queue.Submit(Gets({"a"}), done.Expect("a"));
  store.WaitForCalls(1);
  queue.Submit(Gets({"b1", "b2", "b3"}), done.Expect("b"));
  queue.Submit(Gets({"c1", "c2", "c3"}), done.Expect("c"));
  queue.Submit(Gets({"d"}), done.Expect("d"));
  store.Release();
  done.WaitFor(4);
  EXPECT_EQ((std::vector<size_t>{1, 3, 4}), store.calls());
}

TEST(CommitQueueTest, ARequestAboveMaxBatchOpsFailsAlone) {
  GatedStore store;
  store.Release();
  CommitQueue queue(&store, 2, 1);
  Completions done;
  queue.Submit(Gets({"x", "y", "z"}), done.Expect("big"));
  queue.Submit(Gets({"ok"}), done.Expect("small"));
  auto results = done.WaitFor(2);
  EXPECT_EQ("INVALID_ARGUMENT", results["big"]);
  EXPECT_EQ("ok", results["small"]);
}

// Requests the store takes alone but refuses together (InvalidArgument: nothing applied) are
// applied one by one; one it refuses alone fails alone.
TEST(CommitQueueTest, RequestsRefusedTogetherAreAppliedAlone) {
  GatedStore store;
  store.RefuseMoreThan(3);
  CommitQueue queue(&store, 100, 1);
  Completions done;
  queue.Submit(Gets({"a"}), done.Expect("a"));
  store.WaitForCalls(1);
  queue.Submit(Gets({"b1", "b2"}), done.Expect("b"));
  queue.Submit(Gets({"c1", "c2"}), done.Expect("c"));
  queue.Submit(Gets({"d1", "d2", "d3", "d4"}), done.Expect("d"));
  store.Release();
  auto results = done.WaitFor(4);
  EXPECT_EQ((std::vector<size_t>{1, 8, 2, 2, 4}), store.calls());
  EXPECT_EQ("a", results["a"]);
  EXPECT_EQ("b1,b2", results["b"]);
  EXPECT_EQ("c1,c2", results["c"]);
  EXPECT_EQ("INVALID_ARGUMENT", results["d"]);
}

TEST(CommitQueueTest, AFailedApplyFailsEveryRequestInIt) {
  GatedStore store;
  store.FailCall(2);
  CommitQueue queue(&store, 100, 1);
  Completions done;
  queue.Submit(Gets({"a"}), done.Expect("a"));
  store.WaitForCalls(1);
  queue.Submit(Gets({"b"}), done.Expect("b"));
  queue.Submit(Gets({"c"}), done.Expect("c"));
  store.Release();
  auto results = done.WaitFor(3);
  EXPECT_EQ("a", results["a"]);
  EXPECT_EQ("IO_ERROR", results["b"]);
  EXPECT_EQ("IO_ERROR", results["c"]);
}

TEST(CommitQueueTest, StopAppliesWhatIsQueuedThenRefuses) {
  GatedStore store;
  CommitQueue queue(&store, 100, 2);
  Completions done;
  queue.Submit(Gets({"a"}), done.Expect("a"));
  store.WaitForCalls(1);
  queue.Submit(Gets({"b"}), done.Expect("b"));
  std::thread stopper([&] { queue.Stop(); });
  store.Release();
  stopper.join();
  queue.Submit(Gets({"late"}), done.Expect("late"));
  bool task_saw_stop = false;
  queue.Run([&](bool stopped) { task_saw_stop = stopped; });
  auto results = done.WaitFor(3);
  EXPECT_EQ("a", results["a"]);
  EXPECT_EQ("b", results["b"]);
  EXPECT_EQ("SHUTDOWN", results["late"]);
  EXPECT_TRUE(task_saw_stop);
}

TEST(CommitQueueTest, TasksRunOnAnEngineThread) {
  GatedStore store;
  store.Release();
  CommitQueue queue(&store, 100, 1);
  std::promise<std::thread::id> ran_on;
  queue.Run([&](bool) { ran_on.set_value(std::this_thread::get_id()); });
  EXPECT_NE(std::this_thread::get_id(), ran_on.get_future().get());
}

// A backup may take seconds: even without engine threads (the loop applies) it must not run on
// the caller, and Stop waits for it; after Stop it is refused inline.
TEST(CommitQueueTest, BlockingTasksRunOnTheirOwnThreadAndStopWaitsForThem) {
  GatedStore store;
  store.Release();
  CommitQueue queue(&store, 100, 0);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> finished{0};
  std::thread::id ran_on;
  for (int i = 0; i < 2; ++i) {
    ASSERT_OK(queue.RunBlocking([&, i](bool stopped) -> CommitQueue::BlockingAnswer {
      EXPECT_FALSE(stopped);
      if (i == 0) ran_on = std::this_thread::get_id();
      released.wait();
      return [&] { finished++; };
    }));
  }
  EXPECT_EQ(0, finished.load());  // RunBlocking returned while both tasks wait
  release.set_value();
  queue.Stop();
  EXPECT_EQ(2, finished.load());
  EXPECT_NE(std::this_thread::get_id(), ran_on);
  bool saw_stop = false;
  bool answered = false;
  ASSERT_OK(queue.RunBlocking([&](bool stopped) -> CommitQueue::BlockingAnswer {
    saw_stop = stopped;
    return [&] { answered = true; };
  }));
  EXPECT_TRUE(saw_stop);
  EXPECT_TRUE(answered);
}

// Every admin request holds a thread until it finishes: a client sending many must not make the
// server start a thread for each. Past the cap a task is refused (Busy) and never run; a finished
// task frees its place.
TEST(CommitQueueTest, BlockingTasksBeyondTheCapAreRefusedBusy) {
  GatedStore store;
  store.Release();
  CommitQueue queue(&store, 100, 0);
  queue.SetMaxBlockingTasks(2);
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<int> ran{0};
  const auto held = [&](bool) -> CommitQueue::BlockingAnswer {
    ran++;
    released.wait();
    return nullptr;
  };
  ASSERT_OK(queue.RunBlocking(held));
  ASSERT_OK(queue.RunBlocking(held));
  bool third_ran = false;
  Status third = queue.RunBlocking([&](bool) -> CommitQueue::BlockingAnswer {
    third_ran = true;
    return nullptr;
  });
  EXPECT_TRUE(third.IsBusy()) << third.ToString();
  EXPECT_NE(std::string::npos, third.message().find("max_admin_requests")) << third.ToString();
  release.set_value();
  // Once the held tasks have returned, their places are free again.
  Status later = Status::Busy("");
  for (int i = 0; i < 2000 && !later.ok(); ++i) {
    later = queue.RunBlocking([](bool) -> CommitQueue::BlockingAnswer { return nullptr; });
    if (!later.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(later.ok()) << later.ToString();
  queue.Stop();
  EXPECT_FALSE(third_ran);
  EXPECT_EQ(2, ran.load());
}

// An admin client waits for each answer before it asks again; the thread that answered may not
// have finished yet, and must not count against the cap by then (seen: BUSY for a client that
// paged through a scan, under load).
TEST(CommitQueueTest, AClientThatWaitsForEachAnswerIsNeverRefusedBusy) {
  GatedStore store;
  store.Release();
  CommitQueue queue(&store, 100, 0);
  queue.SetMaxBlockingTasks(1);
  for (int i = 0; i < 200; ++i) {
    std::promise<void> answered;
    Status s = queue.RunBlocking([&](bool) -> CommitQueue::BlockingAnswer {
      return [&] {
        answered.set_value();
        // Whatever the answering thread still does after the client has its answer.
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      };
    });
    ASSERT_TRUE(s.ok()) << "request " << i << ": " << s.ToString();
    answered.get_future().wait();
  }
  queue.Stop();
}

TEST(CommitQueueTest, WithoutEngineThreadsSubmitAppliesInline) {
  GatedStore store;
  store.Release();
  CommitQueue queue(&store, 100, 0);
  std::string got;
  queue.Submit(Gets({"k"}), [&](Status s, std::vector<Result<OpResult>> r) {
    ASSERT_OK(s);
    got = r[0]->record->payload;
  });
  EXPECT_EQ("k", got);  // already done when Submit returned
}

// engine_threads == 0 with a loop: requests submitted before the loop runs its flush (the other
// connections' reads of the same loop turn) become one Apply, split only at max_batch_ops.
// Tasks posted from any thread (the sync thread posts too) run only when the test says.
class FakeLoop {
 public:
  CommitQueue::Defer Defer() {
    return [this](std::function<void()> fn) {
      std::lock_guard<std::mutex> lock(mu_);
      posted_.push_back(std::move(fn));
      cv_.notify_all();
    };
  }
  size_t posted() {
    std::lock_guard<std::mutex> lock(mu_);
    return posted_.size();
  }
  void WaitForPosted(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return posted_.size() >= n; });
  }
  void RunAll() {
    while (true) {
      std::function<void()> fn;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (posted_.empty()) return;
        fn = std::move(posted_.front());
        posted_.erase(posted_.begin());
      }
      fn();
    }
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::function<void()>> posted_;
};

TEST(CommitQueueTest, OnTheLoopOneTurnsRequestsShareOneApply) {
  GatedStore store;
  store.Release();
  FakeLoop loop;
  CommitQueue queue(&store, 4, 0, loop.Defer());
  Completions done;
  queue.Submit(Gets({"a"}), done.Expect("a"));
  queue.Submit(Gets({"b1", "b2"}), done.Expect("b"));
  queue.Submit(Gets({"c1", "c2"}), done.Expect("c"));
  EXPECT_TRUE(store.calls().empty());  // nothing applied before the loop gets to the flush
  EXPECT_EQ(1u, loop.posted());        // one flush scheduled for the three requests
  loop.RunAll();
  auto results = done.WaitFor(3);
  EXPECT_EQ((std::vector<size_t>{3, 2}), store.calls());  // a+b, then c (max_batch_ops 4)
  EXPECT_EQ("b1,b2", results["b"]);
  EXPECT_EQ("c1,c2", results["c"]);
  // The next turn schedules a new flush.
  queue.Submit(Gets({"d"}), done.Expect("d"));
  EXPECT_EQ(1u, loop.posted());
  loop.RunAll();
  EXPECT_EQ("d", done.WaitFor(4)["d"]);
  EXPECT_EQ(3u, queue.applies());
}

TEST(CommitQueueTest, OnTheLoopRequestsSubmittedByACallbackJoinTheFlush) {
  GatedStore store;
  store.Release();
  FakeLoop loop;
  CommitQueue queue(&store, 100, 0, loop.Defer());
  Completions done;
  auto again = done.Expect("again");
  queue.Submit(Gets({"first"}), [&](Status, std::vector<Result<OpResult>>) {
    queue.Submit(Gets({"second"}), again);  // e.g. a waiting Begin retried from a callback
  });
  loop.RunAll();
  EXPECT_EQ("second", done.WaitFor(1)["again"]);
  EXPECT_EQ((std::vector<size_t>{1, 1}), store.calls());
}

TEST(CommitQueueTest, OnTheLoopStopAppliesWhatTheLoopNeverFlushed) {
  GatedStore store;
  store.Release();
  FakeLoop loop;
  CommitQueue queue(&store, 100, 0, loop.Defer());
  Completions done;
  queue.Submit(Gets({"a"}), done.Expect("a"));
  queue.Stop();  // the loop stopped before running its flush
  EXPECT_EQ("a", done.WaitFor(1)["a"]);
  loop.RunAll();  // a flush that runs late finds nothing to do
  EXPECT_EQ((std::vector<size_t>{1}), store.calls());
  queue.Submit(Gets({"late"}), done.Expect("late"));
  EXPECT_EQ("SHUTDOWN", done.WaitFor(2)["late"]);
}

// On the loop under Durability::kSync the loop applies without fsyncing and a sync thread
// fsyncs: no request is answered before the sync that covers its batch has finished, and one
// sync covers every batch applied before it began.
TEST(CommitQueueTest, OnTheLoopUnderSyncNothingIsAnsweredBeforeItsSync) {
  testing::TempDir dir;
  EngineOptions options;  // Durability::kSync
  options.reclaim_interval_ms = 0;
  auto opened = ServingEngine::Open(dir.Sub("db"), options);
  ASSERT_OK(opened);
  ServingEngine& engine = **opened;
  FakeLoop loop;
  CommitQueue queue(&engine, 100, 0, loop.Defer());
  std::vector<std::string> answered;
  auto expect = [&](std::string name) {
    return [&, name](Status s, std::vector<Result<OpResult>> r) {
      ASSERT_OK(s);
      ASSERT_EQ(1u, r.size());
      Result<StoreStats> stats = engine.Stats();
      ASSERT_OK(stats);
      EXPECT_GE(stats->wal_syncs, 1u) << name << " answered before any sync";
      answered.push_back(name + ":" + std::string(OutcomeName(r[0]->outcome)));
    };
  };
  queue.Submit({Op::Insert({.ns = "ns", .key = "a", .status = "NEW"})}, expect("a"));
  // The flush: a is applied (and visible). It is answered only after a sync covered it (which
  // `expect` checks): that may already happen within this RunAll, if the sync thread finishes
  // and posts the release while it runs.
  loop.RunAll();
  Result<StoreStats> stats = engine.Stats();
  ASSERT_OK(stats);
  EXPECT_EQ(1u, stats->writes);
  // b reads a's write, maybe before it is durable: it waits for a sync too.
  queue.Submit({Op::Insert({.ns = "ns", .key = "a", .status = "NEW"})}, expect("b"));
  while (answered.size() < 2) {
    loop.WaitForPosted(1);  // the sync thread finished a sync and posted the release
    loop.RunAll();
  }
  // (b may be answered first: if a's sync finished before b was applied, b saw only durable
  // data and leaves with its flush, while a's release is still on its way to the loop.)
  std::vector<std::string> sorted = answered;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ((std::vector<std::string>{"a:INSERTED", "b:EXISTS"}), sorted);
  // Now everything applied is synced: a duplicate writes nothing, sees nothing unsynced, and is
  // answered by the flush itself, without another sync.
  stats = engine.Stats();
  ASSERT_OK(stats);
  const uint64_t syncs = stats->wal_syncs;
  queue.Submit({Op::Insert({.ns = "ns", .key = "a", .status = "NEW"})}, expect("c"));
  loop.RunAll();
  ASSERT_EQ(3u, answered.size());
  EXPECT_EQ("c:EXISTS", answered[2]);
  stats = engine.Stats();
  ASSERT_OK(stats);
  EXPECT_EQ(syncs, stats->wal_syncs);
  queue.Stop();
  stats = engine.Stats();
  ASSERT_OK(stats);
  EXPECT_LE(stats->wal_syncs, 2u);  // one sync per group, not per request; none for c
}

// The server's path under kSync (the loop applies, the sync thread syncs) on an engine whose
// disk fails on demand (support/fault_injection_fs.h).
class FaultyDiskQueue {
 public:
  FaultyDiskQueue() : fs_(std::make_shared<testing::FaultInjectionFs>()) {
    options_.reclaim_interval_ms = 0;  // Durability::kSync
    options_.log = [](const LogRecord&) {};
    Open();
  }
  ~FaultyDiskQueue() { Close(); }
  void Open() {
    auto opened = OpenEngineOnFileSystem(dir_.Sub("db"), options_, fs_);
    ASSERT_OK(opened);
    engine_ = std::move(*opened);
    queue_ = std::make_unique<CommitQueue>(engine_.get(), 100, 0, loop_.Defer());
  }
  void Close() {
    if (queue_) queue_->Stop();
    queue_.reset();
    engine_.reset();
  }
  testing::FaultInjectionFs& fs() { return *fs_; }

  // Submits one op and runs the loop until it is answered: "OUTCOME" or "CODE: message".
  std::string Apply(Op op) {
    std::string answer;
    bool answered = false;
    queue_->Submit({std::move(op)}, [&](Status s, std::vector<Result<OpResult>> r) {
      answer = !s.ok() ? s.ToString() : testing::Name(r[0]);
      answered = true;
    });
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!answered && std::chrono::steady_clock::now() < deadline) {
      loop_.RunAll();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // the sync thread's turn
    }
    return answered ? answer : "NO ANSWER";
  }
  std::string Insert(const std::string& key) {
    std::string answer = Apply(Op::Insert({.ns = "pay", .key = key, .status = "PENDING"}));
    if (answer == "INSERTED") acknowledged_.push_back(key);
    return answer;
  }
  // Retries inserts, as a client would, until one is acknowledged (false after 10 s).
  bool WaitUntilWritable() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (int i = 0; std::chrono::steady_clock::now() < deadline; ++i) {
      if (Insert("after-" + std::to_string(i)) == "INSERTED") return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }
  void ExpectEveryAcknowledgedRecordAfterReopen() {
    Close();
    Open();
    for (const std::string& key : acknowledged_) {
      EXPECT_EQ("FOUND", Apply(Op::Get({.ns = "pay", .key = key}))) << key;
    }
  }

 private:
  testing::TempDir dir_;
  std::shared_ptr<testing::FaultInjectionFs> fs_;
  EngineOptions options_;
  std::unique_ptr<ServingEngine> engine_;
  FakeLoop loop_;
  std::unique_ptr<CommitQueue> queue_;
  std::vector<std::string> acknowledged_;
};

// A disk that fills up: a write the disk refused is answered IO_ERROR naming the cause; the
// sync thread does not abort the process (it called SyncWAL on the failed WAL: SIGABRT in
// Debian's librocksdb); reads of durable records are answered; writes work again once space
// returns; nothing acknowledged is lost.
TEST(CommitQueueTest, OnTheLoopUnderSyncAFullDiskFailsWritesNotTheProcess) {
  FaultyDiskQueue q;
  ASSERT_EQ("INSERTED", q.Insert("a"));
  q.fs().FailWalAppends(testing::FaultInjectionFs::Fault::kNoSpace);
  const std::string failed = q.Insert("b");
  EXPECT_EQ(0u, failed.find("IO_ERROR")) << failed;
  EXPECT_NE(std::string::npos, failed.find("No space left on device")) << failed;
  const std::string refused = q.Insert("c");
  EXPECT_NE(std::string::npos, refused.find("writes suspended after")) << refused;
  EXPECT_EQ("FOUND", q.Apply(Op::Get({.ns = "pay", .key = "a"})));
  q.fs().ClearAll();
  ASSERT_TRUE(q.WaitUntilWritable());
  q.ExpectEveryAcknowledgedRecordAfterReopen();
}

// While writes are suspended, a refused write never happened: it is answered with the refusal
// itself, by the flush that applied it, not held for a sync that is refused too and then
// reported "not confirmed durable" (which says it may have been applied). The same for the
// write whose WAL append failed: it is answered with its own error.
TEST(CommitQueueTest, OnTheLoopUnderSyncARefusedWriteIsAnsweredAsRefused) {
  FaultyDiskQueue q;
  ASSERT_EQ("INSERTED", q.Insert("a"));
  q.fs().FailWalAppends(testing::FaultInjectionFs::Fault::kNoSpace);
  const std::string failed = q.Insert("b");
  EXPECT_EQ(0u, failed.find("IO_ERROR: ")) << failed;
  EXPECT_EQ(std::string::npos, failed.find("not confirmed durable")) << failed;
  EXPECT_NE(std::string::npos, failed.find("No space left on device")) << failed;
  for (const std::string key : {"c", "d"}) {
    const std::string refused = q.Insert(key);
    EXPECT_EQ(0u, refused.find("IO_ERROR: writes suspended after")) << refused;
  }
  q.fs().ClearAll();
  ASSERT_TRUE(q.WaitUntilWritable());
}

// docs/protocol.md §5: an IO_ERROR reading "writes suspended after ..." is a refusal, and the
// refused write never happened, not even once writes resume or the database is reopened.
TEST(CommitQueueTest, OnTheLoopUnderSyncAWriteRefusedWhileSuspendedNeverHappened) {
  FaultyDiskQueue q;
  ASSERT_EQ("INSERTED", q.Insert("a"));
  q.fs().FailWalAppends(testing::FaultInjectionFs::Fault::kNoSpace);
  ASSERT_EQ(0u, q.Insert("b").find("IO_ERROR: ")) << "the write that suspends writes";
  const std::string refused = q.Insert("c");
  ASSERT_EQ(0u, refused.find("IO_ERROR: writes suspended after")) << refused;
  q.fs().ClearAll();
  ASSERT_TRUE(q.WaitUntilWritable());
  EXPECT_EQ("NOT_FOUND", q.Apply(Op::Get({.ns = "pay", .key = "c"})));
  q.ExpectEveryAcknowledgedRecordAfterReopen();
  EXPECT_EQ("NOT_FOUND", q.Apply(Op::Get({.ns = "pay", .key = "c"})));
}

// A failed fdatasync: the batch whose sync failed is answered IO_ERROR (effect unknown); reads
// go on; writes work again without a restart (before, the first failed sync failed every later
// request, reads included, until a restart). One sync fails here: with the fault still there
// while recovery flushes, RocksDB 7.8's Resume can wait for ever (README, known gaps);
// disk_fault_test's ABurstOfFailedSyncsEndsWithoutARestart drives a longer burst on the engine.
TEST(CommitQueueTest, OnTheLoopUnderSyncAFailedSyncEndsWithoutARestart) {
  FaultyDiskQueue q;
  ASSERT_EQ("INSERTED", q.Insert("a"));
  std::atomic<int> failed_syncs{0};
  q.fs().OnWalSync([&] { return failed_syncs.fetch_add(1) == 0; });  // the next sync only
  const std::string failed = q.Insert("b");
  EXPECT_EQ(0u, failed.find("IO_ERROR: not confirmed durable")) << failed;
  EXPECT_NE(std::string::npos, failed.find("Input/output error")) << failed;
  EXPECT_EQ("FOUND", q.Apply(Op::Get({.ns = "pay", .key = "a"})));
  ASSERT_TRUE(q.WaitUntilWritable());
  q.fs().OnWalSync(nullptr);
  q.ExpectEveryAcknowledgedRecordAfterReopen();
}

}  // namespace
}  // namespace idem
