// The RocksDB-backed Engine. How atomicity, durability and expiry work, and why they are correct,
// is argued in docs/design.md; the comments here point at the relevant step.
#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <optional>
#include <thread>
#include <unordered_map>

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include "expiry_stats.h"
#include "fence_allocator.h"
#include "io_accounting.h"
#include "idem/engine.h"
#include "key_codec.h"
#include "key_locks.h"
#include "op_decision.h"
#include "record_codec.h"
#include "rocks_options.h"
#include "rocks_status.h"
#include "validation.h"

namespace idem {
namespace {

// Where an op of the current batch left its key, so later ops of the batch see it.
struct Pending {
  bool present = false;  // false: deleted by an earlier op of this batch
  size_t result_index = 0;
};

class RocksEngine final : public Engine {
 public:
  RocksEngine(EngineOptions options, std::unique_ptr<rocksdb::DB> db, uint64_t fence_reserved,
              std::shared_ptr<IoAccounting> io)
      : options_(std::move(options)),
        clock_(options_.clock),
        db_(std::move(db)),
        fences_(db_.get(), fence_reserved),
        retention_(options_.retention.begin(), options_.retention.end()),
        io_(std::move(io)) {
    write_options_.sync = options_.durability == Durability::kSync;
    if (options_.reclaim_interval_ms > 0) reclaimer_ = std::thread([this] { ReclaimLoop(); });
  }

  ~RocksEngine() override {
    {
      std::lock_guard<std::mutex> lock(reclaim_mu_);
      stopping_ = true;
    }
    reclaim_cv_.notify_all();
    if (reclaimer_.joinable()) reclaimer_.join();
    // A clean close makes even async-mode writes power-cut durable.
    (void)db_->SyncWAL();
    (void)db_->Close();
  }

  Status Apply(std::span<const Op> ops, std::vector<Result<OpResult>>* results) override;
  Result<StoreStats> Stats() override;
  Status CompactAll() override;
  Result<ReclaimReport> ReclaimExpired() override;
  Status Flush() override { return FromRocks(db_->Flush(rocksdb::FlushOptions())); }
  const EngineOptions& options() const override { return options_; }

 private:
  // Reads the live record at `rocks_key`: nullopt if absent or expired at `now_ms`.
  Result<std::optional<Record>> ReadLive(const std::string& rocks_key, int64_t now_ms);
  const RetentionPolicy& PolicyFor(std::string_view ns) const {
    auto it = retention_.find(ns);
    return it == retention_.end() ? options_.default_retention : it->second;
  }
  // Validates `op` and resolves the expiry it would write, if any.
  Result<std::optional<int64_t>> Prepare(const Op& op, int64_t now_ms) const;
  void ReclaimLoop();

  const EngineOptions options_;
  const std::shared_ptr<Clock> clock_;
  std::unique_ptr<rocksdb::DB> db_;
  rocksdb::WriteOptions write_options_;
  FenceAllocator fences_;
  KeyLocks locks_;
  const std::map<std::string, RetentionPolicy, std::less<>> retention_;
  std::atomic<uint64_t> ops_{0};
  std::atomic<uint64_t> writes_{0};
  std::atomic<uint64_t> user_bytes_{0};
  const std::shared_ptr<IoAccounting> io_;

  std::mutex reclaim_mu_;
  std::condition_variable reclaim_cv_;
  bool stopping_ = false;  // guarded by reclaim_mu_
  std::thread reclaimer_;
};

Result<std::optional<Record>> RocksEngine::ReadLive(const std::string& rocks_key, int64_t now_ms) {
  rocksdb::PinnableSlice value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), db_->DefaultColumnFamily(), rocks_key, &value);
  if (s.IsNotFound()) return std::optional<Record>();
  if (!s.ok()) return FromRocks(s);
  std::string_view bytes(value.data(), value.size());
  // Expiry is enforced here, on every read: compaction may not have removed the record yet.
  std::optional<int64_t> expiry = PeekExpiry(bytes);
  if (expiry && *expiry != kNeverExpires && *expiry <= now_ms) return std::optional<Record>();
  std::optional<Record> record(std::in_place);
  if (Status st = DecodeRecord(bytes, &*record); !st.ok()) return st;
  return record;
}

Result<std::optional<int64_t>> RocksEngine::Prepare(const Op& op, int64_t now_ms) const {
  if (Status st = ValidateOp(op, options_.limits); !st.ok()) return st;
  int64_t ttl_ms;
  if (op.type == OpType::kInsert) {
    ttl_ms = op.ttl_ms;
  } else if (op.type == OpType::kCompareAndSet && op.update.ttl_ms) {
    ttl_ms = *op.update.ttl_ms;
  } else {
    return std::optional<int64_t>();
  }
  Result<int64_t> expiry = ResolveExpiry(ttl_ms, PolicyFor(op.ns), now_ms);
  if (!expiry.ok()) return expiry.status();
  return std::optional<int64_t>(*expiry);
}

Status RocksEngine::Apply(std::span<const Op> ops, std::vector<Result<OpResult>>* results) {
  results->clear();
  if (ops.size() > options_.limits.max_batch_ops) {
    return Status::InvalidArgument("batch has " + std::to_string(ops.size()) +
                                   " operations; max_batch_ops is " +
                                   std::to_string(options_.limits.max_batch_ops));
  }
  // One "now" for the whole batch: every op in it is judged at the same instant.
  const int64_t now_ms = clock_->NowMillis();

  // 1. Validate, resolve expiries and encode keys, before taking any lock.
  struct Prepared {
    Status error;
    std::optional<int64_t> expiry_ms;
    std::string key;
  };
  std::vector<Prepared> prepared(ops.size());
  std::vector<size_t> stripes;
  stripes.reserve(ops.size());
  bool writes_possible = false;
  for (size_t i = 0; i < ops.size(); ++i) {
    Result<std::optional<int64_t>> expiry = Prepare(ops[i], now_ms);
    if (!expiry.ok()) {
      prepared[i].error = expiry.status();
      continue;
    }
    prepared[i].expiry_ms = *expiry;
    prepared[i].key.reserve(1 + ops[i].ns.size() + ops[i].key.size());
    AppendRecordKey(ops[i].ns, ops[i].key, &prepared[i].key);
    stripes.push_back(KeyLocks::StripeOf(prepared[i].key));
    writes_possible |= ops[i].type != OpType::kGet;
  }

  // 2. Lock every stripe the batch touches (sorted: no deadlock). A batch of reads needs no lock:
  // a RocksDB Get sees either all of a committed write batch or none of it.
  std::optional<KeyLocks::Guard> guard;
  if (writes_possible) guard.emplace(&locks_, std::move(stripes));

  // 3. Decide each op against the current record (or what an earlier op of this batch left).
  results->reserve(ops.size());
  rocksdb::WriteBatch batch;
  std::unordered_map<std::string_view, Pending> pending;  // only used when ops.size() > 1
  std::string value;
  for (size_t i = 0; i < ops.size(); ++i) {
    Prepared& p = prepared[i];
    if (!p.error.ok()) {
      results->push_back(p.error);
      continue;
    }
    std::optional<Record> loaded;
    const Record* current = nullptr;
    auto seen = ops.size() > 1 ? pending.find(p.key) : pending.end();
    if (seen != pending.end()) {
      if (seen->second.present) current = &*(*results)[seen->second.result_index]->record;
    } else {
      Result<std::optional<Record>> read = ReadLive(p.key, now_ms);
      if (!read.ok()) {
        results->push_back(read.status());
        continue;
      }
      loaded = std::move(*read);
      if (loaded) current = &*loaded;
    }
    Decision d = Decide(ops[i], current, now_ms, p.expiry_ms);
    if (d.write == Decision::Write::kPut) {
      Record& record = *d.result.record;
      if (d.needs_fence) {
        Result<uint64_t> fence = fences_.Next();
        if (!fence.ok()) {
          results->clear();
          return fence.status();
        }
        record.fence = *fence;
      }
      value.clear();
      EncodeRecord(record, &value);
      batch.Put(p.key, value);
    } else if (d.write == Decision::Write::kDelete) {
      batch.Delete(p.key);
    }
    if (d.write != Decision::Write::kNone && ops.size() > 1) {
      pending[p.key] = Pending{d.write == Decision::Write::kPut, results->size()};
    }
    results->push_back(std::move(d.result));
  }

  // 4. Commit every write of the batch as one RocksDB write, still under the stripe locks, so
  // no other operation on these keys can observe or act on the state before it is durable.
  if (batch.Count() > 0) {
    rocksdb::Status s = db_->Write(write_options_, &batch);
    if (!s.ok()) {
      results->clear();
      return FromRocks(s);
    }
    writes_.fetch_add(1, std::memory_order_relaxed);
    user_bytes_.fetch_add(batch.GetDataSize(), std::memory_order_relaxed);
  }
  ops_.fetch_add(ops.size(), std::memory_order_relaxed);
  return Status::Ok();
}

Result<StoreStats> RocksEngine::Stats() {
  StoreStats stats;
  uint64_t v = 0;
  if (db_->GetIntProperty("rocksdb.estimate-num-keys", &v)) stats.estimated_live_records = v;
  if (db_->GetIntProperty("rocksdb.total-sst-files-size", &v)) stats.sst_bytes = v;
  if (db_->GetIntProperty("rocksdb.cur-size-all-mem-tables", &v)) stats.memtable_bytes = v;
  rocksdb::VectorLogPtr wal_files;
  if (db_->GetSortedWalFiles(wal_files).ok()) {
    for (const auto& f : wal_files) stats.wal_bytes += f->SizeFileBytes();
  }
  stats.next_fence = fences_.next();
  stats.ops = ops_.load(std::memory_order_relaxed);
  stats.writes = writes_.load(std::memory_order_relaxed);
  stats.user_bytes_written = user_bytes_.load(std::memory_order_relaxed);
  stats.flush_bytes_written = io_->flush_bytes_written.load(std::memory_order_relaxed);
  stats.compaction_bytes_read = io_->compaction_bytes_read.load(std::memory_order_relaxed);
  stats.compaction_bytes_written = io_->compaction_bytes_written.load(std::memory_order_relaxed);
  stats.compactions = io_->compactions.load(std::memory_order_relaxed);
  stats.records_dropped_by_compaction = io_->records_dropped.load(std::memory_order_relaxed);
  if (db_->GetIntProperty("rocksdb.live-sst-files-size", &v)) stats.live_sst_bytes = v;
  stats.durability = options_.durability == Durability::kSync ? "sync" : "async";
  return stats;
}

Status RocksEngine::CompactAll() {
  rocksdb::CompactRangeOptions cro;
  cro.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  return FromRocks(db_->CompactRange(cro, nullptr, nullptr));
}

Result<ReclaimReport> RocksEngine::ReclaimExpired() {
  ReclaimReport report;
  rocksdb::TablePropertiesCollection tables;
  if (rocksdb::Status s = db_->GetPropertiesOfAllTables(&tables); !s.ok()) return FromRocks(s);
  std::vector<rocksdb::LiveFileMetaData> files;
  db_->GetLiveFilesMetaData(&files);
  const int64_t now_ms = clock_->NowMillis();
  for (const auto& file : files) {
    report.files_examined++;
    auto props = tables.find(file.db_path + file.name);
    if (props == tables.end()) continue;
    auto raw = props->second->user_collected_properties.find(kExpiryStatsProperty);
    if (raw == props->second->user_collected_properties.end()) continue;
    std::optional<ExpiryStats> stats = ExpiryStats::Decode(raw->second);
    if (!stats || stats->ExpiredFraction(now_ms) < options_.reclaim_min_expired_fraction) continue;
    // Compacting the file's key range through to the bottom level runs the expiry filter over
    // it and drops the resulting tombstones instead of pushing them down.
    rocksdb::CompactRangeOptions cro;
    cro.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
    rocksdb::Slice begin(file.smallestkey), end(file.largestkey);
    if (rocksdb::Status s = db_->CompactRange(cro, &begin, &end); !s.ok()) return FromRocks(s);
    report.files_compacted++;
  }
  return report;
}

void RocksEngine::ReclaimLoop() {
  std::unique_lock<std::mutex> lock(reclaim_mu_);
  while (!stopping_) {
    reclaim_cv_.wait_for(lock, std::chrono::milliseconds(options_.reclaim_interval_ms),
                         [this] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    (void)ReclaimExpired();  // best effort: a failure is retried at the next interval
    lock.lock();
  }
}

}  // namespace

Result<std::unique_ptr<Engine>> Engine::Open(const std::string& dir, EngineOptions options) {
  if (!options.clock) options.clock = SystemClock::Default();
  if (Status st = ValidatePolicy("", options.default_retention); !st.ok()) return st;
  for (const auto& [ns, policy] : options.retention) {
    if (Status st = ValidateNamespace(ns, options.limits); !st.ok()) return st;
    if (Status st = ValidatePolicy(ns, policy); !st.ok()) return st;
  }
  if (options.reclaim_min_expired_fraction <= 0 || options.reclaim_min_expired_fraction > 1) {
    return Status::InvalidArgument("reclaim_min_expired_fraction must be in (0, 1]");
  }
  rocksdb::DB* raw = nullptr;
  rocksdb::Options rocks_options = MakeRocksOptions(options);
  auto io = std::make_shared<IoAccounting>();
  rocks_options.listeners.push_back(io);
  rocksdb::Status s = rocksdb::DB::Open(rocks_options, dir, &raw);
  if (!s.ok()) return FromRocks(s);
  std::unique_ptr<rocksdb::DB> db(raw);
  Result<uint64_t> reserved = FenceAllocator::LoadReservation(db.get());
  if (!reserved.ok()) return reserved.status();
  return std::unique_ptr<Engine>(new RocksEngine(std::move(options), std::move(db), *reserved, std::move(io)));
}

}  // namespace idem
