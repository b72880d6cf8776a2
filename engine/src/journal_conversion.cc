#include "journal_conversion.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <limits>
#include <memory>
#include <vector>

#include <rocksdb/write_batch.h>

#include "expiry_windows.h"
#include "journal_layout.h"
#include "journal_store.h"
#include "key_codec.h"
#include "record_codec.h"
#include "remembered_key.h"
#include "rocks_status.h"

namespace idem {
namespace {

// A batch of moved records is one journal entry: well under a segment, so that the largest
// record the limits allow still fits after the batch's others; and of a bounded count, since
// JournalStore::Apply looks for each write's key among the batch's earlier writes (100k-write
// batches made a conversion of 1M records take minutes).
constexpr size_t kBatchWrites = 1024;
uint64_t BatchBytesFor(const journal::JournalOptions& journal) {
  return std::min<uint64_t>(uint64_t{1} << 20, journal.segment_bytes / 4);
}

// Where the records of the default family begin: past the engine's own keys.
std::string FirstRecordKey() { return std::string(1, static_cast<char>(kMetaKeyPrefix + 1)); }

std::string StagingDir(const std::string& db_dir) { return JournalDir(db_dir) + ".converting"; }

Status RemoveDirectory(rocksdb::FileSystem* fs, const std::string& dir) {
  const rocksdb::IOStatus s = journal::RemoveDirectory(fs, dir);
  return s.ok() ? Status::Ok() : FromRocks(s);
}

Status SyncDirectory(rocksdb::FileSystem* fs, const std::string& dir) {
  const rocksdb::IOStatus s = journal::SyncDirectory(fs, dir);
  return s.ok() ? Status::Ok() : FromRocks(s);
}

Status WriteMark(rocksdb::FileSystem* fs, const std::string& path) {
  const rocksdb::IOOptions io;
  std::unique_ptr<rocksdb::FSWritableFile> file;
  rocksdb::IOStatus s = fs->NewWritableFile(path, rocksdb::FileOptions(), &file, nullptr);
  if (s.ok()) {
    s = file->Append(
        "the records of this database may still be in RocksDB: the next open deletes them\n", io,
        nullptr);
  }
  if (s.ok()) s = file->Sync(io, nullptr);
  if (s.ok()) s = file->Close(io, nullptr);
  return s.ok() ? Status::Ok() : FromRocks(s);
}

// Drops every window family, one MANIFEST record each: a crash leaves each whole or gone.
Status DropWindows(ExpiryWindows* windows, uint64_t* dropped) {
  while (!windows->Current()->empty()) {  // a failed drop ends a pass early: its error is next
    Result<size_t> pass = windows->DropEndedBy(std::numeric_limits<int64_t>::max());
    if (!pass.ok()) return pass.status();
    *dropped += *pass;
  }
  return Status::Ok();
}

// Deletes every record RocksDB holds (they are in the journal now), durably: the window families
// dropped, the default family's records deleted; then the mark that said they might still be
// there.
Status DeleteMovedRecords(rocksdb::DB* db, ExpiryWindows* windows, rocksdb::FileSystem* fs,
                          const std::string& journal_dir, uint64_t* windows_dropped) {
  if (Status st = DropWindows(windows, windows_dropped); !st.ok()) return st;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(rocksdb::ReadOptions()));
  it->SeekToLast();
  if (!it->status().ok()) return FromRocks(it->status());
  const std::string first = FirstRecordKey();
  if (it->Valid() && it->key().compare(first) >= 0) {
    std::string end = it->key().ToString();
    end.push_back('\0');  // the least key after the last
    rocksdb::WriteBatch batch;
    rocksdb::Status s = batch.DeleteRange(db->DefaultColumnFamily(), first, end);
    rocksdb::WriteOptions write;
    write.sync = true;
    if (s.ok()) s = db->Write(write, &batch);
    // The range's files go now, not whenever a compaction would next look at them: the journal
    // layout writes RocksDB too rarely for one to come.
    if (s.ok()) {
      const rocksdb::Slice from(first), to(end);
      s = db->CompactRange(rocksdb::CompactRangeOptions(), db->DefaultColumnFamily(), &from, &to);
    }
    if (!s.ok()) return FromRocks(s);
  }
  if (rocksdb::IOStatus s =
          fs->DeleteFile(journal_dir + "/" + kConversionMark, rocksdb::IOOptions(), nullptr);
      !s.ok()) {
    return FromRocks(s);
  }
  return SyncDirectory(fs, journal_dir);
}

// The families that hold records, in the reverse of the order a read looks a key up in them
// (journal_conversion.h): windows that have ended (a read skips them: they hold dead versions
// only), the default family, then the windows a read probes, oldest first. The snapshot `keep`
// keeps the window handles valid.
std::vector<rocksdb::ColumnFamilyHandle*> FamiliesReadLast(
    rocksdb::DB* db, const ExpiryWindows& windows, int64_t now_ms,
    std::shared_ptr<const ExpiryWindows::Set>* keep) {
  *keep = windows.Current();
  std::vector<rocksdb::ColumnFamilyHandle*> families;
  for (const ExpiryWindows::Window& w : **keep) {  // ascending by end
    if (w.end_ms <= now_ms) families.push_back(w.handle.get());
  }
  families.push_back(db->DefaultColumnFamily());
  for (const ExpiryWindows::Window& w : **keep) {
    if (w.end_ms > now_ms) families.push_back(w.handle.get());
  }
  return families;
}

// The keep-until the engine would give the stored value (a record or a marker) in `ns`; 0: it
// is dead at any bound.
Result<int64_t> KeepUntilOf(std::string_view value, int64_t remember_ms) {
  if (IsMarker(value)) {
    Marker marker;
    if (Status st = DecodeMarker(value, &marker); !st.ok()) return st;
    return remember_ms > 0 ? marker.record_expired_ms + remember_ms : 0;
  }
  Record record;
  if (Status st = DecodeRecord(value, &record); !st.ok()) return st;
  return JournalKeepUntil(DeathOf(record, remember_ms));
}

// Builds the journal of the live records of the default and window families in `staging`
// (FamiliesReadLast's order), synced, with the mark.
Status BuildStagingJournal(rocksdb::DB* db, const ExpiryWindows& windows, rocksdb::FileSystem* fs,
                           const std::string& staging, const std::string& db_dir,
                           const EngineOptions& options, const journal::JournalOptions& journal,
                           const Clock* clock, int64_t now_ms, int64_t removal_bound_ms,
                           JournalConversion* report_out) {
  JournalConversion& report = *report_out;
  Result<std::unique_ptr<journal::JournalStore>> opened =
      journal::JournalStore::Open(fs, staging, journal, clock, removal_bound_ms);
  if (!opened.ok()) return opened.status();
  std::unique_ptr<journal::JournalStore> store = std::move(*opened);
  const RememberPeriods remember(options);
  std::deque<std::string> keys, values;  // what the batch's writes point into
  std::vector<journal::JournalStore::Write> writes;
  uint64_t batch_bytes = 0;
  auto flush = [&]() -> Status {
    if (writes.empty()) return Status::Ok();
    Status st = store->Apply(writes);
    writes.clear();
    keys.clear();
    values.clear();
    batch_bytes = 0;
    return st;
  };
  rocksdb::ReadOptions read;
  read.fill_cache = false;
  std::shared_ptr<const ExpiryWindows::Set> keep;
  for (rocksdb::ColumnFamilyHandle* family : FamiliesReadLast(db, windows, now_ms, &keep)) {
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(read, family));
    for (it->Seek(FirstRecordKey()); it->Valid(); it->Next()) {
      std::string_view ns, user_key;
      const std::string_view key(it->key().data(), it->key().size());
      if (!ParseRecordKey(key, &ns, &user_key)) {
        return Status::Corruption("converting " + db_dir + " to the journal layout: a key of " +
                                  std::to_string(key.size()) + " bytes in column family '" +
                                  family->GetName() + "' that is not a record's");
      }
      const std::string_view value(it->value().data(), it->value().size());
      Result<int64_t> keep_until = KeepUntilOf(value, remember.For(ns));
      if (!keep_until.ok()) {
        return Status::Corruption("converting " + db_dir +
                                  " to the journal layout: the record of namespace '" +
                                  std::string(ns) + "' key '" + std::string(user_key) +
                                  "' does not decode: " + keep_until.status().message());
      }
      if (*keep_until <= removal_bound_ms) {
        ++report.dead_records;
        continue;
      }
      if (writes.size() == kBatchWrites ||
          batch_bytes + key.size() + value.size() > BatchBytesFor(journal)) {
        if (Status st = flush(); !st.ok()) return st;
      }
      keys.emplace_back(key);
      values.emplace_back(value);
      writes.push_back({journal::OpType::kPut, keys.back(), values.back(), *keep_until});
      batch_bytes += key.size() + value.size();
      ++report.records;
      report.bytes += key.size() + value.size();
    }
    if (!it->status().ok()) return FromRocks(it->status());
  }
  if (Status st = flush(); !st.ok()) return st;
  if (Status st = store->Sync(); !st.ok()) return st;
  if (Status st = WriteMark(fs, staging + "/" + kConversionMark); !st.ok()) return st;
  return SyncDirectory(fs, staging);
}

}  // namespace

Result<std::optional<JournalConversion>> ConvertToJournal(
    rocksdb::DB* db, ExpiryWindows* windows, rocksdb::FileSystem* fs, const std::string& db_dir,
    const EngineOptions& options, const journal::JournalOptions& journal, const Clock* clock,
    int64_t now_ms, int64_t removal_bound_ms) {
  const auto started = std::chrono::steady_clock::now();
  auto elapsed_ms = [&] {
    return static_cast<int64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::steady_clock::now() - started)
                                    .count());
  };
  const rocksdb::IOOptions io;
  const std::string journal_dir = JournalDir(db_dir);
  const std::string staging = StagingDir(db_dir);
  if (fs->FileExists(journal_dir + "/" + kConversionMark, io, nullptr).ok()) {
    JournalConversion finished{.finished_earlier = true};
    if (Status st = DeleteMovedRecords(db, windows, fs, journal_dir, &finished.window_families);
        !st.ok()) {
      return st;
    }
    finished.ms = elapsed_ms();
    return std::optional<JournalConversion>(finished);
  }
  Result<bool> default_holds = HoldsRecords(db);
  if (!default_holds.ok()) return default_holds.status();
  // A window family may be empty (created ahead of the writes that would need it): converting
  // it costs nothing and drops it.
  const bool holds = *default_holds || !windows->Current()->empty();
  // A conversion a crash interrupted before its rename, if any: RocksDB still holds every
  // record.
  if (Status st = RemoveDirectory(fs, staging); !st.ok()) return st;
  if (!holds) return std::optional<JournalConversion>();
  Result<bool> has_journal = journal::Journal::HasSegments(fs, journal_dir);
  if (!has_journal.ok()) return has_journal.status();
  if (*has_journal) {
    return Status::InvalidArgument("the database in " + db_dir +
                                   " holds records both in RocksDB and in its journal, which no "
                                   "conversion leaves: restore it from a backup");
  }

  JournalConversion report;
  Status built = BuildStagingJournal(db, *windows, fs, staging, db_dir, options, journal, clock,
                                     now_ms, removal_bound_ms, &report);
  if (built.ok()) {
    if (rocksdb::IOStatus s = fs->RenameFile(staging, journal_dir, io, nullptr); !s.ok()) {
      built = FromRocks(s);
    }
  }
  if (!built.ok()) {
    // Not left to take the disk a full one needs back (the next open would delete it too).
    (void)RemoveDirectory(fs, staging);
    return built;
  }
  if (Status st = SyncDirectory(fs, db_dir); !st.ok()) return st;
  // The journal is the database's now; a crash from here on is finished by the next open.
  if (Status st = DeleteMovedRecords(db, windows, fs, journal_dir, &report.window_families);
      !st.ok()) {
    return st;
  }
  report.ms = elapsed_ms();
  return std::optional<JournalConversion>(report);
}

Status RemoveAbandonedConversion(rocksdb::FileSystem* fs, const std::string& db_dir) {
  return RemoveDirectory(fs, StagingDir(db_dir));
}

}  // namespace idem
