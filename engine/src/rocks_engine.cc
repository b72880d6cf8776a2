// The RocksDB-backed Engine. How atomicity, durability and expiry work, and why they are correct,
// is argued in docs/design.md; the comments here point at the relevant step.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <shared_mutex>
#include <thread>
#include <unordered_map>

#include <rocksdb/convenience.h>
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/write_batch.h>

#include "admin_query.h"
#include "anchored_clock.h"
#include "clock_mark.h"
#include "column_families.h"
#include "data_dir_check.h"
#include "engine_open.h"
#include "expiry_compaction_filter.h"
#include "expiry_stats.h"
#include "expiry_windows.h"
#include "failure_safe_fs.h"
#include "family_walk.h"
#include "fence_allocator.h"
#include "idem/engine.h"
#include "idem/serving.h"
#include "io_accounting.h"
#include "journal_conversion.h"
#include "journal_layout.h"
#include "journal_store.h"
#include "key_codec.h"
#include "key_locks.h"
#include "key_watchers.h"
#include "online_backup.h"
#include "op_decision.h"
#include "operator_log.h"
#include "prezeroed_wal.h"
#include "record_codec.h"
#include "remembered_key.h"
#include "rocks_options.h"
#include "rocks_status.h"
#include "token.h"
#include "validation.h"
#include "window_key_filter.h"
#include "write_health.h"

namespace idem {
namespace {

// Where an op of the current batch left its key, so later ops of the batch see it.
struct Pending {
  bool present = false;  // false: deleted by an earlier op of this batch
  size_t result_index = 0;
  rocksdb::ColumnFamilyHandle* family = nullptr;  // present: where the earlier op put it
};

// Where a lookup found the key's version that answers it: one that is live or remembered (or
// does not decode), or, in the last family probed, whatever version is there (the caller's
// decoding finds it absent, as with a single family). Null family: no version at all.
struct Found {
  rocksdb::ColumnFamilyHandle* family = nullptr;
  rocksdb::PinnableSlice value;
  rocksdb::Status status = rocksdb::Status::NotFound();
  // The journal layout: the key's version (nullopt: none), or why it could not be read.
  std::optional<journal::JournalStore::Version> version;
  Status journal_error;
};

class RocksEngine final : public ServingEngine {
 public:
  RocksEngine(EngineOptions options, std::unique_ptr<rocksdb::Env> env,
              std::unique_ptr<rocksdb::DB> db, uint64_t fence_reserved,
              std::shared_ptr<IoAccounting> io, std::shared_ptr<WriteHealth> health,
              std::shared_ptr<ClockMark> clock_mark, std::shared_ptr<AnchoredClock> own_clock,
              std::unique_ptr<ExpiryWindows> windows,
              std::unique_ptr<journal::JournalStore> journal)
      : options_(std::move(options)),
        clock_(options_.clock),
        own_clock_(std::move(own_clock)),
        clock_mark_(std::move(clock_mark)),
        env_(std::move(env)),
        db_(std::move(db)),
        windows_(std::move(windows)),
        journal_(std::move(journal)),
        fences_(db_.get(), fence_reserved, &synced_writes_, health.get()),
        retention_(options_.retention.begin(), options_.retention.end()),
        lifecycle_(options_.lifecycle.begin(), options_.lifecycle.end()),
        state_graphs_(options_.state_graphs.begin(), options_.state_graphs.end()),
        key_formats_(options_.key_formats.begin(), options_.key_formats.end()),
        remember_(options_),
        io_(std::move(io)),
        health_(std::move(health)),
        stripe_ticket_(new std::atomic<uint64_t>[KeyLocks::kStripes]) {
    for (size_t i = 0; i < KeyLocks::kStripes; ++i) stripe_ticket_[i].store(0);
    journal_index_saved_ms_.store(clock_->NowMillis());  // the open loaded or replayed it
    write_options_.sync = options_.durability == Durability::kSync;
    if (options_.reclaim_interval_ms > 0) reclaimer_ = std::thread([this] { ReclaimLoop(); });
    // In the background: reading every window's keys takes time in proportion to the records
    // (about 0.35 s per million on the Debian build), which an open should not wait for; until a
    // window's filter is ready, lookups probe that window as if it had none.
    if (!windows_->FiltersReady()) {
      filling_filters_.store(true);
      filter_filler_ = std::thread([this] { FillFilters(); });
    }
    health_->StartRecovery([this] { return Recover(); });
  }

  ~RocksEngine() override {
    stop_filling_filters_.store(true);
    if (filter_filler_.joinable()) filter_filler_.join();  // its iterators go before the DB
    {
      std::lock_guard<std::mutex> lock(reclaim_mu_);
      stopping_ = true;
    }
    reclaim_cv_.notify_all();
    if (reclaimer_.joinable()) reclaimer_.join();
    // RocksDB 7.8's Resume can wait for ever for a flush that is never scheduled (write_health.h:
    // a recovery that does not end). Cancelling background work is what ends that wait, so that
    // closing never hangs on a recovery in progress.
    if (health_->suspended()) rocksdb::CancelAllBackgroundWork(db_.get(), /*wait=*/false);
    health_->StopRecovery();
    // The next run continues from here, whatever its wall clock says.
    if (clock_mark_ && !health_->suspended()) {
      (void)clock_mark_->Write(db_.get(), deferred_write_options_, clock_->NowMillis());
    }
    // A clean close makes even async-mode writes power-cut durable. Not while writes are
    // suspended: the WAL may have failed (write_health.h).
    if (health_->EnterSync()) {
      (void)db_->SyncWAL();
      health_->ExitSync();
    }
    if (journal_) SaveJournalIndex();
    journal_.reset();
    windows_.reset();  // its handles go before the database closes
    (void)db_->Close();
  }

  Status Apply(std::span<const Op> ops, std::vector<Result<OpResult>>* results) override;
  Status Validate(const Op& op) const override {
    Result<DecisionInputs> inputs = Prepare(op, clock_->NowMillis());
    return inputs.ok() ? Status::Ok() : inputs.status();
  }
  Status ApplyNoWait(std::span<const Op> ops, std::vector<Result<OpResult>>* results) override {
    return ApplyImpl(ops, results, /*defer_sync=*/false, nullptr);
  }
  Status ApplyDeferSync(std::span<const Op> ops, std::vector<Result<OpResult>>* results,
                        bool* needs_sync) override {
    *needs_sync = false;
    return ApplyImpl(ops, results, /*defer_sync=*/options_.durability == Durability::kSync,
                     needs_sync);
  }
  Status SyncWal() override;
  WatchId Watch(std::string_view ns, std::string_view key,
                std::function<void()> on_change) override {
    return watchers_.Add(RecordKey(ns, key), std::move(on_change));
  }
  void Unwatch(WatchId id) override { watchers_.Remove(id); }
  Status WriteReadiness() const override {
    if (health_->suspended()) return health_->Refusal();
    return JournalFailure();
  }
  Result<StoreStats> Stats() override;
  Status CompactAll() override;
  Result<ReclaimReport> ReclaimExpired() override;
  Status Flush() override { return FlushAndWait(rocksdb::FlushOptions(), kFlushBound); }
  Status WaitForBackgroundWork(int64_t timeout_ms) override;
  Result<BackupManifest> Backup(const std::string& dir) override;
  Result<ScanPage> Scan(const ScanRequest& request) override;
  Result<PurgeStep> Purge(const PurgeRequest& request) override;
  Status Compact(std::string_view ns) override;
  const EngineOptions& options() const override { return options_; }

 private:
  // needs_sync (with defer_sync): set when the batch wrote, or may have read an unsynced write.
  Status ApplyImpl(std::span<const Op> ops, std::vector<Result<OpResult>>* results, bool defer_sync,
                   bool* needs_sync);
  // Looks every key up in each family that may hold a version of it that is not dead at
  // `now_ms` (the default one and every window that ends after now_ms): found[i] answers
  // keys[i] with the version that is live or remembered under remember_ms[i] (one family holds
  // at most one such version: ApplyImpl keeps it so). Within one family, the keys are read at
  // one consistent view; under the stripe locks (`locked`), no other operation changes them
  // meanwhile. Without them, a write moving a record from one family to another could commit
  // between two families' lookups and hide it from both: the lookups then share a snapshot.
  void ReadAll(std::span<const rocksdb::Slice> keys, std::span<const int64_t> remember_ms,
               int64_t now_ms, bool locked, Found* found);
  // The journal layout's ReadAll: each key's version in the journal (under the stripe locks,
  // which every batch takes under this layout, a batch's reads are one view).
  void ReadJournal(std::span<const rocksdb::Slice> keys, Found* found) const;
  // Scan and Purge under the journal layout: the namespace's records in the order they were
  // written (JournalStore::Walk), not in key order, which a hash index does not keep.
  Result<ScanPage> ScanJournal(const ScanRequest& request);
  Status JournalPurgeKeys(const PurgeRequest& request, std::vector<std::string>* keys,
                          std::string* cursor);
  // Whether a deferred write that a read now may see is not synced yet: a page that may show
  // one is shown only after a sync, as Apply's reads are (ServingEngine).
  bool UnsyncedWriteVisible() const {
    return write_options_.sync && deferred_begun_.load(std::memory_order_acquire) >
                                      deferred_synced_.load(std::memory_order_acquire);
  }
  Result<ScanPage> ShowScanPage(ScanPage page, bool unsynced_visible);
  // The request's limit and status filter, against its namespace's state graph if it has one.
  Status ValidateScan(const ScanRequest& request) const;
  // The journal layout's commit of a batch's writes (step 5 of ApplyImpl).
  // `appended`: set once the batch is in the journal (and its index), whatever follows.
  Status CommitToJournal(std::span<const journal::JournalStore::Write> writes, int64_t now_ms,
                         bool synced, bool* appended);
  // Segments sealed and not synced yet that CommitToJournal lets be (their files stay open).
  static constexpr size_t kMaxUnsyncedSegments = 4;
  // The journal layout: a journal that failed takes no writes until the engine is reopened
  // (journal.h: after a failed fdatasync no later sync can vouch for the pages it lost).
  Status JournalFailure() const;
  // At a clean close, once nothing is written: saves the journal's index for the next open to
  // load instead of replaying the journal (journal_saved_index.h). A failure is logged: the
  // next open replays what came after the last save.
  void SaveJournalIndex();
  // A reclaim pass's: saves the journal's index if journal_index_save_interval_ms has passed
  // since the last save; whether it did. A failure does not fail the pass (the last save still
  // serves, with more to replay): the operator hears of the first one and of the recovery.
  bool SaveJournalIndexIfDue();
  std::atomic<int64_t> journal_index_saved_ms_{0};  // engine time of the last save (or the open)
  std::atomic<bool> journal_index_save_failing_{false};
  Result<ReclaimReport> ReclaimJournal(const journal::JournalStore::MovePolicy& policy);
  // Where a record that dies at `death_ms` (0: never) belongs under this run's layout: the
  // family, and its window's filter (null for the default family).
  struct Target {
    rocksdb::ColumnFamilyHandle* family = nullptr;
    WindowKeyFilter* filter = nullptr;
  };
  Result<Target> FamilyFor(int64_t death_ms);
  // The default family and every window's, for what applies to all of them; the snapshot in
  // `keep` (if given) keeps the window handles valid while the caller uses them.
  std::vector<rocksdb::ColumnFamilyHandle*> Families(
      std::shared_ptr<const ExpiryWindows::Set>* keep = nullptr) const;
  // Drops the windows that ended the expiry grace ago (and before the synced clock mark).
  Result<size_t> DropEndedWindows();
  // Creates, ahead of the writes that will need them, the windows that records written with
  // each namespace's default TTL (and completed TTL) will die in until the next pass: creating
  // a family writes the MANIFEST (~65 ms here), which would otherwise stall the batch that
  // needs it, stripe locks held. Best effort: a write creates a missing window itself.
  void PrepareUpcomingWindows();
  uint64_t WindowFilesMax();  // table files of the window that has the most
  template <typename Policy>
  static const Policy& Lookup(const std::map<std::string, Policy, std::less<>>& by_ns,
                              std::string_view ns, const Policy& fallback) {
    auto it = by_ns.find(ns);
    return it == by_ns.end() ? fallback : it->second;
  }
  // Validates `op` and resolves what Decide needs: expiry, lease, policy.
  Result<DecisionInputs> Prepare(const Op& op, int64_t now_ms) const;
  // Waits (blocking) for a Begin or Lock whose key another holder has (StillHeld); returns its
  // final result.
  Result<OpResult> WaitForHolder(const Op& op, Result<OpResult> first,
                                 std::chrono::steady_clock::time_point deadline);
  void ReclaimLoop();
  void NoteReclaimPass(const Status& pass);
  // The filters of the windows opened with the database (ExpiryWindows::FillFilters).
  void FillFilters();
  // WriteHealth's recovery step: DB::Resume, then a flush, so every write a failed WAL held is
  // in synced table files; then those writes count as synced.
  Status Recover();
  // Flushes every family's memtable and waits, up to `bound`, until no family holds a memtable
  // that is not in a table file. RocksDB 7.8's DB::Flush stops waiting for good once DB::Resume
  // has run: Resume clears the background error but leaves the database's "stopped" flag set
  // (ErrorHandler::ClearBGError), and WaitForFlushMemTables returns OK at once on that flag.
  Status FlushAndWait(const rocksdb::FlushOptions& flush, std::chrono::milliseconds bound);
  static constexpr std::chrono::milliseconds kFlushBound{60'000};         // Flush()
  static constexpr std::chrono::milliseconds kRecoveryFlushBound{1'000};  // one Recover attempt
  // While suspended: whether an op of the batch may have read a deferred write not known to be
  // durable (its stripe's last deferred write is past durable_floor_).
  template <typename Prepared>
  bool MayReadUnsynced(const std::vector<Prepared>& prepared) const {
    const uint64_t floor = durable_floor_.load(std::memory_order_acquire);
    for (const Prepared& p : prepared) {
      if (p.error.ok() && stripe_ticket_[p.stripe].load(std::memory_order_acquire) > floor) {
        return true;
      }
    }
    return false;
  }
  // Numbers a deferred write (deferred_begun_) and marks `stripes` with it, before the write, so
  // that a reader that can see the write also sees it counted; deferred_done_ once it is done.
  void BeginDeferredWrite(std::span<const size_t> stripes) {
    const uint64_t ticket = deferred_begun_.fetch_add(1, std::memory_order_acq_rel) + 1;
    for (size_t stripe : stripes) stripe_ticket_[stripe].store(ticket, std::memory_order_release);
  }
  // Advances `counter` to at least `value`.
  static void AdvanceTo(std::atomic<uint64_t>& counter, uint64_t value) {
    uint64_t cur = counter.load(std::memory_order_relaxed);
    while (cur < value && !counter.compare_exchange_weak(cur, value, std::memory_order_release)) {
    }
  }

  // Estimated records in table files that the compaction filter would remove now.
  uint64_t ExpiredUnreclaimed();

  // Persists the ClockMark before physical removal: nothing removed can be live after a restart.
  Status WriteClockMark();

  const EngineOptions options_;
  const std::shared_ptr<Clock> clock_;
  const std::shared_ptr<AnchoredClock> own_clock_;  // clock_ when the engine made it, else null
  const std::shared_ptr<ClockMark> clock_mark_;     // null: a clock the caller supplied (no mark)
  std::unique_ptr<rocksdb::Env> env_;               // over the engine's file systems; outlives db_
  std::unique_ptr<rocksdb::DB> db_;
  std::unique_ptr<ExpiryWindows> windows_;          // every window family, whatever the layout
  std::unique_ptr<journal::JournalStore> journal_;  // the journal layout's records, else null
  std::atomic<uint64_t> journal_bytes_moved_{0};
  std::atomic<bool> bounding_sync_{false};  // a writer is syncing for the open-files bound
  rocksdb::WriteOptions write_options_;
  rocksdb::WriteOptions deferred_write_options_;  // sync = false
  // ApplyDeferSync writes: begun (counted before the write, so a reader that can see one also
  // sees the count), completed, and completed before the last successful SyncWal began.
  std::atomic<uint64_t> deferred_begun_{0};
  std::atomic<uint64_t> deferred_done_{0};
  std::atomic<uint64_t> deferred_synced_{0};
  // Held shared by every write with WriteOptions::sync, exclusive by SyncWal. RocksDB's SyncWAL
  // waits for a synced write's WAL sync; a synced write whose append fails waits, in
  // WriteHealth, for the SyncWALs in flight: together they would wait for each other forever.
  std::shared_mutex synced_writes_;
  FenceAllocator fences_;
  KeyLocks locks_;
  const std::map<std::string, RetentionPolicy, std::less<>> retention_;
  const std::map<std::string, LifecyclePolicy, std::less<>> lifecycle_;
  const std::map<std::string, StateGraph, std::less<>> state_graphs_;
  const std::map<std::string, KeyFormat, std::less<>> key_formats_;
  const RememberPeriods remember_;
  KeyWatchers watchers_;
  std::atomic<uint64_t> ops_{0};
  std::atomic<uint64_t> writes_{0};
  std::atomic<uint64_t> admin_overrides_{0};
  std::atomic<uint64_t> wal_syncs_{0};
  std::atomic<uint64_t> user_bytes_{0};
  std::atomic<uint64_t> reclaim_failures_{0};
  uint64_t failed_reclaim_passes_in_a_row_ = 0;  // the reclaimer thread's own
  const std::shared_ptr<IoAccounting> io_;
  const std::shared_ptr<WriteHealth> health_;
  // Per key stripe: the deferred_begun_ number of the last ApplyDeferSync write to it, stored
  // before the write (so a reader that sees the write sees the number). Every deferred write
  // numbered <= durable_floor_ is durable. Only read while writes are suspended, so that reads
  // of keys no unsynced write touched keep working (a global "anything unsynced?" would fail
  // them all until recovery).
  std::unique_ptr<std::atomic<uint64_t>[]> stripe_ticket_;
  std::atomic<uint64_t> durable_floor_{0};

  // Held by Backup: one at a time. Two checkpoints into one directory would share RocksDB's
  // scratch directory (DIR.incomplete.tmp), each clearing the other's files, and two into
  // different ones only compete for the same disk.
  std::mutex backup_mu_;

  std::mutex reclaim_mu_;
  std::condition_variable reclaim_cv_;
  bool stopping_ = false;  // guarded by reclaim_mu_
  std::thread reclaimer_;

  std::atomic<bool> stop_filling_filters_{false};
  std::atomic<bool> filling_filters_{false};  // until filter_filler_ has finished
  std::thread filter_filler_;
};

// What a read found at `now_ms`: the live record, or the key's marker if its namespace remembers
// keys for `remember_ms`, or neither (remembered_key.h).
Result<StoredKey> ReadKey(const rocksdb::Status& read, const rocksdb::Slice& value, int64_t now_ms,
                          int64_t remember_ms) {
  if (read.IsNotFound()) return StoredKey();
  if (!read.ok()) return FromRocks(read);
  return ReadStoredValue(std::string_view(value.data(), value.size()), now_ms, remember_ms);
}

// Whether a version read from a family answers the lookup: it is live or remembered at now_ms,
// or it does not decode (reported, never skipped: it may be the record).
bool Answers(const rocksdb::Status& read, const rocksdb::PinnableSlice& value, int64_t now_ms,
             int64_t remember_ms) {
  if (read.IsNotFound()) return false;
  if (!read.ok()) return true;
  // Most versions found are live: the header says so without decoding the record.
  const std::string_view bytes(value.data(), value.size());
  if (!IsMarker(bytes)) {
    std::optional<int64_t> expiry = PeekExpiry(bytes);
    if (expiry && (*expiry == kNeverExpires || *expiry > now_ms)) return true;
  }
  Result<StoredKey> stored =
      ReadStoredValue(std::string_view(value.data(), value.size()), now_ms, remember_ms);
  return !stored.ok() || stored->live || stored->remembered;
}

void RocksEngine::ReadAll(std::span<const rocksdb::Slice> keys,
                          std::span<const int64_t> remember_ms, int64_t now_ms, bool locked,
                          Found* found) {
  if (keys.empty()) return;
  if (journal_) {
    ReadJournal(keys, found);
    return;
  }
  struct Probe {
    rocksdb::ColumnFamilyHandle* family;
    const WindowKeyFilter* filter;  // null: every key is looked up
  };
  // Windows that ended at or before now hold only dead versions: not probed. The default family
  // comes last, for every key still open: it holds the records that never die, and every record
  // of a database written under the leveled layout, which no filter knows.
  std::shared_ptr<const ExpiryWindows::Set> windows = windows_->Current();
  std::vector<Probe> probes;
  probes.reserve(windows->size() + 1);
  for (auto w = windows->rbegin(); w != windows->rend() && w->end_ms > now_ms; ++w) {
    probes.push_back(Probe{w->handle.get(), w->filter.get()});
  }
  probes.push_back(Probe{db_->DefaultColumnFamily(), nullptr});
  rocksdb::ReadOptions read;
  std::optional<rocksdb::ManagedSnapshot> snapshot;
  if (!locked && probes.size() > 1) {
    snapshot.emplace(db_.get());
    read.snapshot = snapshot->snapshot();
  }
  // The filters are asked only now, once the view is fixed (the stripe locks held, or the
  // snapshot taken): a writer adds a key to its window's filter before its RocksDB write, so
  // every version this view can see has its bits set, and visible here (the lock, or the write's
  // commit that the snapshot includes, orders the add before this read). Asked before the view
  // was fixed, a filter could miss a record moving between windows: the new window's filter
  // says no, the move commits (Delete in the old window, Put in the new, one write), the view
  // is fixed after it, and the old window no longer holds the key either.
  std::vector<uint64_t> hashes;
  if (probes.size() > 1) {
    hashes.reserve(keys.size());
    for (const rocksdb::Slice& key : keys) {
      hashes.push_back(WindowKeyFilter::Hash(std::string_view(key.data(), key.size())));
    }
  }
  std::vector<size_t> open;   // keys not answered yet
  std::vector<size_t> asked;  // of those, the ones looked up in the current family
  open.reserve(keys.size());
  asked.reserve(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) open.push_back(i);
  std::vector<rocksdb::Slice> batch_keys;
  std::vector<rocksdb::PinnableSlice> values;
  std::vector<rocksdb::Status> statuses;
  for (const Probe& probe : probes) {
    if (open.empty()) break;
    // A key the filter rules out stays open for the next family.
    asked.clear();
    if (probe.filter != nullptr) {
      size_t kept = 0;
      for (size_t i : open) {
        if (probe.filter->MayContain(hashes[i])) {
          asked.push_back(i);
        } else {
          open[kept++] = i;
        }
      }
      open.resize(kept);
    } else {
      asked.swap(open);
    }
    if (asked.empty()) continue;
    // Past the last family nothing can answer instead: any version found there is the answer,
    // and the caller decodes it once (the single-family layout pays nothing for the others).
    const bool last = &probe == &probes.back();
    auto answers = [&](const rocksdb::Status& status, const rocksdb::PinnableSlice& value,
                       size_t i) {
      return last ? !status.IsNotFound() : Answers(status, value, now_ms, remember_ms[i]);
    };
    if (asked.size() == 1) {  // MultiGet's sorting and batching would cost a lone key ~0.5 us
      const size_t i = asked[0];
      Found& f = found[i];
      f.status = db_->Get(read, probe.family, keys[i], &f.value);
      if (answers(f.status, f.value, i)) {
        f.family = probe.family;
      } else {  // absent, or only a dead version: as if absent
        f.value.Reset();
        f.status = rocksdb::Status::NotFound();
        open.push_back(i);
      }
      continue;
    }
    // One MultiGet instead of a Get per key: RocksDB shares the memtable and version lookups
    // across the keys, probes a level's filters for all of them together and reads a block once
    // for every key in it (a group commit of 128 random-key inserts: ~15 % less time per item).
    batch_keys.clear();
    for (size_t i : asked) batch_keys.push_back(keys[i]);
    values.clear();
    values.resize(batch_keys.size());
    statuses.assign(batch_keys.size(), rocksdb::Status());
    db_->MultiGet(read, probe.family, batch_keys.size(), batch_keys.data(), values.data(),
                  statuses.data());
    for (size_t j = 0; j < asked.size(); ++j) {
      const size_t i = asked[j];
      if (answers(statuses[j], values[j], i)) {
        found[i].family = probe.family;
        found[i].status = statuses[j];
        found[i].value = std::move(values[j]);
      } else {
        open.push_back(i);
      }
    }
  }
}

void RocksEngine::ReadJournal(std::span<const rocksdb::Slice> keys, Found* found) const {
  for (size_t i = 0; i < keys.size(); ++i) {
    Result<std::optional<journal::JournalStore::Version>> version =
        journal_->Get(std::string_view(keys[i].data(), keys[i].size()));
    if (!version.ok()) {
      found[i].journal_error = version.status();
    } else {
      found[i].version = std::move(*version);
    }
  }
}

// What a lookup found (ReadAll) at `now_ms`, whatever the layout.
Result<StoredKey> ReadFound(const Found& found, int64_t now_ms, int64_t remember_ms) {
  if (!found.journal_error.ok()) return found.journal_error;
  if (found.version) return ReadStoredValue(found.version->value, now_ms, remember_ms);
  return ReadKey(found.status, found.value, now_ms, remember_ms);
}

std::vector<rocksdb::ColumnFamilyHandle*> RocksEngine::Families(
    std::shared_ptr<const ExpiryWindows::Set>* keep) const {
  std::shared_ptr<const ExpiryWindows::Set> windows = windows_->Current();
  std::vector<rocksdb::ColumnFamilyHandle*> families{db_->DefaultColumnFamily()};
  for (const auto& w : *windows) families.push_back(w.handle.get());
  if (keep != nullptr) *keep = std::move(windows);
  return families;
}

Result<RocksEngine::Target> RocksEngine::FamilyFor(int64_t death_ms) {
  if (death_ms == 0 || options_.layout == EngineOptions::Layout::kLeveled) {
    return Target{db_->DefaultColumnFamily(), nullptr};
  }
  // A window family is only dropped once it has ended the grace ago, and this record dies
  // after the batch's now: the handle and filter outlive the batch's write (ExpiryWindows: a
  // drop racing a slow batch leaves the handle valid and fails that write cleanly).
  Result<ExpiryWindows::Window> window = windows_->Open(windows_->EndFor(death_ms));
  if (!window.ok()) return window.status();
  return Target{window->handle.get(), window->filter.get()};
}

// Ok, or why `payload` is over the namespace's response limit.
Status WithinResponseLimit(std::string_view what, std::string_view payload,
                           const LifecyclePolicy& lifecycle) {
  if (payload.size() <= lifecycle.max_response_bytes) return Status::Ok();
  return Status::InvalidArgument(std::string(what) + " is " + std::to_string(payload.size()) +
                                 " bytes; this namespace's max_response_bytes is " +
                                 std::to_string(lifecycle.max_response_bytes));
}

Result<DecisionInputs> RocksEngine::Prepare(const Op& op, int64_t now_ms) const {
  auto key_format = key_formats_.find(op.ns);
  if (Status st = ValidateOp(op, options_.limits,
                             key_format == key_formats_.end() ? nullptr : &key_format->second);
      !st.ok()) {
    return st;
  }
  const RetentionPolicy& retention = Lookup(retention_, op.ns, options_.default_retention);
  const LifecyclePolicy& lifecycle = Lookup(lifecycle_, op.ns, options_.default_lifecycle);
  DecisionInputs in;
  in.now_ms = now_ms;
  bool writes_expiry = false;  // whether the op writes an expiry, from `ttl` (nullopt: default)
  std::optional<Ttl> ttl;
  switch (op.type) {
    case OpType::kInsert:
    case OpType::kBegin:
    case OpType::kIssueToken:
      writes_expiry = true;
      ttl = op.ttl;
      break;
    case OpType::kCompareAndSet:
      writes_expiry = op.update.ttl.has_value();
      ttl = op.update.ttl;
      break;
    case OpType::kCheckpoint:
      // What Begin hands whoever takes the attempt over: bounded like the response it leads to.
      if (Status st = WithinResponseLimit("checkpoint payload", op.payload, lifecycle); !st.ok()) {
        return st;
      }
      break;
    case OpType::kComplete:
    case OpType::kAbort:
      if (Status st = WithinResponseLimit("response", op.payload, lifecycle); !st.ok()) return st;
      // Not given: the namespace's completed TTL, or its retention default where that is 0.
      writes_expiry = true;
      ttl = op.ttl;
      if (!ttl && lifecycle.completed_ttl_ms != 0) {
        ttl = Ttl(std::chrono::milliseconds(lifecycle.completed_ttl_ms));
      }
      in.remember_failures = lifecycle.remember_failures;
      break;
    default:
      break;
  }
  if (op.type == OpType::kInsert || op.type == OpType::kCompareAndSet ||
      op.type == OpType::kTransition) {
    auto graph = state_graphs_.find(op.ns);
    if (graph != state_graphs_.end()) in.graph = &graph->second;
  }
  if (op.type == OpType::kBegin || op.type == OpType::kHeartbeat || op.type == OpType::kLock ||
      op.type == OpType::kRenew) {
    Result<int64_t> lease = ResolveLease(op.lease, lifecycle);
    if (!lease.ok()) return lease.status();
    in.lease_ms = *lease;
  }
  if (writes_expiry) {
    Result<int64_t> expiry = ResolveExpiry(ttl, retention, now_ms);
    if (!expiry.ok()) return expiry.status();
    in.expiry_ms = *expiry;
  }
  return in;
}

Status RocksEngine::SyncWal() {
  // done before begun: if they are equal, no deferred write was in flight, so every one
  // numbered up to `begun` completed before the sync and is covered by it.
  const uint64_t covered = deferred_done_.load(std::memory_order_acquire);
  const uint64_t begun = deferred_begun_.load(std::memory_order_acquire);
  if (journal_) {
    if (Status s = journal_->Sync(); !s.ok()) return s;
    wal_syncs_.fetch_add(1, std::memory_order_relaxed);
    AdvanceTo(deferred_synced_, covered);
    if (covered == begun) AdvanceTo(durable_floor_, begun);
    return Status::Ok();
  }
  std::unique_lock<std::shared_mutex> no_synced_writes(synced_writes_);  // first: see above
  if (!health_->EnterSync()) return health_->Refusal();  // never SyncWAL a WAL that failed
  rocksdb::Status s = db_->SyncWAL();
  if (!s.ok()) {
    // The WAL pages this sync could not write may be gone from the page cache already: no
    // later sync can vouch for them. Only Recover's flush can (write_health.h). Suspended
    // before the lock is released: a synced write waiting for it would otherwise append to
    // this WAL, and its own fdatasync may succeed (Linux reports a writeback error once).
    health_->Suspend("a failed WAL sync (" + s.ToString() + ")");
  }
  health_->ExitSync();
  no_synced_writes.unlock();
  if (!s.ok()) return FromRocks(s);
  wal_syncs_.fetch_add(1, std::memory_order_relaxed);
  AdvanceTo(deferred_synced_, covered);
  if (covered == begun) AdvanceTo(durable_floor_, begun);
  return Status::Ok();
}

void RocksEngine::SaveJournalIndex() {
  const auto start = std::chrono::steady_clock::now();
  if (Status s = journal_->SaveIndex(); !s.ok()) {
    LogToOperator(options_.log, LogRecord(LogLevel::kWarn, "journal_index_unsaved",
                                          "the next open replays the journal: " + s.message()));
    return;
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  LogToOperator(options_.log, LogRecord(LogLevel::kInfo, "journal_index_saved",
                                        "saved the journal's index for the next open")
                                  .With("records", static_cast<int64_t>(journal_->records()))
                                  .With("ms", static_cast<int64_t>(ms)));
}

Status RocksEngine::JournalFailure() const {
  if (!journal_) return Status::Ok();
  Status failure = journal_->failure();
  if (failure.ok() || failure.IsBusy()) return failure;  // Busy: the index is full
  return Status::IOError("writes are refused until idemstore is restarted: the journal failed (" +
                         failure.message() + ")");
}

Status RocksEngine::CommitToJournal(std::span<const journal::JournalStore::Write> writes,
                                    int64_t now_ms, bool synced, bool* appended) {
  if (Status s = JournalFailure(); !s.ok()) return s;
  if (clock_mark_) {
    // The clock mark cannot ride in the journal's entry (clock_mark.h): when due, once a second,
    // it goes to RocksDB first (synced under kSync), so that no batch is durable while the time
    // it was decided at is not.
    std::shared_lock<std::shared_mutex> synced_write(synced_writes_);  // before the mark lock
    if (health_->suspended()) return health_->Refusal();
    rocksdb::WriteBatch mark_batch;
    std::unique_lock<std::mutex> mark_lock;
    if (std::optional<int64_t> mark = clock_mark_->MaybeAddTo(&mark_batch, now_ms, &mark_lock)) {
      // Under kAsync nothing is synced per write, the mark neither (as when it rides in a
      // RocksDB batch): it then bounds no removal until the reclaim pass writes it synced.
      if (rocksdb::Status s = db_->Write(write_options_, &mark_batch); !s.ok()) return FromRocks(s);
      if (write_options_.sync) clock_mark_->Synced(*mark);
    }
  }
  if (Status s = journal_->Apply(writes); !s.ok()) {
    // Busy may be a full index (the entry written, its keys maybe indexed); taking it as
    // appended is only cautious when it was not (out of segment ids, a lookup retried out).
    *appended = s.IsBusy();
    return s;
  }
  *appended = true;
  writes_.fetch_add(1, std::memory_order_relaxed);
  if (synced) {
    if (Status s = journal_->Sync(); !s.ok()) return s;
    wal_syncs_.fetch_add(1, std::memory_order_relaxed);
  } else if (journal_->journal().sealed_unsynced() > kMaxUnsyncedSegments &&
             !bounding_sync_.exchange(true, std::memory_order_acq_rel)) {
    // A segment sealed since the last sync keeps its file open until a sync covers it
    // (journal.h): where nothing syncs per write, one writer that finds too many of them
    // syncs. Not this batch's durability (it was promised none): a failed fsync fails the
    // journal, which refuses the writes after it; another failure leaves it to the next sync.
    if (journal_->Sync().ok()) wal_syncs_.fetch_add(1, std::memory_order_relaxed);
    bounding_sync_.store(false, std::memory_order_release);
  }
  return Status::Ok();
}

Status RocksEngine::Recover() {
  const uint64_t done = deferred_done_.load(std::memory_order_acquire);
  const uint64_t begun = deferred_begun_.load(std::memory_order_acquire);
  // Under the journal layout the deferred writes are in the journal, which RocksDB's flush
  // below does not make durable.
  if (journal_) {
    if (Status s = journal_->Sync(); !s.ok()) return s;
  }
  // Resume: OK at once if RocksDB has no background error (the engine suspended on its own).
  // It switches to a new WAL only if the memtable holds something: a WAL that failed while the
  // memtable was empty (say, the first write after a flush) stays in use, and the next append
  // to it asserts. So a tombstone goes into the memtable, around the WAL, and the flush below
  // switches. (If that WAL failed, the switch fails too, as a background error: the next
  // attempt's Resume then has a memtable to flush, and resets the WAL on the way.)
  if (rocksdb::Status s = db_->Resume(); !s.ok()) return FromRocks(s);
  rocksdb::WriteOptions around_wal;
  around_wal.disableWAL = true;
  if (rocksdb::Status s = db_->Delete(around_wal, MetaKey("wal-switch")); !s.ok()) {
    return FromRocks(s);
  }
  rocksdb::FlushOptions flush;
  flush.allow_write_stall = true;
  // The failed WAL may hold any family's writes. Writes resume only once they are in table
  // files: were a sync to fail again before the flush ran, RocksDB would drop the flush job and
  // the next Resume would wait for it for ever (write_health.h). A flush slower than the bound
  // fails this attempt; the next one waits for it again.
  if (Status s = FlushAndWait(flush, kRecoveryFlushBound); !s.ok()) return s;
  // Every write completed before `done` was read is in a synced table file now.
  AdvanceTo(deferred_synced_, done);
  if (done == begun) AdvanceTo(durable_floor_, begun);
  return Status::Ok();
}

Status RocksEngine::FlushAndWait(const rocksdb::FlushOptions& flush,
                                 std::chrono::milliseconds bound) {
  {
    std::shared_ptr<const ExpiryWindows::Set> keep;
    if (rocksdb::Status s = db_->Flush(flush, Families(&keep)); !s.ok()) return FromRocks(s);
  }
  const auto deadline = std::chrono::steady_clock::now() + bound;
  uint64_t unflushed = 0;  // immutable memtables, all families together
  while (
      db_->GetAggregatedIntProperty(rocksdb::DB::Properties::kNumImmutableMemTable, &unflushed) &&
      unflushed > 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::TimedOut(std::to_string(unflushed) + " memtables not flushed after " +
                              std::to_string(bound.count()) + " ms");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return Status::Ok();
}

Status RocksEngine::ApplyImpl(std::span<const Op> ops, std::vector<Result<OpResult>>* results,
                              bool defer_sync, bool* needs_sync) {
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
    DecisionInputs inputs;
    std::string key;    // the RocksDB key
    std::string token;  // IssueToken: the generated key
    int64_t remember_ms = 0;
    size_t stripe = 0;
    size_t read = 0;             // its slot in the batch's MultiGet
    bool may_share_key = false;  // another op of the batch hashes to the same stripe
  };
  std::vector<Prepared> prepared(ops.size());
  std::vector<size_t> stripes;
  stripes.reserve(ops.size());
  bool writes_possible = false;
  for (size_t i = 0; i < ops.size(); ++i) {
    Result<DecisionInputs> inputs = Prepare(ops[i], now_ms);
    if (!inputs.ok()) {
      prepared[i].error = inputs.status();
      continue;
    }
    prepared[i].inputs = *inputs;
    prepared[i].remember_ms = remember_.For(ops[i].ns);
    std::string_view key = ops[i].key;
    if (ops[i].type == OpType::kIssueToken) {
      Result<std::string> token = GenerateToken();
      if (!token.ok()) {
        prepared[i].error = token.status();
        continue;
      }
      prepared[i].token = std::move(*token);
      key = prepared[i].token;
    }
    prepared[i].key.reserve(1 + ops[i].ns.size() + key.size());
    AppendRecordKey(ops[i].ns, key, &prepared[i].key);
    prepared[i].stripe = KeyLocks::StripeOf(prepared[i].key);
    stripes.push_back(prepared[i].stripe);
    writes_possible |= ops[i].type != OpType::kGet;
  }
  // Ops on the same key share a stripe, so only ops whose stripe occurs twice can see each
  // other's writes: only they go through the overlay below (a hash map, so a big group commit
  // does not pay a map node per op).
  std::sort(stripes.begin(), stripes.end());
  std::vector<size_t> shared;  // stripes that occur more than once, sorted
  for (size_t i = 1; i < stripes.size(); ++i) {
    if (stripes[i] == stripes[i - 1] && (shared.empty() || shared.back() != stripes[i])) {
      shared.push_back(stripes[i]);
    }
  }
  if (!shared.empty()) {
    for (Prepared& p : prepared) {
      p.may_share_key = p.error.ok() && std::binary_search(shared.begin(), shared.end(), p.stripe);
    }
  }

  // 2. Lock every stripe the batch touches (ascending, as sorted above: no deadlock). A batch of
  // reads needs no lock: a RocksDB Get sees either all of a committed write batch or none of it.
  // The journal's lookups are one key at a time, so there reads lock too.
  std::optional<KeyLocks::Guard> guard;
  if (writes_possible || journal_) guard.emplace(&locks_, std::move(stripes));

  // 3. Read every key of the batch at once. Under the stripe locks nothing else changes them
  // before step 5 commits.
  std::vector<rocksdb::Slice> keys;
  std::vector<int64_t> remember_ms;
  keys.reserve(ops.size());
  remember_ms.reserve(ops.size());
  for (Prepared& p : prepared) {
    if (!p.error.ok()) continue;
    p.read = keys.size();
    keys.emplace_back(p.key);
    remember_ms.push_back(p.remember_ms);
  }
  // From the lookups to the write, no window family is dropped (expiry_windows.h).
  std::shared_lock<std::shared_mutex> windows_in_use(windows_->in_use());
  std::vector<Found> found(keys.size());
  ReadAll(keys, remember_ms, now_ms, /*locked=*/guard.has_value(), found.data());

  // 4. Decide each op against the current record (or what an earlier op of this batch left).
  results->reserve(ops.size());
  rocksdb::WriteBatch batch;
  std::vector<journal::JournalStore::Write> journal_writes;  // the journal layout's batch
  std::deque<std::string> journal_values;                    // what its puts point at
  uint64_t admin_overrides = 0;                              // counted once the batch is committed
  std::unordered_map<std::string_view, Pending> pending;     // for ops with may_share_key
  std::string value;
  std::vector<std::string_view> written;  // keys to notify watchers of, if anyone watches
  std::vector<size_t> written_stripes;    // defer_sync or journal: the stripes this batch writes
  for (size_t i = 0; i < ops.size(); ++i) {
    Prepared& p = prepared[i];
    if (!p.error.ok()) {
      results->push_back(p.error);
      continue;
    }
    StoredKey loaded;
    const Record* current = nullptr;
    rocksdb::ColumnFamilyHandle* family = nullptr;  // where the key's version is, if anywhere
    // The journal layout: the version the lookup found, unless an earlier op of this batch wrote
    // the key (journal_store.h, Write::found).
    const journal::JournalStore::Version* journal_version = nullptr;
    auto seen = p.may_share_key ? pending.find(p.key) : pending.end();
    if (seen != pending.end()) {
      if (seen->second.present) {
        current = &*(*results)[seen->second.result_index]->record;
        family = seen->second.family;
      }
    } else {
      const Found& f = found[p.read];
      if (f.version) journal_version = &*f.version;
      Result<StoredKey> read = ReadFound(f, now_ms, p.remember_ms);
      if (!read.ok()) {
        results->push_back(read.status());
        continue;
      }
      loaded = std::move(*read);
      if (loaded.live) current = &*loaded.live;
      family = f.family;
    }
    const Record* remembered = loaded.remembered ? &*loaded.remembered : nullptr;
    Decision d = Decide(ops[i], current, p.inputs, remembered);
    if (d.returns_current) {  // the record the decision looked at: a live one, else the marker
      d.result.record = loaded.live          ? std::move(*loaded.live)
                        : current != nullptr ? *current
                                             : std::move(*loaded.remembered);
    }
    d.result.token = std::move(p.token);
    if (d.write == Decision::Write::kPut) {
      Record& record = *d.result.record;
      if (d.needs_fence) {
        Result<uint64_t> fence = fences_.Next();  // refused while suspended: it may write
        if (!fence.ok()) {
          results->clear();
          return fence.status();
        }
        record.fence = *fence;
      }
      value.clear();
      EncodeRecord(record, &value);
      if (journal_) {
        journal_values.push_back(value);
        journal_writes.push_back({journal::OpType::kPut, p.key, journal_values.back(),
                                  JournalKeepUntil(DeathOf(record, p.remember_ms)),
                                  journal_version});
      } else {
        Result<Target> target = FamilyFor(DeathOf(record, p.remember_ms));
        if (!target.ok()) {
          results->clear();
          return target.status();
        }
        // A record whose death moved to another window (or whose layout changed) moves with this
        // same write: at no moment is it in neither family, nor live in both.
        if (family != nullptr && family != target->family) batch.Delete(family, p.key);
        family = target->family;
        // In the window's filter before the write commits: a lookup that can see the write finds
        // the bits set (ReadAll). A write that then fails leaves a false positive only.
        if (target->filter != nullptr) target->filter->Add(WindowKeyFilter::Hash(p.key));
        batch.Put(family, p.key, value);
      }
    } else if (d.write == Decision::Write::kDelete) {
      if (journal_) {
        // Kept as long as the version it deletes (raised by the journal store).
        journal_writes.push_back({journal::OpType::kDelete, p.key, {}, now_ms, journal_version});
      } else {
        batch.Delete(family != nullptr ? family : db_->DefaultColumnFamily(), p.key);
      }
      family = nullptr;
      if (d.admin_override) ++admin_overrides;
    }
    if (d.write != Decision::Write::kNone) {
      if (defer_sync || journal_) written_stripes.push_back(p.stripe);
      if (p.may_share_key)
        pending[p.key] = Pending{d.write == Decision::Write::kPut, results->size(), family};
      if (!watchers_.Empty()) written.push_back(p.key);
    }
    results->push_back(std::move(d.result));
  }

  // 5. Commit every write of the batch as one RocksDB write (the journal layout: one journal
  // entry), still under the stripe locks, so
  // no other operation on these keys can observe or act on the state before it is durable.
  // (ApplyDeferSync: durable at the caller's SyncWal, which acknowledges nothing before it.)
  const size_t write_count = journal_ ? journal_writes.size() : batch.Count();
  if (!journal_writes.empty()) {
    if (defer_sync) {
      BeginDeferredWrite(written_stripes);
    }
    const bool synced = !defer_sync && options_.durability == Durability::kSync;
    bool appended = false;
    Status s = CommitToJournal(journal_writes, now_ms, synced, &appended);
    if (!s.ok() && synced && appended) {
      // Its fsync failed after the append, so the index may show the batch: it becomes a
      // deferred write, which no read answers with before a sync vouches for it (ApplyImpl's
      // unsynced_visible, and MayReadUnsynced once the journal has failed and syncs no more).
      BeginDeferredWrite(written_stripes);
      deferred_done_.fetch_add(1, std::memory_order_acq_rel);
    }
    if (defer_sync) deferred_done_.fetch_add(1, std::memory_order_acq_rel);
    if (!s.ok()) {
      results->clear();
      return s;
    }
    admin_overrides_.fetch_add(admin_overrides, std::memory_order_relaxed);
    uint64_t bytes = 0;
    for (const journal::JournalStore::Write& w : journal_writes) {
      bytes += w.key.size() + w.value.size();
    }
    user_bytes_.fetch_add(bytes, std::memory_order_relaxed);
  }
  if (batch.Count() > 0) {
    const bool synced = !defer_sync && write_options_.sync;
    std::shared_lock<std::shared_mutex> synced_write;
    if (synced) synced_write = std::shared_lock<std::shared_mutex>(synced_writes_);
    // Checked after the lock: a SyncWal that failed suspends before releasing it.
    if (health_->suspended()) {
      results->clear();
      return health_->Refusal();
    }
    // Once a second, the clock's high-water mark rides along (clock_mark.h).
    std::unique_lock<std::mutex> mark_lock;
    std::optional<int64_t> mark;
    if (clock_mark_) mark = clock_mark_->MaybeAddTo(&batch, now_ms, &mark_lock);
    if (defer_sync) {
      BeginDeferredWrite(written_stripes);
    }
    rocksdb::Status s = db_->Write(defer_sync ? deferred_write_options_ : write_options_, &batch);
    if (s.ok() && mark && synced) clock_mark_->Synced(*mark);  // unsynced: no bound for removal
    mark_lock = {};
    synced_write = {};
    if (defer_sync) deferred_done_.fetch_add(1, std::memory_order_acq_rel);
    if (!s.ok()) {
      results->clear();
      return FromRocks(s);
    }
    writes_.fetch_add(1, std::memory_order_relaxed);
    admin_overrides_.fetch_add(admin_overrides, std::memory_order_relaxed);
    if (!defer_sync && write_options_.sync) wal_syncs_.fetch_add(1, std::memory_order_relaxed);
    user_bytes_.fetch_add(batch.GetDataSize(), std::memory_order_relaxed);
  }
  // A deferred batch needs its caller's sync if it wrote, or if it may have read a deferred
  // write not synced yet (every such write began before this point).
  bool unsynced_visible = deferred_begun_.load(std::memory_order_acquire) >
                          deferred_synced_.load(std::memory_order_acquire);
  // While writes are suspended no sync can run: narrow it down to the keys this batch read. A
  // failed journal syncs no more; its failed synced writes are narrowed down the same way.
  if (journal_ && !journal_->failure().ok()) {
    unsynced_visible = MayReadUnsynced(prepared);
  } else if (unsynced_visible && health_->suspended()) {
    unsynced_visible = MayReadUnsynced(prepared);
  }
  if (defer_sync) *needs_sync = write_count > 0 || unsynced_visible;
  // A synced batch that wrote nothing may have read a deferred write not durable yet: sync
  // before answering. (A synced write fsyncs every WAL file, earlier writes included.) Never
  // true unless a server uses ApplyDeferSync.
  if (!defer_sync && write_options_.sync && write_count == 0 && unsynced_visible) {
    if (Status s = SyncWal(); !s.ok()) {
      results->clear();
      return Status::IOError("read a write not confirmed durable yet: " + s.message());
    }
  }
  windows_in_use.unlock();
  guard.reset();  // watchers run after the keys are unlocked: they may re-read them at once
  watchers_.Fire(written);
  ops_.fetch_add(ops.size(), std::memory_order_relaxed);
  return Status::Ok();
}

Status RocksEngine::Apply(std::span<const Op> ops, std::vector<Result<OpResult>>* results) {
  const auto start = std::chrono::steady_clock::now();
  if (Status s = ApplyNoWait(ops, results); !s.ok()) return s;
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    Result<OpResult>& r = (*results)[i];
    if (WaitsForHolder(op) && r.ok() && StillHeld(op.type, r->outcome)) {
      r = WaitForHolder(op, std::move(r), start + *op.wait);
    }
  }
  return Status::Ok();
}

Result<OpResult> RocksEngine::WaitForHolder(const Op& op, Result<OpResult> last,
                                            std::chrono::steady_clock::time_point deadline) {
  struct Signal {
    std::mutex mu;
    std::condition_variable cv;
    bool fired = false;  // guarded by mu
  };
  Op once = op;
  once.wait.reset();
  while (true) {
    auto signal = std::make_shared<Signal>();
    // Watch first, then re-read: a change committed after the read always fires the watch.
    WatchId id = Watch(op.ns, op.key, [signal] {
      std::lock_guard<std::mutex> lock(signal->mu);
      signal->fired = true;
      signal->cv.notify_all();
    });
    std::vector<Result<OpResult>> again;
    Status s = ApplyNoWait(std::span<const Op>(&once, 1), &again);
    if (!s.ok()) {
      Unwatch(id);
      return s;
    }
    last = std::move(again[0]);
    if (!last.ok() || !StillHeld(op.type, last->outcome)) {
      Unwatch(id);
      return last;
    }
    // Sleep until the holder changes the key, its lease ends (then the op takes over), or the
    // deadline.
    const int64_t lease_left_ms =
        std::max<int64_t>(1, last->record->lease_until_ms - clock_->NowMillis());
    auto wake = std::min(
        deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(lease_left_ms));
    {
      std::unique_lock<std::mutex> lock(signal->mu);
      signal->cv.wait_until(lock, wake, [&] { return signal->fired; });
    }
    Unwatch(id);
    if (std::chrono::steady_clock::now() >= deadline) {
      // One last look: the holder may have let go right at the deadline.
      s = ApplyNoWait(std::span<const Op>(&once, 1), &again);
      if (!s.ok()) return s;
      return std::move(again[0]);
    }
  }
}

Result<StoreStats> RocksEngine::Stats() {
  StoreStats stats;
  uint64_t v = 0;
  // Per-family properties, summed over the default family and every window's.
  if (db_->GetAggregatedIntProperty("rocksdb.estimate-num-keys", &v)) {
    stats.estimated_live_records = v;
  }
  if (db_->GetAggregatedIntProperty("rocksdb.total-sst-files-size", &v)) stats.sst_bytes = v;
  if (db_->GetAggregatedIntProperty("rocksdb.cur-size-all-mem-tables", &v)) {
    stats.memtable_bytes = v;
  }
  stats.expiry_windows = windows_->Current()->size();
  stats.expiry_window_filter_bytes = windows_->FilterBytes();
  rocksdb::VectorLogPtr wal_files;
  // Not while suspended: listing WALs purges obsolete ones, and closing a WAL whose append
  // failed asserts in Debian's librocksdb (failure_safe_fs.h).
  if (!health_->suspended() && db_->GetSortedWalFiles(wal_files).ok()) {
    for (const auto& f : wal_files) stats.wal_bytes += f->SizeFileBytes();
  }
  stats.next_fence = fences_.next();
  stats.ops = ops_.load(std::memory_order_relaxed);
  stats.writes = writes_.load(std::memory_order_relaxed);
  stats.admin_overrides = admin_overrides_.load(std::memory_order_relaxed);
  stats.wal_syncs = wal_syncs_.load(std::memory_order_relaxed);
  stats.reclaim_failures = reclaim_failures_.load(std::memory_order_relaxed);
  stats.user_bytes_written = user_bytes_.load(std::memory_order_relaxed);
  stats.flush_bytes_written = io_->flush_bytes_written.load(std::memory_order_relaxed);
  stats.compaction_bytes_read = io_->compaction_bytes_read.load(std::memory_order_relaxed);
  stats.compaction_bytes_written = io_->compaction_bytes_written.load(std::memory_order_relaxed);
  stats.compactions = io_->compactions.load(std::memory_order_relaxed);
  stats.records_dropped_by_compaction = io_->records_dropped.load(std::memory_order_relaxed);
  if (db_->GetAggregatedIntProperty("rocksdb.live-sst-files-size", &v)) stats.live_sst_bytes = v;
  if (db_->GetIntProperty("rocksdb.block-cache-usage", &v)) stats.block_cache_bytes = v;
  if (db_->GetIntProperty("rocksdb.block-cache-capacity", &v)) stats.block_cache_capacity_bytes = v;
  if (db_->GetAggregatedIntProperty("rocksdb.estimate-table-readers-mem", &v)) {
    stats.table_readers_bytes = v;
  }
  if (db_->GetAggregatedIntProperty("rocksdb.estimate-pending-compaction-bytes", &v)) {
    stats.pending_compaction_bytes = v;
  }
  if (db_->GetIntProperty("rocksdb.background-errors", &v)) stats.background_errors = v;
  stats.write_stalls = io_->write_stalls.load(std::memory_order_relaxed);
  uint64_t stopped = 0, delayed_rate = 0;
  db_->GetIntProperty("rocksdb.is-write-stopped", &stopped);
  db_->GetIntProperty("rocksdb.actual-delayed-write-rate", &delayed_rate);
  stats.write_stalled = stopped != 0 || delayed_rate != 0;
  stats.expired_unreclaimed_records = ExpiredUnreclaimed();
  if (own_clock_) stats.clock_steps = own_clock_->steps_detected();
  stats.durability = options_.durability;
  if (journal_) {
    stats.estimated_live_records = journal_->records();
    stats.journal_index_bytes = journal_->index_bytes();
    for (const journal::Journal::SegmentInfo& segment : journal_->journal().Segments()) {
      ++stats.journal_segments;
      stats.journal_bytes += segment.end_offset;
    }
    stats.sst_bytes += stats.journal_bytes;
    stats.live_sst_bytes += stats.journal_bytes;
    stats.compaction_bytes_written += journal_bytes_moved_.load(std::memory_order_relaxed);
  }
  return stats;
}

uint64_t RocksEngine::ExpiredUnreclaimed() {
  rocksdb::TablePropertiesCollection tables;
  if (!db_->GetPropertiesOfAllTables(&tables).ok()) return 0;
  const int64_t removable_until_ms =
      RemovableUntil(clock_->NowMillis(), options_.expiry_grace_ms, clock_mark_.get());
  double expired = 0;
  for (const auto& [name, props] : tables) {
    auto raw = props->user_collected_properties.find(kExpiryStatsProperty);
    if (raw == props->user_collected_properties.end()) continue;
    std::optional<ExpiryStats> stats = ExpiryStats::Decode(raw->second);
    if (stats) expired += stats->ExpiredFraction(removable_until_ms) * stats->records;
  }
  // Windows that could be dropped already: all of their records.
  std::shared_ptr<const ExpiryWindows::Set> windows = windows_->Current();
  for (const auto& w : *windows) {
    uint64_t keys = 0;
    if (w.end_ms > removable_until_ms) break;
    if (db_->GetIntProperty(w.handle.get(), "rocksdb.estimate-num-keys", &keys)) expired += keys;
  }
  return static_cast<uint64_t>(expired + 0.5);
}

Status RocksEngine::WriteClockMark() {
  if (!clock_mark_) return Status::Ok();
  // Synced whatever the durability mode: compaction output is synced, so the mark that bounds
  // what it removes must be durable first (clock_mark.h). Once per reclaim interval.
  std::shared_lock<std::shared_mutex> synced_write(synced_writes_);  // like ApplyImpl's
  // After the lock: a SyncWal that failed suspends before releasing it.
  if (health_->suspended()) return health_->Refusal();
  rocksdb::WriteOptions sync;
  sync.sync = true;
  return clock_mark_->Write(db_.get(), sync, clock_->NowMillis());
}

Status RocksEngine::CompactAll() {
  if (journal_) {
    // Every closed segment at least half dead is written again without its dead records (the
    // store counts entry headers as not needed: a fully live segment of small records is
    // ~80 % needed).
    journal::JournalStore::MovePolicy compact;
    compact.max_needed_fraction = 0.5;
    compact.min_stay_ms = 0;
    return ReclaimJournal(compact).status();
  }
  if (Status s = WriteClockMark(); !s.ok()) return s;
  if (Result<size_t> dropped = DropEndedWindows(); !dropped.ok()) return dropped.status();
  rocksdb::CompactRangeOptions cro;
  cro.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  std::shared_ptr<const ExpiryWindows::Set> keep;
  for (rocksdb::ColumnFamilyHandle* family : Families(&keep)) {
    if (rocksdb::Status s = db_->CompactRange(cro, family, nullptr, nullptr); !s.ok()) {
      return FromRocks(s);
    }
  }
  return Status::Ok();
}

void RocksEngine::PrepareUpcomingWindows() {
  if (options_.layout != EngineOptions::Layout::kExpiryWindows) return;
  std::set<int64_t> lives;  // default TTLs and completed TTLs, plus the remember period
  auto add = [&](std::string_view ns, int64_t ttl_ms) {
    if (ttl_ms > 0) lives.insert(ttl_ms + remember_.For(ns));
  };
  add("", options_.default_retention.default_ttl_ms);
  add("", options_.default_lifecycle.completed_ttl_ms);
  for (const auto& [ns, policy] : retention_) add(ns, policy.default_ttl_ms);
  for (const auto& [ns, policy] : lifecycle_) add(ns, policy.completed_ttl_ms);
  const int64_t now_ms = clock_->NowMillis();
  std::set<int64_t> ends;
  for (int64_t life : lives) {
    ends.insert(windows_->EndFor(now_ms + life));
    ends.insert(windows_->EndFor(now_ms + life + options_.reclaim_interval_ms));
  }
  for (int64_t end : ends) (void)windows_->Open(end);
}

Result<size_t> RocksEngine::DropEndedWindows() {
  // The bound the compaction filter uses: every record in a window ended the grace ago, before
  // the synced clock mark too (the caller wrote it), so nothing dropped is live again at any
  // time a restart may continue from.
  return windows_->DropEndedBy(
      RemovableUntil(clock_->NowMillis(), options_.expiry_grace_ms, clock_mark_.get()));
}

uint64_t RocksEngine::WindowFilesMax() {
  uint64_t most = 0;
  std::shared_ptr<const ExpiryWindows::Set> windows = windows_->Current();
  for (const auto& w : *windows) {
    rocksdb::ColumnFamilyMetaData meta;
    db_->GetColumnFamilyMetaData(w.handle.get(), &meta);
    most = std::max<uint64_t>(most, meta.file_count);
  }
  return most;
}

Result<ReclaimReport> RocksEngine::ReclaimJournal(const journal::JournalStore::MovePolicy& policy) {
  ReclaimReport report;
  if (Status s = WriteClockMark(); !s.ok()) return s;
  // As for windows (DropEndedWindows): ended the grace ago, and before the synced clock mark.
  const int64_t bound =
      RemovableUntil(clock_->NowMillis(), options_.expiry_grace_ms, clock_mark_.get());
  // Busy: a copy of the journal is being taken; what it kept is dropped on the next pass.
  Result<size_t> dropped = journal_->DropEndedBy(bound);
  if (!dropped.ok() && !dropped.status().IsBusy()) return dropped.status();
  if (dropped.ok()) report.journal_segments_dropped = *dropped;
  Result<journal::JournalStore::MoveReport> moved = journal_->MoveSurvivors(bound, policy);
  if (!moved.ok() && !moved.status().IsBusy()) return moved.status();
  if (moved.ok()) {
    report.journal_segments_moved = moved->segments;
    journal_bytes_moved_.fetch_add(moved->bytes_moved, std::memory_order_relaxed);
    if (moved->skipped > 0) {
      LogToOperator(options_.log,
                    LogRecord(LogLevel::kWarn, "journal_segment_unmovable",
                              "a journal segment whose records are mostly dead stays on disk "
                              "until its last record is dead: " +
                                  moved->first_skipped.message())
                        .With("segments", static_cast<int64_t>(moved->skipped)));
    }
  }
  report.journal_index_saved = SaveJournalIndexIfDue();
  return report;
}

bool RocksEngine::SaveJournalIndexIfDue() {
  const int64_t now = clock_->NowMillis();
  const int64_t interval = options_.journal_index_save_interval_ms;
  if (interval == 0 || now - journal_index_saved_ms_.load() < interval) return false;
  if (Status s = journal_->SaveIndex(); !s.ok()) {
    if (!journal_index_save_failing_.exchange(true)) {
      LogToOperator(options_.log,
                    LogRecord(LogLevel::kWarn, "journal_index_unsaved",
                              "saving the journal's index failed, retrying every reclaim pass (a "
                              "start after a crash replays more meanwhile): " +
                                  s.message()));
    }
    return false;
  }
  journal_index_saved_ms_.store(now);
  if (journal_index_save_failing_.exchange(false)) {
    LogToOperator(options_.log, LogRecord(LogLevel::kInfo, "journal_index_saved",
                                          "saving the journal's index works again"));
  }
  return true;
}

Result<ReclaimReport> RocksEngine::ReclaimExpired() {
  if (journal_) return ReclaimJournal(journal::JournalStore::MovePolicy());
  ReclaimReport report;
  if (Status s = WriteClockMark(); !s.ok()) return s;
  // Windows leave whole; what follows is for the default family (records of the leveled
  // layout), whose expired records only compaction removes.
  Result<size_t> dropped = DropEndedWindows();
  if (!dropped.ok()) return dropped.status();
  report.windows_dropped = *dropped;
  report.window_files_max = WindowFilesMax();
  rocksdb::TablePropertiesCollection tables;
  if (rocksdb::Status s = db_->GetPropertiesOfAllTables(&tables); !s.ok()) return FromRocks(s);
  std::vector<rocksdb::LiveFileMetaData> files;
  db_->GetLiveFilesMetaData(&files);
  std::erase_if(files, [](const rocksdb::LiveFileMetaData& f) {
    return f.column_family_name != rocksdb::kDefaultColumnFamilyName;
  });
  // What the compaction filter will remove: expired for the grace (expiry_compaction_filter.h).
  const int64_t removable_until_ms =
      RemovableUntil(clock_->NowMillis(), options_.expiry_grace_ms, clock_mark_.get());
  // The key ranges of the files worth reclaiming.
  std::vector<std::pair<std::string, std::string>> ranges;
  for (const auto& file : files) {
    report.files_examined++;
    auto props = tables.find(file.db_path + file.name);
    if (props == tables.end()) continue;
    auto raw = props->second->user_collected_properties.find(kExpiryStatsProperty);
    if (raw == props->second->user_collected_properties.end()) continue;
    std::optional<ExpiryStats> stats = ExpiryStats::Decode(raw->second);
    if (!stats ||
        stats->ExpiredFraction(removable_until_ms) < options_.reclaim_min_expired_fraction) {
      continue;
    }
    ranges.emplace_back(file.smallestkey, file.largestkey);
    report.files_compacted++;
  }
  // Overlapping ranges (an L0 file and the files below it, say) are merged and compacted once:
  // compacting them one by one would rewrite the same data again and again.
  std::sort(ranges.begin(), ranges.end());
  std::vector<std::pair<std::string, std::string>> merged;
  for (auto& r : ranges) {
    if (!merged.empty() && r.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, r.second);
    } else {
      merged.push_back(std::move(r));
    }
  }
  for (const auto& [smallest, largest] : merged) {
    // Compacting through to the bottom level runs the expiry filter over the range and drops
    // the resulting tombstones instead of pushing them down.
    rocksdb::CompactRangeOptions cro;
    cro.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
    rocksdb::Slice begin(smallest), end(largest);
    if (rocksdb::Status s = db_->CompactRange(cro, &begin, &end); !s.ok()) return FromRocks(s);
  }
  return report;
}

Status RocksEngine::WaitForBackgroundWork(int64_t timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  // RocksDB 7.8 has no WaitForCompact: poll its own counters (cheap in-memory properties).
  while (true) {
    uint64_t pending = 0, compactions = 0, flushes = 0, flush_pending = 0;
    // The default family only: a window's FIFO compaction reports itself pending whenever it
    // has 8 files, even when none is small enough to merge, and then stays pending; windows'
    // compactions that do run are counted below.
    db_->GetIntProperty("rocksdb.compaction-pending", &pending);
    db_->GetIntProperty("rocksdb.num-running-compactions", &compactions);  // DB-wide
    db_->GetIntProperty("rocksdb.num-running-flushes", &flushes);          // DB-wide
    db_->GetAggregatedIntProperty("rocksdb.mem-table-flush-pending", &flush_pending);
    const bool filling = filling_filters_.load(std::memory_order_acquire);
    if (pending + compactions + flushes + flush_pending == 0 && !filling) return Status::Ok();
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::TimedOut(
          "background flushes/compactions (or the filling of window key "
          "filters) still running after " +
          std::to_string(timeout_ms) + " ms");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

Result<BackupManifest> RocksEngine::Backup(const std::string& dir) {
  std::unique_lock<std::mutex> only(backup_mu_, std::try_to_lock);
  if (!only.owns_lock()) {
    return Status::Busy("another backup is being taken; retry when it has finished");
  }
  // Not while writes are suspended: the checkpoint flushes and lists the WALs (Stats says why
  // listing them then is unsafe), and a flush is what the recovery owns. Nor once the journal
  // failed: after a failed fdatasync the kernel may have dropped pages that a copy would read
  // back as they were before the write, and a backup must hold what was acknowledged.
  if (health_->suspended()) return health_->Refusal();
  if (Status s = JournalFailure(); !s.ok() && !s.IsBusy()) return s;
  return WriteBackup(
      db_.get(), journal_.get(), dir, [this] { return fences_.next(); }, clock_->NowMillis());
}

// Lists the record at `key` (what its stored value read as at `now_ms`) in `page` if it is live
// and the request's filter admits it. False, listing nothing, if it would take the page past its
// byte bound (`bytes` so far): it is then the next page's first. Corruption naming the key for a
// value that did not decode.
Result<bool> ListInPage(const ScanRequest& request, std::string_view key, Result<StoredKey> stored,
                        int64_t now_ms, ScanPage* page, size_t* bytes) {
  if (!stored.ok()) {
    return Status::Corruption("record at key '" + std::string(key) + "' of namespace '" +
                              request.ns + "': " + stored.status().message());
  }
  if (!stored->live || !ScanAdmits(request, *stored->live, now_ms)) return true;
  const size_t entry_bytes = ScanEntryBytes(key, *stored->live);
  if (request.max_bytes != 0 && !page->records.empty() &&
      *bytes + entry_bytes > request.max_bytes) {
    return false;
  }
  *bytes += entry_bytes;
  page->records.push_back(ScanEntry{std::string(key), std::move(*stored->live)});
  return true;
}

Status RocksEngine::ValidateScan(const ScanRequest& request) const {
  auto graph = state_graphs_.find(request.ns);
  return ValidateScanFilter(request, options_.limits,
                            graph == state_graphs_.end() ? nullptr : &graph->second);
}

Result<ScanPage> RocksEngine::ShowScanPage(ScanPage page, bool unsynced_visible) {
  if (unsynced_visible) {
    if (Status s = SyncWal(); !s.ok()) {
      return Status::IOError("read a write not confirmed durable yet: " + s.message());
    }
  }
  return page;
}

Result<ScanPage> RocksEngine::Scan(const ScanRequest& request) {
  if (journal_) return ScanJournal(request);
  Result<WalkRange> range =
      ResolveWalk(request.ns, request.prefix, request.cursor, options_.limits);
  if (!range.ok()) return range.status();
  if (Status s = ValidateScan(request); !s.ok()) return s;
  const int64_t now_ms = clock_->NowMillis();  // one instant for the page, as for a batch
  ScanPage page;
  size_t bytes = 0;
  rocksdb::Slice upper(range->upper);
  rocksdb::ReadOptions read;
  read.iterate_upper_bound = &upper;
  read.fill_cache = false;  // an admin walk must not evict the serving working set
  std::shared_ptr<const ExpiryWindows::Set> keep;
  const std::vector<rocksdb::ColumnFamilyHandle*> families = Families(&keep);
  // One view of every family: a record moving between two of them is seen once.
  rocksdb::ManagedSnapshot snapshot(db_.get());
  read.snapshot = snapshot.snapshot();
  FamilyWalk it(db_.get(), read, families);
  // Every deferred write the iterator can see began before this.
  const bool unsynced_visible = UnsyncedWriteVisible();
  auto shown = [&](ScanPage& done) { return ShowScanPage(std::move(done), unsynced_visible); };
  std::string last;  // the last key examined
  for (it.Seek(range->seek); it.Valid(); it.Next()) {
    if (page.examined == kMaxScanExamined || page.records.size() == request.limit) {
      page.cursor = CursorAfter(last);
      return shown(page);
    }
    const std::string_view rocks_key(it.key().data(), it.key().size());
    std::string_view ns, key;
    if (!ParseRecordKey(rocks_key, &ns, &key)) break;  // the upper bound makes this unreachable
    // Markers are not records: read as if the namespace remembered nothing. Of the key's
    // versions (one per family that holds it), at most one is live.
    Result<StoredKey> stored = StoredKey();
    for (const rocksdb::Slice& value : it.values()) {
      stored = ReadStoredValue(std::string_view(value.data(), value.size()), now_ms,
                               /*remember_ms=*/0);
      if (!stored.ok() || stored->live) break;
    }
    Result<bool> listed = ListInPage(request, key, std::move(stored), now_ms, &page, &bytes);
    if (!listed.ok()) return listed.status();
    if (!*listed) {
      page.cursor = CursorAfter(last);  // this key is the next page's first
      return shown(page);
    }
    page.examined++;
    last.assign(rocks_key);
  }
  if (!it.status().ok()) return FromRocks(it.status());
  return shown(page);  // the range is exhausted: no cursor
}

Result<ScanPage> RocksEngine::ScanJournal(const ScanRequest& request) {
  Result<journal::WalkPosition> from =
      ResolveJournalWalk(request.ns, request.prefix, request.cursor, options_.limits);
  if (!from.ok()) return from.status();
  if (Status s = ValidateScan(request); !s.ok()) return s;
  const int64_t now_ms = clock_->NowMillis();  // one instant for the page, as for a batch
  // Every deferred write the walk can see began before this.
  const bool unsynced_visible = UnsyncedWriteVisible();
  const std::string walked = RecordKey(request.ns, request.prefix);  // the keys listed start so
  ScanPage page;
  size_t bytes = 0;
  Status failed;
  Result<std::optional<journal::WalkPosition>> next =
      journal_->Walk(*from, [&](const journal::OpView& op, bool current) {
        if (page.examined == kMaxScanExamined || page.records.size() == request.limit) {
          return false;
        }
        std::string_view ns, key;
        if (current && op.key.starts_with(walked) && ParseRecordKey(op.key, &ns, &key)) {
          // Markers are not records: read as if the namespace remembered nothing.
          Result<bool> listed =
              ListInPage(request, key, ReadStoredValue(op.value, now_ms, /*remember_ms=*/0), now_ms,
                         &page, &bytes);
          if (!listed.ok()) failed = listed.status();
          if (!listed.ok() || !*listed) return false;  // a record that does not fit: next page's
        }
        page.examined++;
        return true;
      });
  if (!failed.ok()) return failed;
  if (!next.ok()) return next.status();
  if (*next) page.cursor = JournalCursorAt(**next, request.ns, request.prefix);
  return ShowScanPage(std::move(page), unsynced_visible);
}

// The keys of a purge's next batch (step 1 of Purge) under the journal layout: each key whose
// current version (live, a marker, or dead and not dropped yet) the walk passes; `cursor` set if
// there is more.
Status RocksEngine::JournalPurgeKeys(const PurgeRequest& request, std::vector<std::string>* keys,
                                     std::string* cursor) {
  Result<journal::WalkPosition> from =
      ResolveJournalWalk(request.ns, request.prefix, request.cursor, options_.limits);
  if (!from.ok()) return from.status();
  if (Status s = WriteReadiness(); !s.ok()) return s;
  const std::string walked = RecordKey(request.ns, request.prefix);
  // A key written again during the walk is met twice. The views point into `keys`, which never
  // grows past its reservation, so its strings stay where they are.
  std::set<std::string_view> seen;
  keys->reserve(kPurgeBatchKeys);
  size_t examined = 0;
  Result<std::optional<journal::WalkPosition>> next =
      journal_->Walk(*from, [&](const journal::OpView& op, bool current) {
        if (keys->size() == kPurgeBatchKeys || examined == kMaxScanExamined) return false;
        examined++;
        if (current && op.key.starts_with(walked) && !seen.contains(op.key)) {
          keys->emplace_back(op.key);
          seen.insert(keys->back());
        }
        return true;
      });
  if (!next.ok()) return next.status();
  if (*next) *cursor = JournalCursorAt(**next, request.ns, request.prefix);
  return Status::Ok();
}

Result<PurgeStep> RocksEngine::Purge(const PurgeRequest& request) {
  // 1. The batch's keys, read without locks.
  std::vector<std::string> keys;
  PurgeStep step;
  if (journal_) {
    if (Status s = JournalPurgeKeys(request, &keys, &step.cursor); !s.ok()) return s;
  } else {
    Result<WalkRange> range =
        ResolveWalk(request.ns, request.prefix, request.cursor, options_.limits);
    if (!range.ok()) return range.status();
    if (health_->suspended()) return health_->Refusal();
    rocksdb::Slice upper(range->upper);
    rocksdb::ReadOptions read;
    read.iterate_upper_bound = &upper;
    read.fill_cache = false;
    std::shared_ptr<const ExpiryWindows::Set> keep;
    FamilyWalk it(db_.get(), read, Families(&keep));
    for (it.Seek(range->seek); it.Valid(); it.Next()) {
      if (keys.size() == kPurgeBatchKeys) {
        step.cursor = CursorAfter(keys.back());
        break;
      }
      keys.emplace_back(it.key().data(), it.key().size());
    }
    if (!it.status().ok()) return FromRocks(it.status());
  }
  if (keys.empty()) return step;
  // 2. Lock them as Apply does (ascending stripes), then read them again: what an operation
  // committed between the walk and the lock is what the counts describe.
  std::vector<size_t> stripes;
  stripes.reserve(keys.size());
  for (const std::string& key : keys) stripes.push_back(KeyLocks::StripeOf(key));
  std::sort(stripes.begin(), stripes.end());
  std::optional<KeyLocks::Guard> guard;
  guard.emplace(&locks_, stripes);
  std::vector<rocksdb::Slice> slices(keys.begin(), keys.end());
  const int64_t now_ms = clock_->NowMillis();
  const int64_t remember_ms = remember_.For(request.ns);
  const std::vector<int64_t> remember(keys.size(), remember_ms);
  std::shared_lock<std::shared_mutex> windows_in_use(windows_->in_use());
  std::vector<Found> found(keys.size());
  ReadAll(slices, remember, now_ms, /*locked=*/true, found.data());
  rocksdb::WriteBatch batch;
  std::vector<journal::JournalStore::Write> journal_writes;
  std::vector<std::string_view> written;
  for (size_t i = 0; i < keys.size(); ++i) {
    Result<StoredKey> stored = ReadFound(found[i], now_ms, remember_ms);
    // A value that does not decode is deleted all the same: the operator asked for the range
    // gone. Only a failed read stops the batch.
    if (!stored.ok() && !stored.status().IsCorruption()) return stored.status();
    // Deleted since the walk, or only dead versions in windows (which leave with their window).
    if (journal_ ? !found[i].version : found[i].family == nullptr) continue;
    if (stored.ok() && stored->live) step.deleted++;
    if (stored.ok() && stored->remembered) step.forgotten++;
    if (journal_) {
      // Kept as long as the version it deletes (raised by the journal store).
      journal_writes.push_back({journal::OpType::kDelete, keys[i], {}, now_ms, &*found[i].version});
    } else {
      batch.Delete(found[i].family, keys[i]);
    }
    written.push_back(keys[i]);
  }
  // 3. One write, under the same rules as Apply's commit (write_health.h, SyncWal).
  if (!journal_writes.empty()) {
    const bool synced = options_.durability == Durability::kSync;
    bool appended = false;
    if (Status s = CommitToJournal(journal_writes, now_ms, synced, &appended); !s.ok()) {
      if (synced && appended) {  // as in ApplyImpl: the index may show the deletes
        BeginDeferredWrite(stripes);
        deferred_done_.fetch_add(1, std::memory_order_acq_rel);
      }
      return s;
    }
  }
  if (batch.Count() > 0) {
    std::shared_lock<std::shared_mutex> synced_write;
    if (write_options_.sync) synced_write = std::shared_lock<std::shared_mutex>(synced_writes_);
    if (health_->suspended()) return health_->Refusal();
    if (rocksdb::Status s = db_->Write(write_options_, &batch); !s.ok()) return FromRocks(s);
    writes_.fetch_add(1, std::memory_order_relaxed);
    if (write_options_.sync) wal_syncs_.fetch_add(1, std::memory_order_relaxed);
    user_bytes_.fetch_add(batch.GetDataSize(), std::memory_order_relaxed);
  }
  windows_in_use.unlock();
  guard.reset();  // as in ApplyImpl: watchers may re-read the keys at once
  watchers_.Fire(written);
  return step;
}

Status RocksEngine::Compact(std::string_view ns) {
  if (ns.empty()) return CompactAll();
  Result<WalkRange> range = ResolveWalk(ns, "", "", options_.limits);
  if (!range.ok()) return range.status();
  // The journal keeps no namespace apart from the others: its segments are compacted whole.
  if (journal_) return CompactAll();
  if (Status s = WriteClockMark(); !s.ok()) return s;  // as CompactAll: before removing anything
  rocksdb::CompactRangeOptions cro;
  cro.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  rocksdb::Slice begin(range->seek), end(range->upper);
  std::shared_ptr<const ExpiryWindows::Set> keep;
  for (rocksdb::ColumnFamilyHandle* family : Families(&keep)) {
    if (rocksdb::Status s = db_->CompactRange(cro, family, &begin, &end); !s.ok()) {
      return FromRocks(s);
    }
  }
  return Status::Ok();
}

void RocksEngine::FillFilters() {
  if (Status s = windows_->FillFilters(stop_filling_filters_); !s.ok()) {
    LogToOperator(options_.log,
                  LogRecord(LogLevel::kWarn, "window_filters_unfilled",
                            "lookups keep probing the windows opened with the database whose key "
                            "filters could not be filled: " +
                                s.message())
                      .With("code", std::string(CodeName(s.code()))));
  }
  filling_filters_.store(false, std::memory_order_release);
}

void RocksEngine::ReclaimLoop() {
  std::unique_lock<std::mutex> lock(reclaim_mu_);
  while (!stopping_) {
    reclaim_cv_.wait_for(lock, std::chrono::milliseconds(options_.reclaim_interval_ms),
                         [this] { return stopping_; });
    if (stopping_) break;
    lock.unlock();
    NoteReclaimPass(ReclaimExpired().status());  // a failed pass is retried at the next interval
    PrepareUpcomingWindows();
    lock.lock();
  }
}

// The operator hears of the first failure and of the recovery, not of every retry: a full disk
// would otherwise log once per interval for as long as it lasts. The counter shows every one.
void RocksEngine::NoteReclaimPass(const Status& pass) {
  if (!pass.ok()) {
    reclaim_failures_.fetch_add(1, std::memory_order_relaxed);
    if (failed_reclaim_passes_in_a_row_++ == 0) {
      LogToOperator(options_.log,
                    LogRecord(LogLevel::kWarn, "reclaim_failed",
                              "removing expired records failed, retrying every reclaim interval "
                              "(expired records stay on disk meanwhile): " +
                                  pass.message())
                        .With("code", std::string(CodeName(pass.code())))
                        .With("retry_ms", options_.reclaim_interval_ms));
    }
    return;
  }
  if (failed_reclaim_passes_in_a_row_ > 0) {
    LogToOperator(
        options_.log,
        LogRecord(LogLevel::kInfo, "reclaim_resumed", "removing expired records works again")
            .With("failed_passes", static_cast<int64_t>(failed_reclaim_passes_in_a_row_)));
    failed_reclaim_passes_in_a_row_ = 0;
  }
}

}  // namespace

Result<std::unique_ptr<Engine>> Engine::Open(const std::string& dir, EngineOptions options) {
  Result<std::unique_ptr<ServingEngine>> engine =
      OpenEngineOnFileSystem(dir, std::move(options), nullptr);
  if (!engine.ok()) return engine.status();
  return std::unique_ptr<Engine>(std::move(*engine));
}

Result<std::unique_ptr<ServingEngine>> ServingEngine::Open(const std::string& dir,
                                                           EngineOptions options) {
  return OpenEngineOnFileSystem(dir, std::move(options), nullptr);
}

Result<std::unique_ptr<ServingEngine>> OpenEngineOnFileSystem(
    const std::string& dir, EngineOptions options, std::shared_ptr<rocksdb::FileSystem> fs) {
  if (!options.log) options.log = StderrLogSink();
  if (options.expiry_grace_ms < 0 || options.expiry_grace_ms > EngineOptions::kMaxExpiryGraceMs) {
    return Status::InvalidArgument("expiry_grace_ms is " + std::to_string(options.expiry_grace_ms) +
                                   "; it must be in [0, " +
                                   std::to_string(EngineOptions::kMaxExpiryGraceMs) + "]");
  }
  // The engine's own time (anchored_clock.h), unless the caller supplies a clock.
  std::shared_ptr<AnchoredClock> own_clock;
  std::shared_ptr<ClockMark> clock_mark;
  if (!options.clock) {
    own_clock = std::make_shared<AnchoredClock>(
        options.wall_clock ? options.wall_clock : SystemClock::Default(),
        options.monotonic_clock ? options.monotonic_clock : MonotonicClock::Default(), options.log);
    clock_mark = std::make_shared<ClockMark>();
    options.clock = own_clock;
  }
  if (Status st = ValidatePolicy("", options.default_retention); !st.ok()) return st;
  for (const auto& [ns, policy] : options.retention) {
    if (Status st = ValidateNamespace(ns, options.limits); !st.ok()) return st;
    if (Status st = ValidatePolicy(ns, policy); !st.ok()) return st;
  }
  if (Status st = ValidateLifecycle("", options.default_lifecycle); !st.ok()) return st;
  for (const auto& [ns, policy] : options.lifecycle) {
    if (Status st = ValidateNamespace(ns, options.limits); !st.ok()) return st;
    if (Status st = ValidateLifecycle(ns, policy); !st.ok()) return st;
  }
  for (const auto& [ns, graph] : options.state_graphs) {
    if (Status st = ValidateNamespace(ns, options.limits); !st.ok()) return st;
    if (Status st = graph.Validate(options.limits.max_status_bytes); !st.ok()) {
      return Status::InvalidArgument("namespace '" + ns + "': " + st.message());
    }
  }
  for (const auto& [ns, format] : options.key_formats) {
    if (Status st = ValidateKeyFormat(ns, format, options.limits); !st.ok()) return st;
  }
  if (options.recovery_stuck_after_ms <= 0) {
    return Status::InvalidArgument("recovery_stuck_after_ms must be > 0");
  }
  if (options.reclaim_min_expired_fraction <= 0 || options.reclaim_min_expired_fraction > 1) {
    return Status::InvalidArgument("reclaim_min_expired_fraction must be in (0, 1]");
  }
  if (options.expiry_window_ms < EngineOptions::kMinExpiryWindowMs ||
      options.expiry_window_ms > EngineOptions::kMaxExpiryWindowMs) {
    return Status::InvalidArgument("expiry_window_ms is " +
                                   std::to_string(options.expiry_window_ms) + "; it must be in [" +
                                   std::to_string(EngineOptions::kMinExpiryWindowMs) + ", " +
                                   std::to_string(EngineOptions::kMaxExpiryWindowMs) + "]");
  }
  if (options.expiry_window_merge_files != 0 &&
      (options.expiry_window_merge_files < 2 ||
       options.expiry_window_merge_files > EngineOptions::kMaxExpiryWindowMergeFiles)) {
    return Status::InvalidArgument("expiry_window_merge_files is " +
                                   std::to_string(options.expiry_window_merge_files) +
                                   "; it must be 0 (never merge) or in [2, " +
                                   std::to_string(EngineOptions::kMaxExpiryWindowMergeFiles) + "]");
  }
  if (Status st = ValidateJournalOptions(options); !st.ok()) return st;
  // Before RocksDB sees the directory: what it would "recover" by dropping data (a damaged WAL)
  // or by starting over (a missing CURRENT) is refused here, with every file left as it is.
  if (Status st = CheckDataDirectory(dir, options); !st.ok()) return st;
  if (!options.create_if_missing && !std::filesystem::exists(dir + "/CURRENT")) {
    return Status::NotFound("no idemstore database in " + dir + " (and create_if_missing is off)");
  }
  // Options first: a bad option string must not leave an empty directory behind.
  Result<rocksdb::Options> tuned = MakeTunedRocksOptions(options, clock_mark);
  if (!tuned.ok()) return tuned.status();
  rocksdb::Options rocks_options = std::move(*tuned);
  if (options.create_if_missing) {
    std::error_code ec;  // RocksDB creates only the last path component
    std::filesystem::create_directories(dir, ec);
    if (ec) return Status::IOError("cannot create " + dir + ": " + ec.message());
  }
  if (options.background_priority == EngineOptions::BackgroundPriority::kLow) {
    for (auto pool : {rocksdb::Env::Priority::HIGH, rocksdb::Env::Priority::LOW}) {
      rocksdb::Status lowered =
          rocks_options.env->LowerThreadPoolCPUPriority(pool, rocksdb::CpuPriority::kLow);
      if (!lowered.ok()) return FromRocks(lowered);
    }
  }
  auto health = std::make_shared<WriteHealth>(
      options.log, std::chrono::milliseconds(options.recovery_stuck_after_ms));
  const bool os_files = fs == nullptr;
  if (!fs) fs = rocks_options.env->GetFileSystem();
  // The journal's files bypass the failure-safe layer (it is about RocksDB's WAL and LOG); the
  // engine's env wraps this file system, so it lives as long as the engine.
  const std::shared_ptr<rocksdb::FileSystem> journal_fs = fs;
  const bool journal_layout = options.layout == EngineOptions::Layout::kJournal;
  Result<bool> has_journal = journal::Journal::HasSegments(journal_fs.get(), JournalDir(dir));
  if (!has_journal.ok()) return has_journal.status();
  if (*has_journal && !journal_layout) {
    return Status::InvalidArgument(
        "the database in " + dir +
        " was written with the journal layout: open it with that layout");
  }
  if (!journal_layout) {
    // A conversion to the journal layout that crashed before its commit: its staging journal
    // holds copies only, and would otherwise take the disk for good.
    if (Status st = RemoveAbandonedConversion(journal_fs.get(), dir); !st.ok()) return st;
  }
  fs = NewFailureSafeFileSystem(std::move(fs), health);
  // Only WALs synced per write gain from zeros ahead (docs/design.md §5); async mode syncs at
  // close.
  if (options.durability == Durability::kSync && options.wal_prezero_chunk_bytes > 0) {
    fs = NewPrezeroedWalFileSystem(std::move(fs), options.wal_prezero_chunk_bytes);
  }
  std::unique_ptr<rocksdb::Env> env = rocksdb::NewCompositeEnv(std::move(fs));
  rocks_options.env = env.get();
  rocksdb::DB* raw = nullptr;
  auto io = std::make_shared<IoAccounting>();
  rocks_options.listeners.push_back(io);
  rocks_options.listeners.push_back(health);
  // Every window family the database has, whatever this run's layout: a record is found where
  // an earlier run put it.
  std::vector<int64_t> window_ends;
  if (std::filesystem::exists(dir + "/CURRENT")) {
    Result<std::vector<std::string>> names = ListFamilies(rocks_options, dir);
    if (!names.ok()) return names.status();
    for (const std::string& name : *names) {
      if (std::optional<int64_t> end = WindowFamilyEnd(name)) window_ends.push_back(*end);
    }
  }
  if (options.layout == EngineOptions::Layout::kExpiryWindows || !window_ends.empty()) {
    // Each family has its own memtables: together they stay within what one family may use.
    rocks_options.db_write_buffer_size =
        options.write_buffer_bytes * static_cast<size_t>(rocks_options.max_write_buffer_number);
    // A WAL file stays until every family with writes in it has flushed them, and the default
    // family takes only a clock mark a second: without a bound, it would keep every WAL since
    // its last flush (measured: 1M records took 236 MiB on disk instead of 96).
    rocks_options.max_total_wal_size = 2 * options.write_buffer_bytes;
  }
  const rocksdb::ColumnFamilyOptions window_options =
      WindowFamilyOptions(rocks_options, options.expiry_window_merge_files);
  std::vector<rocksdb::ColumnFamilyDescriptor> families{
      {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions(rocks_options)}};
  for (int64_t end : window_ends) {
    families.emplace_back(WindowFamilyName(end), window_options);
  }
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::Status s =
      rocksdb::DB::Open(rocksdb::DBOptions(rocks_options), dir, families, &handles, &raw);
  // Corruption: what RocksDB refuses itself, e.g. a closed WAL shorter than it was.
  if (!s.ok()) return WithSalvageAdvice(FromRocks(s), dir);
  std::unique_ptr<rocksdb::DB> db(raw);
  auto windows =
      std::make_unique<ExpiryWindows>(db.get(), options.expiry_window_ms, window_options);
  // handles[0] is the default family's: the DB keeps its own, this one is not needed.
  (void)db->DestroyColumnFamilyHandle(handles[0]);
  for (size_t i = 0; i < window_ends.size(); ++i) windows->Adopt(window_ends[i], handles[i + 1]);
  Result<uint64_t> reserved = FenceAllocator::LoadReservation(db.get());
  if (!reserved.ok()) return reserved.status();
  // A restored backup: fences continue above every fence its source may have handed out since
  // (idem/backup.h).
  std::string raised;
  if (Status st = RaiseFencesToBackupFloor(db.get(), dir, &*reserved, &raised); !st.ok()) {
    return st;
  }
  if (!raised.empty()) options.log(LogRecord(LogLevel::kWarn, "fences_raised", raised));
  if (clock_mark) {
    Result<std::optional<int64_t>> mark = clock_mark->Load(db.get());
    if (!mark.ok()) return mark.status();
    if (*mark) own_clock->ContinueFrom(**mark);
  }
  std::unique_ptr<journal::JournalStore> journal;
  if (journal_layout) {
    // What earlier runs may have dropped is bounded by the clock mark persisted before each drop
    // (ReclaimJournal), and the mark never goes back, and engine time continues from it: this
    // bound is at least every one a drop used, so no dropped operation's replacement is missing
    // from what this replays. Without a mark (a database written under a caller's clock) the
    // bound is now less the grace; a caller's own clock is trusted not to go back.
    const int64_t now_ms = options.clock->NowMillis();
    const int64_t bound = RemovableUntil(now_ms, options.expiry_grace_ms, clock_mark.get());
    const journal::JournalOptions journal_options = JournalOptionsFor(options, os_files);
    Result<std::optional<JournalConversion>> converted =
        ConvertToJournal(db.get(), windows.get(), journal_fs.get(), dir, options, journal_options,
                         options.clock.get(), now_ms, bound);
    if (!converted.ok()) return converted.status();
    if (const std::optional<JournalConversion>& c = *converted) {
      const char* from = window_ends.empty() ? "leveled" : "expiry-window";
      options.log(LogRecord(LogLevel::kInfo, "journal_conversion",
                            c->finished_earlier
                                ? "finished converting " + dir +
                                      " to the journal layout: deleted the records left in RocksDB"
                                : "converted " + dir + " from the " + from +
                                      " layout to the journal layout")
                      .With("records", c->records)
                      .With("dead_records", c->dead_records)
                      .With("bytes", c->bytes)
                      .With("window_families", c->window_families)
                      .With("ms", c->ms));
    }
    Result<std::unique_ptr<journal::JournalStore>> opened = journal::JournalStore::Open(
        journal_fs.get(), JournalDir(dir), journal_options, options.clock.get(), bound);
    if (!opened.ok()) return WithSalvageAdvice(opened.status(), dir);
    journal = std::move(*opened);
    if (journal->opened().loaded_saved_index) {
      options.log(LogRecord(LogLevel::kInfo, "journal_index_loaded",
                            "loaded the journal's saved index, replayed what came after it")
                      .With("records", static_cast<int64_t>(journal->records())));
    } else if (!journal->opened().saved_index_unused.empty()) {
      options.log(LogRecord(LogLevel::kWarn, "journal_index_replayed",
                            "replayed the journal instead of loading its saved index: " +
                                journal->opened().saved_index_unused));
    }
    if (const auto& tail = journal->journal().repaired_tail()) {
      options.log(LogRecord(LogLevel::kWarn, "journal_tail_repaired", tail->what)
                      .With("segment", static_cast<int64_t>(tail->segment_number))
                      .With("offset", static_cast<int64_t>(tail->offset))
                      .With("bytes", static_cast<int64_t>(tail->bytes)));
    }
  }
  return std::unique_ptr<ServingEngine>(
      new RocksEngine(std::move(options), std::move(env), std::move(db), *reserved, std::move(io),
                      std::move(health), std::move(clock_mark), std::move(own_clock),
                      std::move(windows), std::move(journal)));
}

}  // namespace idem
