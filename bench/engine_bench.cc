// Hot-path microbenchmarks. Every engine figure has a raw-RocksDB floor in the same binary, on the
// same RocksDB options (MakeRocksOptions) and the same preloaded data, so results are quoted as
// ratios from one run:
//   BM_Insert_New        vs BM_RawRocksDB_GetPut  (Get miss + Put of a new key)
//   BM_Insert_Duplicate  vs BM_RawRocksDB_Get     (Get hit)
//   BM_Apply_Insert/N    per item vs BM_Insert_New (BM_Apply_InsertRandom: keys in no order)
//   BM_Apply_CompareAndSet/N per item vs BM_CompareAndSet
//   BM_Clock_Engine      vs BM_Clock_Wall         (read once per batch: engine time vs the
//                                                   wall clock alone)
//   BM_JournalStore_GetPut vs BM_RawRocksDB_GetPut, BM_JournalStore_Get vs BM_RawRocksDB_Get:
//   the journal store (engine/src/journal_store.h, the journal layout's storage) holding the same
//   records; no flush or compaction will ever follow its writes. BM_JournalStore_Get_Pread vs
//   BM_JournalStore_Get: the same reads with a pread each instead of a copy out of the mapped
//   segment (JournalOptions::mapped_reads). BM_JournalStore_GetPut_Compressed and
//   BM_JournalStore_Get_Compressed: the same with values compressed with each segment's
//   dictionary (JournalOptions::dictionary_bytes), each record's payload its own (PayloadOf).
//   BM_Get_AtScale/records/journal: random hits over 10M records, RocksDB vs the journal store.
//   BM_JournalIndex_EraseSegment/keys: the index's sweep when segments are dropped.
//   BM_JournalStore_ApplyBatch/writes: one batch of new keys; per write, flat in the batch size.
//   BM_JournalStore_Open/records/saved: a restart's replay of the journal (saved:0), against a
//   load of the index saved at the close (saved:1), per record.
//   BM_JournalIndex_CopyTables/keys: what writers wait for while a save copies the index.
//   BM_Journal_FirstAppends: a new journal's first appends with a dictionary; max_append_us,
//   the longest one (its first segments are sealed early for better dictionaries).
//   BM_JournalStore_Update/given:1 vs /given:0: a completion's write given the version its Get
//   found, against one that looks the key up again.
//   BM_Journal_ReadSealed/open_files: reads across 32 sealed segments with every file kept open
//   (32) against one reopened on almost every read (1): the price of a closed segment's read.
//   BM_JournalStore_MoveSurvivors/needed_per_mille: moving the few records that never expire out
//   of otherwise ended segments, so that the segments can go.
//   BM_JournalIndex_Find/keys/hit: the journal's in-memory index (engine/src/journal_index.h)
//   holding `keys` keys, asked about keys it holds or not; its counters give the memory per key
//   and the candidates per lookup that belong to other keys (each would cost a read).
//   BM_Insert_New_Journal, BM_Insert_Duplicate_Journal, BM_Get_Hit_Journal: the engine under the
//   journal layout, same records, against the same raw baselines and the journal store's own
//   (BM_JournalStore_GetPut, BM_JournalStore_Get); with _Compressed, its values compressed
//   (EngineOptions::journal_dictionary_bytes).
//   BM_Insert_New_Windows/N, BM_Insert_Duplicate_Windows/N, BM_Get_Hit_Windows/N: the same on
//   the expiry-window layout with N live windows (docs/design.md, "Expiry windows"): a lookup
//   probes the default column family and each of the N windows, so against the same raw
//   baselines they price the extra probes.
// Both sides write with sync=false (Durability::kAsync): fsync cost is a property of the disk,
// measured separately (docs/performance.md); these measure the engine's own overhead.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>
#include <rocksdb/db.h>
#include <rocksdb/file_system.h>
#include <rocksdb/write_batch.h>

#include "anchored_clock.h"
#include "idem/engine.h"
#include "journal.h"
#include "journal_index.h"
#include "journal_store.h"
#include "key_codec.h"
#include "key_hash.h"
#include "record_codec.h"
#include "rocks_options.h"
#include "window_key_filter.h"

namespace idem {
namespace {

constexpr int kPreloaded = 200'000;  // keys present before timing (memtable + SSTs)
const std::string kNs = "bench";
const std::string kPayload(100, 'p');

std::string KeyOf(uint64_t i) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "order-%016llx-request-key", static_cast<unsigned long long>(i));
  return buf;
}

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "idem_microbench: %s\n", why.c_str());
  std::abort();
}

// An empty directory of this process's own under the system's temp dir.
std::string FreshDir(const std::string& name) {
  std::string dir =
      (std::filesystem::temp_directory_path() / (name + "_" + std::to_string(getpid()))).string();
  std::filesystem::remove_all(dir);
  return dir;
}

// The options of a benchmark engine: no fsync, no reclaimer thread.
EngineOptions BenchOptions(EngineOptions::Layout layout) {
  EngineOptions options;
  options.durability = Durability::kAsync;
  options.reclaim_interval_ms = 0;
  options.layout = layout;
  return options;
}

// Shared databases, opened once per process and preloaded identically. Under the leveled layout
// a raw RocksDB on the same options holds the same records, the floor of the engine's figures.
struct Fixture {
  std::string dir;
  std::unique_ptr<Engine> engine;
  std::unique_ptr<rocksdb::DB> raw;                   // the leveled layout's only
  std::atomic<uint64_t> next_new_key{1'000'000'000};  // never collides with preloaded keys

  explicit Fixture(EngineOptions::Layout layout, bool compressed = false) {
    const bool leveled = layout == EngineOptions::Layout::kLeveled;
    dir = FreshDir(leveled      ? "idem_microbench"
                   : compressed ? "idem_microbench_compressed"
                                : "idem_microbench_layout");
    EngineOptions options = BenchOptions(layout);
    if (compressed)
      options.journal_dictionary_bytes = EngineOptions::kDefaultJournalDictionaryBytes;
    // IDEM_MICROBENCH_MEMTABLE=skiplist measures RocksDB's default memtable (both sides).
    const char* memtable = std::getenv("IDEM_MICROBENCH_MEMTABLE");
    if (memtable != nullptr && std::string(memtable) == "skiplist") {
      options.memtable = EngineOptions::Memtable::kSkipList;
    }
    std::filesystem::create_directories(dir);
    auto opened = Engine::Open(dir + "/engine", options);
    if (!opened.ok()) Die("engine open: " + opened.status().ToString());
    engine = std::move(*opened);
    if (leveled) {
      rocksdb::DB* db = nullptr;
      rocksdb::Status s = rocksdb::DB::Open(MakeRocksOptions(engine->options()), dir + "/raw", &db);
      if (!s.ok()) Die("raw open: " + s.ToString());
      raw.reset(db);
    }
    Preload();
  }
  ~Fixture() {
    engine.reset();
    raw.reset();
    std::filesystem::remove_all(dir);
  }

  void Preload() {
    std::vector<std::string> keys;
    for (int start = 0; start < kPreloaded; start += 1000) {
      keys.clear();
      std::vector<Op> ops;
      for (int i = start; i < start + 1000; ++i) keys.push_back(KeyOf(i));
      for (const auto& k : keys)
        ops.push_back(Op::Insert({.ns = kNs, .key = k, .status = "DONE", .payload = kPayload}));
      std::vector<Result<OpResult>> results;
      if (!engine->Apply(ops, &results).ok()) std::abort();
      if (!raw) continue;
      rocksdb::WriteBatch batch;
      for (size_t j = 0; j < results.size(); ++j) {
        std::string value;
        EncodeRecord(*results[j]->record, &value);
        batch.Put(RecordKey(kNs, keys[j]), value);
      }
      if (!raw->Write(rocksdb::WriteOptions(), &batch).ok()) std::abort();
    }
    // Half in SSTs, the rest stays in the memtable, as in a store that has been running.
    if (!engine->Flush().ok() || (raw && !raw->Flush(rocksdb::FlushOptions()).ok())) std::abort();
    for (int i = kPreloaded; i < kPreloaded + 100'000; ++i) {
      std::string key = KeyOf(i);
      if (!engine->Insert({.ns = kNs, .key = key, .status = "DONE", .payload = kPayload}).ok())
        std::abort();
      if (!raw) continue;
      Record r;
      r.status = "DONE";
      r.payload = kPayload;
      std::string value;
      EncodeRecord(r, &value);
      if (!raw->Put(rocksdb::WriteOptions(), RecordKey(kNs, key), value).ok()) std::abort();
    }
  }
};

// Built on first use (thread-safe), destroyed at exit.
Fixture& F() {
  static const auto fixture = std::make_unique<Fixture>(EngineOptions::Layout::kLeveled);
  return *fixture;
}

constexpr int kHotSet = kPreloaded + 100'000;

std::string RecordValue() {
  Record r;
  r.status = "PENDING";
  r.payload = kPayload;
  r.version = 1;
  r.fence = 12345;
  std::string value;
  EncodeRecord(r, &value);
  return value;
}

void BM_RawRocksDB_GetPut(benchmark::State& state) {
  rocksdb::DB* db = F().raw.get();
  const std::string value = RecordValue();
  rocksdb::PinnableSlice got;
  for (auto _ : state) {
    std::string key = RecordKey(kNs, KeyOf(F().next_new_key.fetch_add(1)));
    got.Reset();
    rocksdb::Status s = db->Get(rocksdb::ReadOptions(), db->DefaultColumnFamily(), key, &got);
    if (!s.IsNotFound()) state.SkipWithError("expected a miss");
    if (!db->Put(rocksdb::WriteOptions(), key, value).ok()) state.SkipWithError("put failed");
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_RawRocksDB_Get(benchmark::State& state) {
  rocksdb::DB* db = F().raw.get();
  uint64_t i = state.thread_index() * 7919;
  rocksdb::PinnableSlice got;
  for (auto _ : state) {
    std::string key = RecordKey(kNs, KeyOf((i += 104729) % kHotSet));
    got.Reset();
    if (!db->Get(rocksdb::ReadOptions(), db->DefaultColumnFamily(), key, &got).ok()) {
      state.SkipWithError("expected a hit");
    }
  }
  state.SetItemsProcessed(state.iterations());
}

// A response-like payload that names its record, so that compressed records differ (a payload
// repeated verbatim would compress to almost nothing).
std::string PayloadOf(uint64_t i) {
  char head[64];
  std::snprintf(head, sizeof head, "{\"ref\":\"%016llx\",\"code\":201,\"body\":\"",
                static_cast<unsigned long long>(i * 0x9e3779b97f4a7c15ULL));
  std::string payload(head);
  payload.resize(kPayload.size(), 'p');
  return payload;
}

// The journal store, preloaded with the raw database's records (same keys and values); its reads
// copy out of mapped segments as the engine's do, or with `mapped_reads` off pread each record.
// With `dictionary_bytes`, values are stored compressed (JournalOptions::dictionary_bytes), and
// each record's payload names it (PayloadOf).
struct JournalFixture {
  std::string dir = FreshDir("idem_microbench_journal");
  ManualClock clock;
  std::unique_ptr<journal::JournalStore> store;
  std::atomic<uint64_t> next_new_key{2'000'000'000};

  explicit JournalFixture(bool mapped_reads, size_t dictionary_bytes = 0) {
    journal::JournalOptions options;
    options.mapped_reads = mapped_reads;
    options.dictionary_bytes = dictionary_bytes;
    auto opened =
        journal::JournalStore::Open(rocksdb::FileSystem::Default().get(), dir, options, &clock, 0);
    if (!opened.ok()) Die("journal open: " + opened.status().ToString());
    store = std::move(*opened);
    Record r;
    r.status = "DONE";
    r.payload = kPayload;
    std::string value;
    EncodeRecord(r, &value);
    std::vector<std::string> keys, values;
    std::vector<journal::JournalStore::Write> writes;
    for (int start = 0; start < kPreloaded + 100'000; start += 1000) {
      keys.clear();
      values.clear();
      writes.clear();
      for (int i = start; i < start + 1000; ++i) {
        keys.push_back(RecordKey(kNs, KeyOf(i)));
        if (dictionary_bytes > 0) {
          r.payload = PayloadOf(i);
          values.emplace_back();
          EncodeRecord(r, &values.back());
        }
      }
      for (size_t i = 0; i < keys.size(); ++i) {
        writes.push_back({journal::OpType::kPut, keys[i], values.empty() ? value : values[i], 1});
      }
      if (!store->Apply(writes).ok()) std::abort();
    }
  }
  ~JournalFixture() {
    store.reset();
    std::filesystem::remove_all(dir);
  }
};

// Compressed: mapped, with the engine's usual dictionary size.
JournalFixture& JCompressed() {
  static const auto fixture =
      std::make_unique<JournalFixture>(true, EngineOptions::kDefaultJournalDictionaryBytes);
  return *fixture;
}

JournalFixture& J(bool mapped_reads = true) {
  if (mapped_reads) {
    static const auto fixture = std::make_unique<JournalFixture>(true);
    return *fixture;
  }
  static const auto fixture = std::make_unique<JournalFixture>(false);
  return *fixture;
}

void JournalStoreGetPut(benchmark::State& state, JournalFixture& fixture, bool payload_per_key) {
  journal::JournalStore& store = *fixture.store;
  std::string value = RecordValue();
  Record r;
  r.status = "DONE";
  for (auto _ : state) {
    const uint64_t n = fixture.next_new_key.fetch_add(1);
    std::string key = RecordKey(kNs, KeyOf(n));
    if (payload_per_key) {
      r.payload = PayloadOf(n);
      value.clear();
      EncodeRecord(r, &value);
    }
    auto got = store.Get(key);
    if (!got.ok() || *got) state.SkipWithError("expected a miss");
    const journal::JournalStore::Write put{journal::OpType::kPut, key, value, 1};
    if (!store.Apply({&put, 1}).ok()) state.SkipWithError("apply failed");
  }
  state.SetItemsProcessed(state.iterations());
}
void BM_JournalStore_GetPut(benchmark::State& state) { JournalStoreGetPut(state, J(), false); }
void BM_JournalStore_GetPut_Compressed(benchmark::State& state) {
  JournalStoreGetPut(state, JCompressed(), true);
}

void JournalStoreGet(benchmark::State& state, journal::JournalStore& store) {
  uint64_t i = state.thread_index() * 7919;
  for (auto _ : state) {
    std::string key = RecordKey(kNs, KeyOf((i += 104729) % kHotSet));
    auto got = store.Get(key);
    if (!got.ok() || !*got) state.SkipWithError("expected a hit");
  }
  state.SetItemsProcessed(state.iterations());
}
void BM_JournalStore_Get(benchmark::State& state) { JournalStoreGet(state, *J().store); }
void BM_JournalStore_Get_Pread(benchmark::State& state) {
  JournalStoreGet(state, *J(/*mapped_reads=*/false).store);
}
void BM_JournalStore_Get_Compressed(benchmark::State& state) {
  JournalStoreGet(state, *JCompressed().store);
}

// One Apply of `writes` new keys, as a client's batch of inserts arrives (up to max_batch_ops):
// the time per write should not grow with the batch.
void BM_JournalStore_ApplyBatch(benchmark::State& state) {
  JournalFixture& fixture = J();
  const auto size = static_cast<size_t>(state.range(0));
  const std::string value = RecordValue();
  std::vector<std::string> keys(size);
  std::vector<journal::JournalStore::Write> writes(size);
  for (auto _ : state) {
    state.PauseTiming();
    for (size_t i = 0; i < size; ++i) {
      keys[i] = RecordKey(kNs, KeyOf(fixture.next_new_key.fetch_add(1)));
      writes[i] = {journal::OpType::kPut, keys[i], value, 1};
    }
    state.ResumeTiming();
    if (!fixture.store->Apply(writes).ok()) state.SkipWithError("apply failed");
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(size));
}

// A Get hit, then a new version of the key, as a completion does: with `given` 1 the write is
// given the version the Get found (JournalStore::Write::found), with 0 it looks the key up again.
void BM_JournalStore_Update(benchmark::State& state) {
  journal::JournalStore& store = *J().store;
  const bool given = state.range(0) != 0;
  const std::string value = RecordValue();
  uint64_t i = 7919;
  for (auto _ : state) {
    std::string key = RecordKey(kNs, KeyOf((i += 104729) % kHotSet));
    auto got = store.Get(key);
    if (!got.ok() || !*got) state.SkipWithError("expected a hit");
    journal::JournalStore::Write put{journal::OpType::kPut, key, value, 1};
    if (given) put.found = &**got;
    if (!store.Apply({&put, 1}).ok()) state.SkipWithError("apply failed");
  }
  state.SetItemsProcessed(state.iterations());
}

// Moving the survivors out of full 64 MiB segments in which `needed` per mille of the records
// never expire and the rest have ended: the time per segment freed, and the bytes written again
// per byte freed (`moved_per_freed`).
void BM_JournalStore_MoveSurvivors(benchmark::State& state) {
  const uint64_t needed_per_mille = static_cast<uint64_t>(state.range(0));
  const std::string value = RecordValue();
  ManualClock clock;
  uint64_t freed = 0, moved = 0, segments = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const std::string dir = FreshDir("idem_microbench_move");
    auto opened = journal::JournalStore::Open(rocksdb::FileSystem::Default().get(), dir,
                                              journal::JournalOptions(), &clock, 0);
    if (!opened.ok()) Die("journal open: " + opened.status().ToString());
    std::unique_ptr<journal::JournalStore> store = std::move(*opened);
    std::vector<std::string> keys;
    std::vector<journal::JournalStore::Write> writes;
    for (uint64_t i = 0; store->journal().Segments().size() < 3; i += 128) {
      keys.clear();
      writes.clear();
      for (uint64_t j = i; j < i + 128; ++j) keys.push_back(RecordKey(kNs, KeyOf(j)));
      for (uint64_t j = 0; j < keys.size(); ++j) {
        const bool lives = (i + j) % 1000 < needed_per_mille;
        writes.push_back({journal::OpType::kPut, keys[j], value,
                          lives ? std::numeric_limits<int64_t>::max() : 1});
      }
      if (!store->Apply(writes).ok()) Die("journal apply failed");
    }
    if (!store->Sync().ok()) Die("journal sync failed");  // as group commits would have
    state.ResumeTiming();
    auto report = store->MoveSurvivors(10, {.max_needed_fraction = 1, .min_stay_ms = 0});
    if (!report.ok()) Die("move: " + report.status().ToString());
    state.PauseTiming();
    freed += report->bytes_freed;
    moved += report->bytes_moved;
    segments += report->segments;
    store.reset();
    std::filesystem::remove_all(dir);
    state.ResumeTiming();
  }
  state.SetBytesProcessed(static_cast<int64_t>(freed));
  state.counters["segments"] = static_cast<double>(segments) / state.iterations();
  state.counters["moved_per_freed"] = freed ? static_cast<double>(moved) / freed : 0;
}

// Reads of one ~150-byte record each, at random across 32 sealed and synced segments of 1 MiB,
// with `open_files` of them allowed to keep their files open: 32 keeps every file open, 1 opens
// and closes one on almost every read (JournalOptions::max_open_sealed_files).
void BM_Journal_ReadSealed(benchmark::State& state) {
  constexpr size_t kSegments = 32;
  const std::string dir = FreshDir("idem_microbench_journal_read");
  ManualClock clock;
  journal::JournalOptions options;
  options.segment_bytes = uint64_t{1} << 20;
  options.max_open_sealed_files = static_cast<size_t>(state.range(0));
  options.prepare_in_background = false;
  auto opened =
      journal::Journal::Open(rocksdb::FileSystem::Default().get(), dir, options, &clock, nullptr);
  if (!opened.ok()) Die("journal open: " + opened.status().ToString());
  std::unique_ptr<journal::Journal> j = std::move(*opened);
  const std::string value = RecordValue();
  std::vector<journal::Journal::Location> records;
  for (uint64_t i = 0; j->Segments().size() <= kSegments; ++i) {
    const std::string key = RecordKey(kNs, KeyOf(i));
    journal::EntryBuilder entry;
    if (!entry.Add(journal::OpView{journal::OpType::kPut, 1, key, value}).ok()) Die("entry");
    const uint32_t offset = entry.offsets()[0];
    auto at = j->Append(&entry);
    if (!at.ok()) Die("journal append: " + at.status().ToString());
    records.push_back({at->segment, at->offset + offset});
  }
  if (!j->Sync().ok()) Die("journal sync failed");
  std::string out;
  uint64_t i = 0;
  for (auto _ : state) {
    const journal::Journal::Location at = records[(i += 104729) % records.size()];
    if (!j->Read(at, journal::JournalStore::kReadAhead, &out).ok()) {
      state.SkipWithError("read failed");
    }
  }
  state.SetItemsProcessed(state.iterations());
  j.reset();
  std::filesystem::remove_all(dir);
}

// A new journal with the engine's usual dictionary size, its preparer running: the first 20,000
// appends of one record each, as a new database's first writes. Its first segments are sealed
// early, three times, for a dictionary trained on more samples; the counter max_append_us is the
// longest append (with the writer training the dictionary itself, 20-50 ms each time).
void BM_Journal_FirstAppends(benchmark::State& state) {
  constexpr int kAppends = 20'000;
  ManualClock clock;
  journal::JournalOptions options;
  options.dictionary_bytes = EngineOptions::kDefaultJournalDictionaryBytes;
  Record r;
  r.status = "DONE";
  std::vector<std::string> keys, values;
  for (int i = 0; i < kAppends; ++i) {
    keys.push_back(RecordKey(kNs, KeyOf(i)));
    r.payload = PayloadOf(i);
    values.emplace_back();
    EncodeRecord(r, &values.back());
  }
  double max_us = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const std::string dir = FreshDir("idem_microbench_journal_first");
    auto opened =
        journal::Journal::Open(rocksdb::FileSystem::Default().get(), dir, options, &clock, nullptr);
    if (!opened.ok()) Die("journal open: " + opened.status().ToString());
    state.ResumeTiming();
    for (int i = 0; i < kAppends; ++i) {
      journal::EntryBuilder entry;
      if (!entry.Add(journal::OpView{journal::OpType::kPut, 1, keys[i], values[i]}).ok()) {
        Die("entry");
      }
      const auto started = std::chrono::steady_clock::now();
      if (!(*opened)->Append(&entry).ok()) state.SkipWithError("append failed");
      max_us = std::max(max_us, std::chrono::duration<double, std::micro>(
                                    std::chrono::steady_clock::now() - started)
                                    .count());
    }
    state.PauseTiming();
    opened->reset();
    std::filesystem::remove_all(dir);
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * kAppends);
  state.counters["max_append_us"] = max_us;
}

// Opening a journal store of `records` records written in batches of 128, each about as large
// as a completed record: what a restart replays, or (saved) loads from the index the close saved.
void BM_JournalStore_Open(benchmark::State& state) {
  const uint64_t records = static_cast<uint64_t>(state.range(0));
  const bool saved = state.range(1) != 0;
  const std::string dir = FreshDir("idem_microbench_journal_open");
  ManualClock clock;
  const std::string value = RecordValue();
  {
    auto opened = journal::JournalStore::Open(rocksdb::FileSystem::Default().get(), dir,
                                              journal::JournalOptions(), &clock, 0);
    if (!opened.ok()) Die("journal open: " + opened.status().ToString());
    std::vector<std::string> keys;
    std::vector<journal::JournalStore::Write> writes;
    for (uint64_t start = 0; start < records; start += 128) {
      keys.clear();
      writes.clear();
      for (uint64_t i = start; i < std::min(records, start + 128); ++i) {
        keys.push_back(RecordKey(kNs, KeyOf(i * 2654435761u)));
      }
      for (const auto& k : keys) writes.push_back({journal::OpType::kPut, k, value, 1});
      if (!(*opened)->Apply(writes).ok()) Die("journal apply failed");
    }
    if (saved && !(*opened)->SaveIndex().ok()) Die("journal save failed");
  }
  for (auto _ : state) {
    auto opened = journal::JournalStore::Open(rocksdb::FileSystem::Default().get(), dir,
                                              journal::JournalOptions(), &clock, 0);
    if (!opened.ok() || (*opened)->records() != records ||
        (*opened)->opened().loaded_saved_index != saved) {
      state.SkipWithError("open failed");
    }
  }
  state.counters["per_record"] =
      benchmark::Counter(static_cast<double>(records) * state.iterations(),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  std::filesystem::remove_all(dir);
}

// Random hits over `records` records (the size of bench/compare's completion phase), from raw
// RocksDB under the engine's options (side 0: preloaded, flushed, compactions finished) and from
// the journal store (side 1). Above the block cache, a RocksDB hit reads, checks and
// decompresses a data block; a journal hit reads the record.
void BM_Get_AtScale(benchmark::State& state) {
  const uint64_t records = static_cast<uint64_t>(state.range(0));
  const bool journal_side = state.range(1) != 0;
  const std::string dir = FreshDir("idem_microbench_scale");
  const std::string value = RecordValue();
  ManualClock clock;
  // Outlives the database: its compaction filter reads the clock.
  EngineOptions engine_options = BenchOptions(EngineOptions::Layout::kLeveled);
  engine_options.clock = std::make_shared<SystemClock>();
  std::unique_ptr<rocksdb::DB> db;
  std::unique_ptr<journal::JournalStore> store;
  if (journal_side) {
    auto opened = journal::JournalStore::Open(rocksdb::FileSystem::Default().get(), dir,
                                              journal::JournalOptions(), &clock, 0);
    if (!opened.ok()) Die("journal open: " + opened.status().ToString());
    store = std::move(*opened);
  } else {
    rocksdb::DB* raw = nullptr;
    rocksdb::Options options = MakeRocksOptions(engine_options);
    options.create_if_missing = true;
    if (rocksdb::Status s = rocksdb::DB::Open(options, dir, &raw); !s.ok()) Die(s.ToString());
    db.reset(raw);
  }
  std::vector<std::string> keys;
  for (uint64_t start = 0; start < records; start += 1000) {
    keys.clear();
    for (uint64_t i = start; i < std::min(records, start + 1000); ++i) {
      keys.push_back(RecordKey(kNs, KeyOf(i)));
    }
    if (journal_side) {
      std::vector<journal::JournalStore::Write> writes;
      for (const auto& k : keys) writes.push_back({journal::OpType::kPut, k, value, 1});
      if (!store->Apply(writes).ok()) Die("journal apply failed");
    } else {
      rocksdb::WriteBatch batch;
      for (const auto& k : keys) batch.Put(k, value);
      if (!db->Write(rocksdb::WriteOptions(), &batch).ok()) Die("rocksdb write failed");
    }
  }
  if (!journal_side) {
    if (!db->Flush(rocksdb::FlushOptions()).ok()) Die("flush failed");
    uint64_t pending = 1;
    uint64_t running = 1;
    while (pending > 0 || running > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      db->GetIntProperty(rocksdb::DB::Properties::kCompactionPending, &pending);
      db->GetIntProperty(rocksdb::DB::Properties::kNumRunningCompactions, &running);
    }
  }
  uint64_t i = 0;
  rocksdb::PinnableSlice got;
  for (auto _ : state) {
    const std::string key = RecordKey(kNs, KeyOf((i += 2654435761u) % records));
    if (journal_side) {
      auto found = store->Get(key);
      if (!found.ok() || !*found) state.SkipWithError("expected a hit");
    } else {
      got.Reset();
      if (!db->Get(rocksdb::ReadOptions(), db->DefaultColumnFamily(), key, &got).ok()) {
        state.SkipWithError("expected a hit");
      }
    }
  }
  state.SetItemsProcessed(state.iterations());
  got.Reset();  // it may pin a block of the database
  store.reset();
  db.reset();
  std::filesystem::remove_all(dir);
}

void InsertNew(benchmark::State& state, Fixture& fixture) {
  for (auto _ : state) {
    std::string key = KeyOf(fixture.next_new_key.fetch_add(1));
    auto r =
        fixture.engine->Insert({.ns = kNs, .key = key, .status = "PENDING", .payload = kPayload});
    if (!r.ok() || r->outcome != Outcome::kInserted) state.SkipWithError("insert failed");
  }
  state.SetItemsProcessed(state.iterations());
}

void InsertDuplicate(benchmark::State& state, Fixture& fixture) {
  uint64_t i = state.thread_index() * 7919;
  for (auto _ : state) {
    std::string key = KeyOf((i += 104729) % kHotSet);
    auto r =
        fixture.engine->Insert({.ns = kNs, .key = key, .status = "PENDING", .payload = kPayload});
    if (!r.ok() || r->outcome != Outcome::kExists) state.SkipWithError("expected EXISTS");
  }
  state.SetItemsProcessed(state.iterations());
}

void GetHit(benchmark::State& state, Fixture& fixture) {
  uint64_t i = state.thread_index() * 7919;
  for (auto _ : state) {
    std::string key = KeyOf((i += 104729) % kHotSet);
    auto r = fixture.engine->Get({.ns = kNs, .key = key});
    if (!r.ok() || r->outcome != Outcome::kFound) state.SkipWithError("expected FOUND");
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_Insert_New(benchmark::State& state) { InsertNew(state, F()); }
void BM_Insert_Duplicate(benchmark::State& state) { InsertDuplicate(state, F()); }
void BM_Get_Hit(benchmark::State& state) { GetHit(state, F()); }

// The journal layout (EngineOptions::Layout::kJournal) with the same records: a lookup is one
// probe of the in-memory index and one read of the record from its segment (page cache).
Fixture& FJ() {
  static const auto fixture = std::make_unique<Fixture>(EngineOptions::Layout::kJournal);
  return *fixture;
}
void BM_Insert_New_Journal(benchmark::State& state) { InsertNew(state, FJ()); }
void BM_Insert_Duplicate_Journal(benchmark::State& state) { InsertDuplicate(state, FJ()); }
void BM_Get_Hit_Journal(benchmark::State& state) { GetHit(state, FJ()); }
// The same with values compressed (EngineOptions::journal_dictionary_bytes).
Fixture& FJCompressed() {
  static const auto fixture =
      std::make_unique<Fixture>(EngineOptions::Layout::kJournal, /*compressed=*/true);
  return *fixture;
}
void BM_Insert_New_Journal_Compressed(benchmark::State& state) { InsertNew(state, FJCompressed()); }
void BM_Insert_Duplicate_Journal_Compressed(benchmark::State& state) {
  InsertDuplicate(state, FJCompressed());
}

// The expiry-window layout with `windows` live windows and the same data as Fixture: 200k keys
// flushed, 100k more in the memtables, key i in window i % windows, so every window has a table
// file and a memtable as in a store that has been running for a while. A key's window is chosen
// by its TTL: TTL j ends in the middle of the j-th window after the current one (on the system
// clock, as Fixture), so the windows stay put for half a window (30 min) of benchmarking.
struct WindowsFixture {
  std::string dir;
  std::unique_ptr<Engine> engine;
  std::vector<std::chrono::milliseconds> ttls;  // one per window
  std::atomic<uint64_t> next_new_key{2'000'000'000};

  explicit WindowsFixture(int windows) {
    dir = FreshDir("idem_microbench_windows");
    const EngineOptions options = BenchOptions(EngineOptions::Layout::kExpiryWindows);
    const int64_t w = options.expiry_window_ms;
    const int64_t now = SystemClock::Default()->NowMillis();
    for (int j = 0; j < windows; ++j) {
      ttls.emplace_back((now / w + 1 + j) * w + w / 2 - now);
    }
    std::filesystem::create_directories(dir);
    auto opened = Engine::Open(dir + "/engine", options);
    if (!opened.ok()) Die("windows engine open: " + opened.status().ToString());
    engine = std::move(*opened);
    Preload();
  }
  ~WindowsFixture() {
    engine.reset();
    std::filesystem::remove_all(dir);
  }

  std::chrono::milliseconds TtlOf(uint64_t key) const { return ttls[key % ttls.size()]; }

  void Preload() {
    std::vector<std::string> keys;
    for (int start = 0; start < kPreloaded; start += 1000) {
      keys.clear();
      std::vector<Op> ops;
      for (int i = start; i < start + 1000; ++i) keys.push_back(KeyOf(i));
      for (int i = start; i < start + 1000; ++i) {
        ops.push_back(Op::Insert({.ns = kNs,
                                  .key = keys[i - start],
                                  .status = "DONE",
                                  .payload = kPayload,
                                  .ttl = TtlOf(i)}));
      }
      std::vector<Result<OpResult>> results;
      if (!engine->Apply(ops, &results).ok()) Die("windows preload");
    }
    if (!engine->Flush().ok()) Die("windows flush");
    for (int i = kPreloaded; i < kPreloaded + 100'000; ++i) {
      auto r = engine->Insert(
          {.ns = kNs, .key = KeyOf(i), .status = "DONE", .payload = kPayload, .ttl = TtlOf(i)});
      if (!r.ok()) Die("windows preload");
    }
    auto stats = engine->Stats();
    if (!stats.ok() || stats->expiry_windows != ttls.size()) {
      Die("expected " + std::to_string(ttls.size()) + " expiry windows after the preload");
    }
  }
};

// One windows database at a time (each is a preload of 300k keys): the benchmarks are
// registered grouped by window count, so each count is built once.
WindowsFixture& Windows(int windows) {
  static std::unique_ptr<WindowsFixture> fixture;
  static int built = 0;
  static const bool registered = [] {
    std::atexit([] { fixture.reset(); });
    return true;
  }();
  (void)registered;
  if (built != windows) {
    fixture.reset();
    fixture = std::make_unique<WindowsFixture>(windows);
    built = windows;
  }
  return *fixture;
}

// New keys go round the windows, as the inserts of namespaces with different TTLs would.
void BM_Insert_New_Windows(benchmark::State& state) {
  WindowsFixture& w = Windows(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    const uint64_t id = w.next_new_key.fetch_add(1);
    std::string key = KeyOf(id);
    auto r = w.engine->Insert(
        {.ns = kNs, .key = key, .status = "PENDING", .payload = kPayload, .ttl = w.TtlOf(id)});
    if (!r.ok() || r->outcome != Outcome::kInserted) state.SkipWithError("insert failed");
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_Insert_Duplicate_Windows(benchmark::State& state) {
  WindowsFixture& w = Windows(static_cast<int>(state.range(0)));
  uint64_t i = 0;
  for (auto _ : state) {
    const uint64_t id = (i += 104729) % kHotSet;
    std::string key = KeyOf(id);
    auto r = w.engine->Insert(
        {.ns = kNs, .key = key, .status = "PENDING", .payload = kPayload, .ttl = w.TtlOf(id)});
    if (!r.ok() || r->outcome != Outcome::kExists) state.SkipWithError("expected EXISTS");
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_Get_Hit_Windows(benchmark::State& state) {
  WindowsFixture& w = Windows(static_cast<int>(state.range(0)));
  uint64_t i = 0;
  for (auto _ : state) {
    std::string key = KeyOf((i += 104729) % kHotSet);
    auto r = w.engine->Get({.ns = kNs, .key = key});
    if (!r.ok() || r->outcome != Outcome::kFound) state.SkipWithError("expected FOUND");
  }
  state.SetItemsProcessed(state.iterations());
}

// One window whose records were flushed in `files` batches, as a window written over many
// flushes is, never merged: a hit probes the window's table files newest first, so against
// BM_Get_Hit_WindowFiles/1/* this prices the files a window keeps before they are merged
// (EngineOptions::expiry_window_merge_files). Keys in random order put every key range in every
// file; in time order (`ordered`: UUIDv7, ULIDs, sequence numbers) each file holds its own range
// and RocksDB skips the others by their key range.
struct WindowFilesFixture {
  std::string dir;
  std::unique_ptr<Engine> engine;
  uint64_t table_files = 0;

  WindowFilesFixture(int files, bool ordered) {
    dir = FreshDir("idem_microbench_window_files");
    EngineOptions options = BenchOptions(EngineOptions::Layout::kExpiryWindows);
    options.expiry_window_merge_files = 0;
    const int64_t w = options.expiry_window_ms;
    const int64_t now = SystemClock::Default()->NowMillis();
    const std::chrono::milliseconds ttl((now / w + 1) * w + w / 2 - now);
    std::filesystem::create_directories(dir);
    auto opened = Engine::Open(dir + "/engine", options);
    if (!opened.ok()) Die("window files engine open: " + opened.status().ToString());
    engine = std::move(*opened);
    // File f holds keys i with i % files == f (random order: each file spans the key range),
    // or the f-th run of consecutive keys (time order).
    const int per_file = kPreloaded / files;
    const auto key_index = [&](int f, int j) { return ordered ? f * per_file + j : j * files + f; };
    for (int f = 0; f < files; ++f) {
      for (int start = 0; start < per_file; start += 1000) {
        std::vector<std::string> keys;  // the ops borrow them
        for (int j = start; j < std::min(start + 1000, per_file); ++j) {
          keys.push_back(KeyOf(key_index(f, j)));
        }
        std::vector<Op> ops;
        for (const std::string& key : keys) {
          ops.push_back(Op::Insert(
              {.ns = kNs, .key = key, .status = "DONE", .payload = kPayload, .ttl = ttl}));
        }
        std::vector<Result<OpResult>> results;
        if (!engine->Apply(ops, &results).ok()) Die("window files preload");
      }
      if (!engine->Flush().ok()) Die("window files flush");
    }
    if (!engine->WaitForBackgroundWork(600'000).ok()) Die("window files compaction");
    auto report = engine->ReclaimExpired();
    if (!report.ok()) Die("window files reclaim");
    table_files = report->window_files_max;
  }
  ~WindowFilesFixture() {
    engine.reset();
    std::filesystem::remove_all(dir);
  }
};

// One at a time, built once per file count (Google Benchmark calls a case several times).
WindowFilesFixture& WindowFiles(int files, bool ordered) {
  static std::unique_ptr<WindowFilesFixture> fixture;
  static std::pair<int, bool> built;
  static const bool registered = [] {
    std::atexit([] { fixture.reset(); });
    return true;
  }();
  (void)registered;
  if (built != std::pair(files, ordered)) {
    fixture.reset();
    fixture = std::make_unique<WindowFilesFixture>(files, ordered);
    built = {files, ordered};
  }
  return *fixture;
}

void BM_Get_Hit_WindowFiles(benchmark::State& state) {
  const int files = static_cast<int>(state.range(0));
  WindowFilesFixture& w = WindowFiles(files, state.range(1) != 0);
  const int present = kPreloaded / files * files;
  uint64_t i = 0;
  for (auto _ : state) {
    std::string key = KeyOf((i += 104729) % present);
    auto r = w.engine->Get({.ns = kNs, .key = key});
    if (!r.ok() || r->outcome != Outcome::kFound) state.SkipWithError("expected FOUND");
  }
  state.counters["table_files"] = static_cast<double>(w.table_files);
  state.SetItemsProcessed(state.iterations());
}

// A window's key filter grown from its smallest first segment to `keys` keys (a window that took
// far more records than the one before it), asked about keys it holds: the `recent` tenth of
// them (a completion of a record just written) or any of them.
void BM_WindowKeyFilter_Hit(benchmark::State& state) {
  const uint64_t keys = static_cast<uint64_t>(state.range(0));
  const bool recent = state.range(1) != 0;
  auto hash = [](uint64_t i) { return WindowKeyFilter::Hash(std::to_string(i)); };
  WindowKeyFilter filter(0, {}, /*ready=*/true);
  for (uint64_t i = 0; i < keys; ++i) filter.Add(hash(i));
  const uint64_t first = recent ? keys - keys / 10 : 0;
  std::vector<uint64_t> probes;
  for (uint64_t i = 0; i < 1 << 16; ++i) probes.push_back(hash(first + i * 7919 % (keys - first)));
  size_t i = 0;
  for (auto _ : state) {
    if (!filter.MayContain(probes[i++ & (probes.size() - 1)]))
      state.SkipWithError("false negative");
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_JournalIndex_Find(benchmark::State& state) {
  const uint64_t keys = static_cast<uint64_t>(state.range(0));
  const bool hit = state.range(1) != 0;
  auto hash = [](uint64_t i) { return KeyHash("key-" + std::to_string(i)); };
  auto location = [](uint64_t i) {
    return journal::JournalIndex::Location{static_cast<uint32_t>(i >> 20),
                                           static_cast<uint32_t>((i & 0xFFFFF) * 8)};
  };
  journal::JournalIndex index;
  for (uint64_t i = 0; i < keys; ++i) {
    if (!index.Insert(hash(i), location(i))) {
      state.SkipWithError("index full");
      return;
    }
  }
  std::vector<std::pair<uint64_t, uint64_t>> probes;  // hash, key number
  for (uint64_t i = 0; i < 1 << 16; ++i) {
    const uint64_t key = i * 7919 % keys;
    probes.emplace_back(hash(hit ? key : keys + key), key);
  }
  std::vector<journal::JournalIndex::Location> found;
  uint64_t lookups = 0;
  uint64_t others = 0;  // candidates that are not the key's own entry
  size_t i = 0;
  for (auto _ : state) {
    const auto& [h, key] = probes[i++ & (probes.size() - 1)];
    found.clear();
    index.Find(h, &found);
    ++lookups;
    others += found.size();
    if (hit) {
      if (std::find(found.begin(), found.end(), location(key)) == found.end()) {
        state.SkipWithError("a key's own entry was not found");
        break;
      }
      --others;
    }
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["bytes_per_key"] = static_cast<double>(index.MemoryBytes()) / keys;
  state.counters["other_candidates"] = static_cast<double>(others) / std::max<uint64_t>(lookups, 1);
}

// What a drop costs the index: one sweep over every slot removing the entries of a segment
// that holds 1/20 of `keys` keys.
void BM_JournalIndex_EraseSegment(benchmark::State& state) {
  const uint64_t keys = static_cast<uint64_t>(state.range(0));
  journal::JournalIndex index;
  for (uint64_t i = 0; i < keys; ++i) {
    const uint32_t segment = static_cast<uint32_t>(i % 20);
    if (!index.Insert(KeyHash("key-" + std::to_string(i)), {segment, 8})) {
      state.SkipWithError("index full");
      return;
    }
  }
  uint32_t segment = 0;
  for (auto _ : state) {
    if (index.EraseSegments({segment++}) == 0) state.SkipWithError("nothing erased");
  }
  state.counters["slots"] = static_cast<double>(index.MemoryBytes() / 8);
}

// A save's copy of an index of `keys` keys (JournalIndex::CopyTable of every shard into tables
// sized beforehand, as JournalStore::SaveIndex copies it), during which the store's writers wait.
void BM_JournalIndex_CopyTables(benchmark::State& state) {
  const uint64_t keys = static_cast<uint64_t>(state.range(0));
  journal::JournalIndex index;
  for (uint64_t i = 0; i < keys; ++i) {
    if (!index.Insert(KeyHash("key-" + std::to_string(i)), {static_cast<uint32_t>(i % 20), 8})) {
      state.SkipWithError("index full");
      return;
    }
  }
  for (auto _ : state) {
    state.PauseTiming();
    std::vector<std::vector<uint64_t>> tables(journal::JournalIndex::kShards);
    for (size_t shard = 0; shard < tables.size(); ++shard) {
      tables[shard].resize(index.TableSlots(shard));
    }
    state.ResumeTiming();
    for (size_t shard = 0; shard < tables.size(); ++shard) index.CopyTable(shard, &tables[shard]);
    benchmark::DoNotOptimize(tables.data());
  }
  state.counters["per_key"] =
      benchmark::Counter(static_cast<double>(keys) * state.iterations(),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_CompareAndSet(benchmark::State& state) {
  // The state-machine completion: WHERE status IN (DONE, SUCCEEDED) SET status = SUCCEEDED,
  // payload.
  Engine& engine = *F().engine;
  uint64_t i = state.thread_index() * 7919;
  Condition when{{"DONE", "SUCCEEDED"}, {}, {}};
  Update set{"SUCCEEDED", kPayload, {}};
  for (auto _ : state) {
    std::string key = KeyOf((i += 104729) % kHotSet);
    auto r = engine.CompareAndSet({.ns = kNs, .key = key, .condition = when, .update = set});
    if (!r.ok() || r->outcome != Outcome::kApplied) state.SkipWithError("expected APPLIED");
  }
  state.SetItemsProcessed(state.iterations());
}

// Times one Apply of state.range(0) ops per iteration (make_op builds op j and owns its key in
// *key, outside the timing) and reports the time per item.
template <typename MakeOp>
void TimeApplyBatches(benchmark::State& state, MakeOp make_op) {
  Engine& engine = *F().engine;
  const size_t batch = static_cast<size_t>(state.range(0));
  std::vector<std::string> keys(batch);
  std::vector<Op> ops(batch);
  std::vector<Result<OpResult>> results;
  for (auto _ : state) {
    state.PauseTiming();
    for (size_t j = 0; j < batch; ++j) ops[j] = make_op(&keys[j]);
    state.ResumeTiming();
    if (!engine.Apply(ops, &results).ok()) state.SkipWithError("apply failed");
  }
  state.SetItemsProcessed(state.iterations() * batch);
  state.counters["per_item"] =
      benchmark::Counter(static_cast<double>(state.iterations() * batch),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// A group commit of N new keys. Per item, comparable with BM_Insert_New.
void BM_Apply_Insert(benchmark::State& state) {
  TimeApplyBatches(state, [](std::string* key) {
    *key = KeyOf(F().next_new_key.fetch_add(1));
    return Op::Insert({.ns = kNs, .key = *key, .status = "PENDING", .payload = kPayload});
  });
}

// The same with keys in no order (UUID-like), as real idempotency keys arrive: every insert
// lands somewhere else in the memtable.
void BM_Apply_InsertRandom(benchmark::State& state) {
  TimeApplyBatches(state, [](std::string* key) {
    uint64_t x = F().next_new_key.fetch_add(1) * 0x9e3779b97f4a7c15ULL;  // odd: a bijection
    *key = KeyOf(x ^ (x >> 29));
    return Op::Insert({.ns = kNs, .key = *key, .status = "PENDING", .payload = kPayload});
  });
}

// A group commit of N completions on random existing keys (what the server applies for N
// clients' compare-and-sets in one loop turn). Per item, comparable with BM_CompareAndSet.
void BM_Apply_CompareAndSet(benchmark::State& state) {
  const Condition when{{"DONE", "SUCCEEDED"}, {}, {}};
  const Update set{"SUCCEEDED", kPayload, {}};
  uint64_t i = 0;
  TimeApplyBatches(state, [&](std::string* key) {
    *key = KeyOf((i += 104729) % kHotSet);
    return Op::CompareAndSet({.ns = kNs, .key = *key, .condition = when, .update = set});
  });
}

void BM_Clock_Wall(benchmark::State& state) {
  const std::shared_ptr<Clock> clock = SystemClock::Default();
  for (auto _ : state) benchmark::DoNotOptimize(clock->NowMillis());
}

void BM_Clock_Engine(benchmark::State& state) {
  static AnchoredClock clock(SystemClock::Default(), MonotonicClock::Default(),
                             [](const LogRecord&) {});
  for (auto _ : state) benchmark::DoNotOptimize(clock.NowMillis());
}

void Threads(benchmark::internal::Benchmark* b) {
  b->Threads(1)->Threads(2)->Threads(8)->UseRealTime();
}

BENCHMARK(BM_Clock_Wall)->Apply(Threads);
BENCHMARK(BM_Clock_Engine)->Apply(Threads);

BENCHMARK(BM_RawRocksDB_GetPut)->Apply(Threads);
BENCHMARK(BM_RawRocksDB_Get)->Apply(Threads);
BENCHMARK(BM_JournalStore_GetPut)->Apply(Threads);
BENCHMARK(BM_JournalStore_Get)->Apply(Threads);
BENCHMARK(BM_JournalStore_Get_Pread)->Apply(Threads);
BENCHMARK(BM_JournalStore_GetPut_Compressed)->Apply(Threads);
BENCHMARK(BM_JournalStore_Get_Compressed)->Apply(Threads);
BENCHMARK(BM_Journal_ReadSealed)->Arg(32)->Arg(1);
BENCHMARK(BM_JournalStore_Update)->ArgName("given")->Arg(0)->Arg(1);
BENCHMARK(BM_JournalStore_ApplyBatch)->ArgName("writes")->Arg(16)->Arg(1000)->Arg(10000);
BENCHMARK(BM_Get_AtScale)
    ->ArgNames({"records", "journal"})
    ->ArgsProduct({{10'000'000}, {0, 1}})
    ->UseRealTime();
BENCHMARK(BM_JournalStore_MoveSurvivors)
    ->ArgName("needed_per_mille")
    ->Arg(10)
    ->Arg(100)
    ->Arg(250)
    ->Iterations(3)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Journal_FirstAppends)->Unit(benchmark::kMillisecond)->Iterations(5);
BENCHMARK(BM_JournalStore_Open)
    ->ArgNames({"records", "saved"})
    ->ArgsProduct({{1'000'000, 10'000'000}, {0, 1}})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(2)
    ->UseRealTime();
BENCHMARK(BM_Insert_New)->Apply(Threads);
BENCHMARK(BM_Insert_Duplicate)->Apply(Threads);
BENCHMARK(BM_CompareAndSet)->Apply(Threads);
BENCHMARK(BM_Get_Hit)->Apply(Threads);
BENCHMARK(BM_Insert_New_Journal)->Apply(Threads);
BENCHMARK(BM_Insert_Duplicate_Journal)->Apply(Threads);
BENCHMARK(BM_Get_Hit_Journal)->Apply(Threads);
BENCHMARK(BM_Insert_New_Journal_Compressed)->Apply(Threads);
BENCHMARK(BM_Insert_Duplicate_Journal_Compressed)->Apply(Threads);
BENCHMARK(BM_Apply_Insert)->Arg(1)->Arg(16)->Arg(128)->UseRealTime();
BENCHMARK(BM_Apply_InsertRandom)->Arg(16)->Arg(128)->UseRealTime();
BENCHMARK(BM_Apply_CompareAndSet)->Arg(128)->UseRealTime();
BENCHMARK(BM_Get_Hit_WindowFiles)
    ->ArgNames({"files", "ordered"})
    ->ArgsProduct({{1, 8, 16, 32, 64, 128}, {0, 1}})
    ->UseRealTime();
BENCHMARK(BM_WindowKeyFilter_Hit)
    ->ArgNames({"keys", "recent"})
    ->ArgsProduct({{1 << 20, 16 << 20}, {0, 1}})
    ->UseRealTime();
BENCHMARK(BM_JournalIndex_EraseSegment)
    ->Arg(20'000'000)
    ->Iterations(5)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_JournalIndex_CopyTables)
    ->Arg(4'000'000)
    ->Arg(20'000'000)
    ->Iterations(5)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_JournalIndex_Find)
    ->ArgNames({"keys", "hit"})
    ->ArgsProduct({{1'000'000, 10'000'000, 20'000'000}, {0, 1}})
    ->UseRealTime();

// Grouped by window count (one preload per count), single-threaded as the ratios are quoted.
[[maybe_unused]] const bool kWindowsRegistered = [] {
  for (int windows : {1, 4, 8, 16}) {
    benchmark::RegisterBenchmark("BM_Insert_New_Windows", BM_Insert_New_Windows)
        ->Arg(windows)
        ->Threads(1)
        ->UseRealTime();
    benchmark::RegisterBenchmark("BM_Insert_Duplicate_Windows", BM_Insert_Duplicate_Windows)
        ->Arg(windows)
        ->Threads(1)
        ->UseRealTime();
    benchmark::RegisterBenchmark("BM_Get_Hit_Windows", BM_Get_Hit_Windows)
        ->Arg(windows)
        ->Threads(1)
        ->UseRealTime();
  }
  return true;
}();

}  // namespace
}  // namespace idem
