#include "online_backup.h"

#include <ctime>
#include <filesystem>
#include <memory>

#include <rocksdb/file_system.h>
#include <rocksdb/utilities/checkpoint.h>

#include "fence_allocator.h"
#include "idem/version.h"
#include "journal_layout.h"
#include "journal_store.h"
#include "rocks_status.h"

namespace idem {
namespace {

namespace fs = std::filesystem;

constexpr char kIncompleteSuffix[] = ".incomplete";
constexpr char kJournalCopySuffix[] = ".incomplete.journal";

std::string UtcStamp(int64_t ms) {
  const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &utc);
  return buf;
}

// Writes `text` to `path` and fsyncs it, through the database's file system (so that a full
// disk there fails it as it fails the checkpoint's own files).
Status WriteSynced(rocksdb::FileSystem* fs, const std::string& path, const std::string& text) {
  std::unique_ptr<rocksdb::FSWritableFile> file;
  rocksdb::IOStatus s = fs->NewWritableFile(path, rocksdb::FileOptions(), &file, nullptr);
  if (s.ok()) s = file->Append(text, rocksdb::IOOptions(), nullptr);
  if (s.ok()) s = file->Fsync(rocksdb::IOOptions(), nullptr);
  if (file) {
    rocksdb::IOStatus closed = file->Close(rocksdb::IOOptions(), nullptr);
    if (s.ok()) s = closed;
  }
  return FromRocks(s);
}

// Makes the entries of `dir` (files created, renamed into it) durable.
Status SyncDirectory(rocksdb::FileSystem* fs, const std::string& dir) {
  std::unique_ptr<rocksdb::FSDirectory> d;
  rocksdb::IOStatus s = fs->NewDirectory(dir, rocksdb::IOOptions(), &d, nullptr);
  if (s.ok()) s = d->FsyncWithDirOptions(rocksdb::IOOptions(), nullptr, rocksdb::DirFsyncOptions());
  if (s.ok()) s = d->Close(rocksdb::IOOptions(), nullptr);
  return FromRocks(s);
}

// Checks `dir` as a backup target; sets *final_dir and *parent to absolute paths.
Status CheckTarget(const std::string& dir, std::string* final_dir, std::string* parent) {
  if (dir.empty()) return Status::InvalidArgument("no backup directory given");
  std::error_code ec;
  fs::path target = fs::absolute(fs::path(dir), ec).lexically_normal();
  if (ec) return Status::InvalidArgument("bad backup directory " + dir + ": " + ec.message());
  if (!target.has_filename()) target = target.parent_path();  // "DIR/"
  if (!target.has_filename() || target.filename() == "..") {
    return Status::InvalidArgument("backup directory " + dir + " names no new directory");
  }
  *final_dir = target.string();
  *parent = target.parent_path().string();
  // The parent is not created: a typo would otherwise scatter backups, and a directory created
  // here would need syncing up to the root to survive a crash.
  if (!fs::is_directory(*parent, ec)) {
    return Status::InvalidArgument("cannot back up into " + *final_dir + ": its parent " + *parent +
                                   " is not an existing directory");
  }
  for (const std::string& path :
       {*final_dir, *final_dir + kIncompleteSuffix, *final_dir + kJournalCopySuffix}) {
    if (fs::symlink_status(path, ec).type() != fs::file_type::not_found) {
      return Status::InvalidArgument(
          path + " already exists: give a new directory" +
          (path == *final_dir ? ""
                              : " (or remove this one, left by a backup that did not finish)"));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<BackupManifest> WriteBackup(rocksdb::DB* db, const journal::JournalStore* journal,
                                   const std::string& dir,
                                   const std::function<uint64_t()>& fence_high_water,
                                   int64_t now_ms) {
  std::string final_dir, parent;
  if (Status st = CheckTarget(dir, &final_dir, &parent); !st.ok()) return st;
  const std::string staging = final_dir + kIncompleteSuffix;
  const std::string journal_copy = final_dir + kJournalCopySuffix;
  rocksdb::FileSystem* const files = db->GetFileSystem();

  // Every failure from here on removes the staging directories: nothing half-written stays
  // behind to fill the disk or to be taken for a backup. (RocksDB removes its own scratch
  // directory, `staging`.tmp, when the checkpoint fails.)
  auto fail = [&](const Status& cause) -> Status {
    std::string left;
    for (const std::string& path : {staging, journal_copy}) {
      std::error_code ec;
      fs::remove_all(path, ec);
      if (ec) left += "; and " + path + " could not be removed (" + ec.message() + "): remove it";
    }
    if (left.empty()) return cause;
    return Status::FromCode(static_cast<uint32_t>(cause.code()), cause.message() + left);
  };

  if (journal != nullptr) {
    if (Status st = journal->journal().CopyTo(journal_copy); !st.ok()) return fail(st);
  }
  rocksdb::Checkpoint* raw = nullptr;
  if (rocksdb::Status s = rocksdb::Checkpoint::Create(db, &raw); !s.ok()) {
    return fail(FromRocks(s));
  }
  std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
  // log_size_for_flush 0: always flush. The memtables of every column family (which hold every
  // acknowledged write, in async mode too) go to table files, so the backup does not depend on WAL
  // pages not yet synced; RocksDB still copies the WAL written between the flush and the file
  // listing, and syncs the files it writes and the directory.
  if (rocksdb::Status s = checkpoint->CreateCheckpoint(staging, /*log_size_for_flush=*/0);
      !s.ok()) {
    return fail(FromRocks(s));
  }
  if (journal != nullptr) {  // made durable by the sync of `staging` below
    if (rocksdb::IOStatus s =
            files->RenameFile(journal_copy, JournalDir(staging), rocksdb::IOOptions(), nullptr);
        !s.ok()) {
      return fail(FromRocks(s));
    }
  }
  BackupManifest manifest;
  manifest.created_ms = now_ms;
  manifest.created_utc = UtcStamp(now_ms);
  manifest.idemstore_version = std::string(Version());
  manifest.fence_high_water = fence_high_water();
  manifest.fence_floor = manifest.fence_high_water + kBackupFenceMargin;
  uint64_t keys = 0;
  if (journal != nullptr) {
    manifest.estimated_records = journal->records();  // the source's now, not the copy's
  } else if (db->GetAggregatedIntProperty("rocksdb.estimate-num-keys", &keys)) {
    // Summed over every column family: under the expiry-window layout most records are in
    // windows.
    manifest.estimated_records = keys;
  }
  // The manifest and its directory entry are durable before the rename, and the rename is
  // durable before success is reported: after a crash, `dir` either does not exist or is
  // complete.
  if (Status st =
          WriteSynced(files, staging + "/" + kBackupManifestFile, EncodeBackupManifest(manifest));
      !st.ok()) {
    return fail(st);
  }
  if (Status st = SyncDirectory(files, staging); !st.ok()) return fail(st);
  if (rocksdb::IOStatus s = files->RenameFile(staging, final_dir, rocksdb::IOOptions(), nullptr);
      !s.ok()) {
    return fail(FromRocks(s));
  }
  if (Status st = SyncDirectory(files, parent); !st.ok()) {
    // Complete, but its name may not survive a crash: not reported as a backup.
    std::error_code ec;
    fs::remove_all(final_dir, ec);
    return st;
  }
  return manifest;
}

Status RaiseFencesToBackupFloor(rocksdb::DB* db, const std::string& dir, uint64_t* reserved,
                                std::string* note) {
  Result<BackupManifest> manifest = ReadBackupManifest(dir);
  if (manifest.status().code() == Status::Code::kNotFound) return Status::Ok();
  if (!manifest.ok()) return manifest.status();
  if (manifest->fence_floor <= *reserved) return Status::Ok();
  if (Status st = FenceAllocator::StoreReservation(db, manifest->fence_floor); !st.ok()) {
    return st;
  }
  *note = "opened a backup taken at " + manifest->created_utc +
          ": raised the fence reservation from " + std::to_string(*reserved) + " to " +
          std::to_string(manifest->fence_floor) + " (the backup's fence high-water mark " +
          std::to_string(manifest->fence_high_water) +
          " plus the margin), so no fence the source handed out after the backup repeats";
  *reserved = manifest->fence_floor;
  return Status::Ok();
}

}  // namespace idem
