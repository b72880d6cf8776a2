#include "data_dir_check.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <vector>

#include <rocksdb/env.h>

#include "operator_log.h"
#include "prezeroed_wal.h"
#include "wal_scan.h"

namespace idem {
namespace {

namespace fs = std::filesystem;

constexpr size_t kNamesListed = 12;

// "a, b, c and 9 more"
std::string ListNames(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  std::string out;
  for (size_t i = 0; i < names.size() && i < kNamesListed; ++i) {
    if (i > 0) out += ", ";
    out += names[i];
  }
  if (names.size() > kNamesListed)
    out += " and " + std::to_string(names.size() - kNamesListed) + " more";
  return out;
}

// Files only RocksDB writes: their presence says the directory held a database.
bool IsRocksDbFile(const std::string& name) {
  return name.ends_with(".sst") || name.starts_with("MANIFEST-") || name.starts_with("OPTIONS-") ||
         name == "IDENTITY" || IsWalFileName(name);
}

std::string Untouched(const std::string& dir) {
  return " Nothing in " + dir +
         " was changed. To salvage what is readable: " + SalvageCommand(dir) +
         " (it copies the directory aside first).";
}

Status MissingCurrent(const std::string& dir, const std::vector<std::string>& names) {
  const bool database = std::any_of(names.begin(), names.end(), IsRocksDbFile);
  if (!database) {
    return Status::InvalidArgument(dir + " is not empty (" + ListNames(names) +
                                   ") and holds no idemstore database: give an empty or a new "
                                   "directory");
  }
  return Status::Corruption(
      dir + " holds database files (" + ListNames(names) +
      ") but no CURRENT file, which names the MANIFEST listing them: without it a start would "
      "create an empty database here and delete these files." +
      Untouched(dir));
}

std::string Describe(const WalScan& scan) {
  return "at byte " + std::to_string(scan.damage->offset) + " of " +
         std::to_string(scan.file_bytes) + " (" + scan.damage->what + ")";
}

Status DamagedMidLog(const std::string& path, const WalScan& scan, bool later_wals_hold_data,
                     const std::string& dir) {
  std::string after;
  if (scan.readable_after_damage > 0) {
    after = std::to_string(scan.records_after_damage) + " whole records (write batches) and " +
            std::to_string(scan.readable_after_damage) + " readable log fragments follow it";
    if (scan.resume_sequence > scan.next_sequence && scan.next_sequence > 0) {
      after += " (the damage destroyed operations " + std::to_string(scan.next_sequence) + " to " +
               std::to_string(scan.resume_sequence - 1) + ")";
    }
    if (later_wals_hold_data) after += ", and later WALs hold more";
  } else {
    after = "later WALs hold more records";
  }
  return Status::Corruption("WAL " + path + " is damaged " + Describe(scan) + ": " + after +
                            ", which recovery would silently drop, acknowledged or not." +
                            Untouched(dir));
}

Status CutShort(const std::string& path, const WalScan& scan, const std::string& dir) {
  return Status::Corruption(
      "WAL " + path + " was cut short: its last record, from byte " +
      std::to_string(scan.damage->offset) + ", runs past the end of the file (" +
      std::to_string(scan.file_bytes) +
      " bytes). A sync-mode WAL ends with a whole record when it is closed, and in zeros written "
      "ahead of its data when the server stops without closing it, so whatever followed this "
      "point is missing. (A crash mid-write leaves this too, but only if the WAL was last written "
      "in async mode, with the zeros ahead turned off, or with them failing on a full disk.)" +
      Untouched(dir));
}

}  // namespace

std::string SalvageCommand(const std::string& dir) { return "idemctl --data " + dir + " repair"; }

Status WithSalvageAdvice(const Status& s, const std::string& dir) {
  if (!s.IsCorruption()) return s;
  std::string message(s.message());
  if (message.ends_with('.')) message.pop_back();
  return Status::Corruption(message + ". To salvage what is readable: " + SalvageCommand(dir));
}

Status CheckDataDirectory(const std::string& dir, const EngineOptions& options) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    return ec ? Status::IOError("cannot read " + dir + ": " + ec.message()) : Status::Ok();
  }
  if (!fs::is_directory(dir, ec)) {
    return ec ? Status::IOError("cannot read " + dir + ": " + ec.message())
              : Status::InvalidArgument(dir + " is not a directory");
  }
  std::vector<std::string> names;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  if (ec) return Status::IOError("cannot list " + dir + ": " + ec.message());
  if (names.empty()) return Status::Ok();
  if (std::find(names.begin(), names.end(), "CURRENT") == names.end()) {
    return MissingCurrent(dir, names);
  }

  // A server running on the directory is RocksDB's to report (its LOCK), not a WAL being
  // written that looks torn. The probe takes and releases RocksDB's lock at once (RocksDB takes
  // it next), and only if the LOCK file exists, so that it creates nothing.
  if (std::find(names.begin(), names.end(), "LOCK") != names.end()) {
    rocksdb::Env* env = rocksdb::Env::Default();
    rocksdb::FileLock* lock = nullptr;
    if (rocksdb::Status s = env->LockFile(dir + "/LOCK", &lock); !s.ok()) {
      return Status::Busy(dir + " is in use by another process or engine: " + s.ToString());
    }
    (void)env->UnlockFile(lock);
  }

  Result<std::vector<std::string>> wals = ListWals(dir);  // oldest first
  if (!wals.ok()) return wals.status();
  std::vector<WalScan> scans;
  for (const std::string& path : *wals) {
    Result<WalScan> scan = ScanWal(path);
    if (!scan.ok()) return scan.status();
    scans.push_back(std::move(*scan));
  }
  const bool zeros_ahead =
      options.durability == Durability::kSync && options.wal_prezero_chunk_bytes > 0;
  for (size_t i = 0; i < scans.size(); ++i) {
    const WalScan& scan = scans[i];
    if (!scan.damage) continue;
    const bool later_wals_hold_data =
        std::any_of(scans.begin() + static_cast<std::ptrdiff_t>(i) + 1, scans.end(),
                    [](const WalScan& s) { return s.records > 0 || s.readable_after_damage > 0; });
    const std::string& path = (*wals)[i];
    if (!scan.TailOnly() || later_wals_hold_data) {
      return DamagedMidLog(path, scan, later_wals_hold_data, dir);
    }
    if (scan.ends_inside_record && zeros_ahead) return CutShort(path, scan, dir);
    LogToOperator(options.log,
                  LogRecord(LogLevel::kWarn, "wal_tail_dropped",
                            "WAL " + path + ": its last record is incomplete " + Describe(scan) +
                                ", as a crash in the middle of a write leaves it; recovery drops "
                                "that record (under sync durability it was never acknowledged)")
                      .With("path", path));
  }
  return Status::Ok();
}

}  // namespace idem
