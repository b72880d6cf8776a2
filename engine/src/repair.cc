#include "idem/repair.h"

#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/options.h>

#include "column_families.h"
#include "fence_allocator.h"
#include "journal_salvage.h"
#include "key_codec.h"
#include "prezeroed_wal.h"
#include "record_codec.h"
#include "rocks_options.h"
#include "rocks_status.h"
#include "wal_scan.h"

namespace idem {
namespace {

namespace fs = std::filesystem;

// How far a repair moves the fence reservation past the highest surviving fence: more fences
// than one WAL's worth of operations could have handed out (a WAL is at most a few GB, an
// operation tens of bytes), and still 2^24 repairs short of running out of 64 bits.
constexpr uint64_t kRepairFenceJump = uint64_t{1} << 40;

std::string UtcStamp() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &utc);
  return buf;
}

// Copies `dir` to `backup` and checks that every file arrived whole, then syncs the file systems:
// the copy must be on disk before the original is changed.
Status CopyAside(const std::string& dir, const std::string& backup, RepairReport* report) {
  std::error_code ec;
  if (fs::exists(backup, ec)) {
    return Status::InvalidArgument(backup + " already exists: choose another backup directory");
  }
  fs::copy(dir, backup, fs::copy_options::recursive, ec);
  if (ec) {
    return Status::IOError("cannot copy " + dir + " to " + backup + ": " + ec.message() +
                           " (nothing in " + dir + " was changed; remove the partial copy)");
  }
  uint64_t files = 0, bytes = 0;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const std::string copy = backup + "/" + fs::relative(it->path(), dir, ec).string();
    const uint64_t size = it->file_size(ec);
    std::error_code copy_ec;
    if (ec || fs::file_size(copy, copy_ec) != size || copy_ec) {
      return Status::IOError("the copy " + copy + " differs from " + it->path().string() +
                             " (nothing in " + dir + " was changed)");
    }
    files++;
    bytes += size;
  }
  if (ec) return Status::IOError("cannot list " + dir + ": " + ec.message());
  ::sync();
  report->lines.push_back("copied " + dir + " to " + backup + " (" + std::to_string(files) +
                          " files, " + std::to_string(bytes) + " bytes) before changing anything");
  return Status::Ok();
}

// What each WAL holds, and what its damage destroyed. Adds to *other_family_operations the
// operations on column families other than default (the expiry windows) in the WALs.
Status ReportWals(const std::string& dir, RepairReport* report, uint64_t* other_family_operations) {
  Result<std::vector<std::string>> wals = ListWals(dir);  // oldest first
  if (!wals.ok()) return wals.status();
  std::optional<WalScan> previous;  // the WAL before, if it was intact
  for (const std::string& path : *wals) {
    Result<WalScan> scan = ScanWal(path);
    if (!scan.ok()) return scan.status();
    // Sequence numbers run on from one WAL to the next: a gap is a WAL cut at a record boundary.
    if (previous && previous->records > 0 && scan->records > 0 &&
        scan->first_sequence > previous->next_sequence) {
      const uint64_t lost = scan->first_sequence - previous->next_sequence;
      report->lost_operations += lost;
      report->lines.push_back("operations " + std::to_string(previous->next_sequence) + " to " +
                              std::to_string(scan->first_sequence - 1) + " are missing before " +
                              fs::path(path).filename().string() +
                              ": the WAL before it was cut at a record boundary (" +
                              std::to_string(lost) + " operations)");
    }
    previous = scan->damage ? std::nullopt : std::optional<WalScan>(*scan);
    *other_family_operations += scan->other_family_operations;
    std::string line = "WAL " + fs::path(path).filename().string() + ": " +
                       std::to_string(scan->file_bytes) + " bytes, " +
                       std::to_string(scan->records) + " records";
    const std::string windows =
        scan->other_family_operations == 0
            ? ""
            : "; " + std::to_string(scan->other_family_operations) +
                  " of the operations in its readable records are on expiry windows";
    if (!scan->damage) {
      report->lines.push_back(line + ", intact" + windows);
      continue;
    }
    line += " before the damage at byte " + std::to_string(scan->damage->offset) + " (" +
            scan->damage->what + ")";
    if (!scan->TailOnly()) {
      line += ", " + std::to_string(scan->records_after_damage) + " whole records after it";
      if (scan->resume_sequence > scan->next_sequence && scan->next_sequence > 0) {
        const uint64_t lost = scan->resume_sequence - scan->next_sequence;
        report->lost_operations += lost;
        line += "; the damage destroyed " + std::to_string(lost) +
                " operations (sequence numbers " + std::to_string(scan->next_sequence) + " to " +
                std::to_string(scan->resume_sequence - 1) + ")";
      } else {
        report->loss_uncounted = true;
        line += "; how many operations the damage destroyed cannot be counted";
      }
    } else if (scan->ends_inside_record) {
      report->loss_uncounted = true;
      line +=
          "; the WAL ends there: what followed (if it was cut short) is gone and cannot be "
          "counted";
    } else {
      line +=
          "; the last record was torn by a crash mid-write (under sync durability it was "
          "never acknowledged)";
    }
    report->lines.push_back(line + windows);
  }
  return Status::Ok();
}

// Replays every readable WAL record, also those after damage, and flushes them to table files:
// into every column family (the expiry windows too; RocksDB will not open the database without
// all of them).
Status SalvageWithManifest(const std::string& dir, rocksdb::Options options) {
  options.create_if_missing = false;
  options.wal_recovery_mode = rocksdb::WALRecoveryMode::kSkipAnyCorruptedRecords;
  options.track_and_verify_wals_in_manifest = false;  // a WAL cut short is what is salvaged
  Result<std::unique_ptr<AllFamilies>> db =
      OpenAllFamilies(options, options, dir, OpenMode::kReadWrite);
  if (!db.ok()) return db.status();
  rocksdb::Status s = (*db)->db()->Flush(rocksdb::FlushOptions(), (*db)->handles());
  Status closed = (*db)->Close();
  return s.ok() ? closed : FromRocks(s);
}

// Counts the salvaged records RocksDB holds (adding them to the journal's, already in
// report->records) and raises the fence reservation far above every fence they carry and
// `journal_max_fence`: records lost to the damage may have carried higher fences, which clients
// may hold, and the reservation that covered them may be lost too. A fence must never be handed
// out twice.
Status TakeInventory(const std::string& dir, rocksdb::Options options, uint64_t journal_max_fence,
                     RepairReport* report) {
  options.create_if_missing = false;
  Result<std::unique_ptr<AllFamilies>> opened =
      OpenAllFamilies(options, options, dir, OpenMode::kReadWrite);
  if (!opened.ok()) return opened.status();
  rocksdb::DB* const db = (*opened)->db();
  uint64_t max_fence = journal_max_fence;
  uint64_t in_windows = 0;  // of report->records
  for (size_t i = 0; i < (*opened)->handles().size(); ++i) {
    const uint64_t before = report->records;
    std::unique_ptr<rocksdb::Iterator> it(
        db->NewIterator(rocksdb::ReadOptions(), (*opened)->handles()[i]));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      if (IsMetaKey(std::string_view(it->key().data(), it->key().size()))) continue;
      report->records++;
      Record record;
      if (DecodeRecord(std::string_view(it->value().data(), it->value().size()), &record).ok()) {
        max_fence = std::max(max_fence, record.fence);
      }
    }
    if (!it->status().ok()) return FromRocks(it->status());
    if (IsWindowFamily((*opened)->names()[i])) in_windows += report->records - before;
  }
  Result<uint64_t> reserved = FenceAllocator::LoadReservation(db);
  if (!reserved.ok()) return reserved.status();
  const uint64_t raised = std::max(*reserved, max_fence + 1) + kRepairFenceJump;
  if (Status st = FenceAllocator::StoreReservation(db, raised); !st.ok()) return st;
  report->lines.push_back("raised the fence reservation from " + std::to_string(*reserved) +
                          " to " + std::to_string(raised) + " (the highest fence found is " +
                          std::to_string(max_fence) +
                          "): no fence a lost record carried is handed out again");
  std::string held = "the database now holds " + std::to_string(report->records) + " records";
  if (const size_t windows = (*opened)->windows(); windows > 0) {
    held += " (" + std::to_string(in_windows) + " of them in " + std::to_string(windows) +
            (windows == 1 ? " expiry window)" : " expiry windows)");
  }
  report->lines.push_back(held);
  return (*opened)->Close();
}

}  // namespace

Result<RepairReport> RepairDatabase(const std::string& dir, const RepairOptions& options) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory
               ? Status::IOError("cannot read " + dir + ": " + ec.message())
               : Status::NotFound("nothing to repair: no directory " + dir);
  }
  bool database = false;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    database |= name == "CURRENT" || name.starts_with("MANIFEST-") || name.ends_with(".sst") ||
                IsWalFileName(name);
  }
  if (ec) return Status::IOError("cannot list " + dir + ": " + ec.message());
  if (!database) return Status::NotFound("nothing to repair: no database files in " + dir);
  EngineOptions engine = options.engine;
  if (!engine.clock) engine.clock = SystemClock::Default();
  Result<rocksdb::Options> tuned = MakeTunedRocksOptions(engine);
  if (!tuned.ok()) return tuned.status();
  rocksdb::Options rocks = std::move(*tuned);
  // No record is dropped by the repair: the expiry filter would run here on the raw wall clock,
  // without the engine's anchored time and its grace, and could delete records that are live
  // by the engine's time. Without automatic compactions nothing can run it; the engine's own
  // compactions clean expired records later.
  rocks.compaction_filter = nullptr;
  rocks.compaction_filter_factory = nullptr;
  rocks.disable_auto_compactions = true;

  // A column family this build does not know: salvaging, or rebuilding the MANIFEST, could only
  // lose what it holds. Refused before anything is copied or changed. (A MANIFEST that cannot be
  // read is the salvage's to deal with.)
  if (std::vector<std::string> families;
      fs::exists(dir + "/CURRENT", ec) &&
      rocksdb::DB::ListColumnFamilies(rocks, dir, &families).ok()) {
    if (Status st = CheckFamilyNames(families, dir); !st.ok()) {
      return Status::Corruption(st.message() + "; not repaired, nothing in " + dir +
                                " was changed");
    }
  }

  RepairReport report;
  report.backup_dir =
      options.backup_dir.empty() ? dir + ".before-repair-" + UtcStamp() : options.backup_dir;
  {
    // RocksDB's own lock: no server may have the database open while it is copied and salvaged.
    rocksdb::FileLock* lock = nullptr;
    rocksdb::Status locked = rocks.env->LockFile(dir + "/LOCK", &lock);
    if (!locked.ok()) {
      return Status::Busy(dir + " is in use (" + locked.ToString() + "): stop its server first");
    }
    Status copied = CopyAside(dir, report.backup_dir, &report);
    (void)rocks.env->UnlockFile(lock);  // RocksDB takes it again below
    if (!copied.ok()) return copied;
  }
  uint64_t window_operations = 0;
  if (Status st = ReportWals(dir, &report, &window_operations); !st.ok()) return st;

  bool rebuild = !fs::exists(dir + "/CURRENT", ec);
  if (rebuild) {
    report.lines.push_back(
        "CURRENT is missing: rebuilding the MANIFEST from the table files and "
        "the readable WAL records (rocksdb::RepairDB)");
  } else if (Status st = SalvageWithManifest(dir, rocks); !st.ok()) {
    report.lines.push_back("opening it with its MANIFEST failed (" + st.ToString() +
                           "): rebuilding the MANIFEST instead (rocksdb::RepairDB); what the "
                           "unusable files held is lost and cannot be counted");
    report.loss_uncounted = true;
    rebuild = true;
  } else {
    report.lines.push_back("replayed every readable WAL record and flushed them to table files");
  }
  if (rebuild) {
    // RepairDB learns a family's id from its table files only (the WAL names families by id):
    // it cannot replay an operation on a window without one, and then drops the rest of that
    // write batch too. With a window's table file present, it may fail instead (its consistency
    // check, on in this RocksDB build, refuses records replayed from a WAL that the window had
    // already flushed).
    if (window_operations > 0) {
      report.loss_uncounted = true;
      report.lines.push_back(
          "the WALs hold " + std::to_string(window_operations) +
          " operations on expiry windows: the rebuild replays only those on windows that have "
          "a table file, and drops the rest of a write batch at the first it cannot replay (an "
          "uncounted loss)");
    }
    if (rocksdb::Status s = rocksdb::RepairDB(dir, rocks); !s.ok()) {
      return Status::FromCode(static_cast<uint32_t>(FromRocks(s).code()),
                              "rebuilding the MANIFEST failed (" + s.ToString() +
                                  "); the directory as it was before the repair is kept at " +
                                  report.backup_dir);
    }
    std::string lost_tables;
    for (fs::directory_iterator it(dir + "/lost", ec), end; !ec && it != end; it.increment(ec)) {
      if (it->path().extension() == ".sst") lost_tables += " " + it->path().filename().string();
    }
    if (!lost_tables.empty()) {
      report.loss_uncounted = true;
      report.lines.push_back("table files RocksDB could not read, moved to " + dir +
                             "/lost:" + lost_tables + " (their records are lost, uncounted)");
    }
    if (fs::exists(dir + "/lost", ec)) {
      report.lines.push_back("the replaced MANIFEST and the WALs it converted are in " + dir +
                             "/lost");
    }
  }

  Result<std::optional<JournalSalvage>> journal = SalvageJournal(dir, engine);
  if (!journal.ok()) {
    return Status::FromCode(static_cast<uint32_t>(journal.status().code()),
                            "salvaging the journal failed (" + journal.status().message() +
                                "); the directory as it was before the repair is kept at " +
                                report.backup_dir);
  }
  std::string lost_entries;
  if (const std::optional<JournalSalvage>& salvage = *journal) {
    report.lines.insert(report.lines.end(), salvage->lines.begin(), salvage->lines.end());
    report.records += salvage->records;
    report.lost_journal_entries = salvage->lost_entries;
    report.loss_uncounted |= salvage->loss_uncounted;
    lost_entries = " and " + std::to_string(salvage->lost_entries) +
                   (salvage->lost_entries == 1 ? " journal entry" : " journal entries");
  }
  const uint64_t journal_max_fence = *journal ? (*journal)->max_fence : 0;
  if (Status st = TakeInventory(dir, rocks, journal_max_fence, &report); !st.ok()) return st;
  report.lines.push_back(
      "lost " + std::to_string(report.lost_operations) + " operations" + lost_entries +
      (report.loss_uncounted ? ", and an uncounted number (see above)" : "") +
      " (an operation is one record written: an insert, an update or a delete" +
      (lost_entries.empty() ? "" : "; a journal entry, one batch of them") + ")");
  report.lines.push_back("the directory as it was before the repair is kept at " +
                         report.backup_dir + "; remove it once the repaired database is verified");
  return report;
}

}  // namespace idem
