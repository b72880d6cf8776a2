#include "online_backup.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>

#include <rocksdb/utilities/checkpoint.h>

#include "fence_allocator.h"
#include "rocks_status.h"

#ifndef IDEM_VERSION
#define IDEM_VERSION "unknown"
#endif

namespace idem {
namespace {

namespace fs = std::filesystem;

constexpr char kIncompleteSuffix[] = ".incomplete";

std::string UtcStamp(int64_t ms) {
  const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &utc);
  return buf;
}

Status Errno(const std::string& what) {
  return Status::IOError(what + ": " + std::strerror(errno));
}

// Writes `text` to `path` and fsyncs it.
Status WriteSynced(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("cannot create " + path);
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Status st = Errno("cannot write " + path);
      ::close(fd);
      return st;
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    Status st = Errno("cannot sync " + path);
    ::close(fd);
    return st;
  }
  if (::close(fd) != 0) return Errno("cannot close " + path);
  return Status::Ok();
}

Status SyncDirectory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Errno("cannot open " + dir);
  const int rc = ::fsync(fd);
  Status st = rc == 0 ? Status::Ok() : Errno("cannot sync " + dir);
  ::close(fd);
  return st;
}

}  // namespace

Result<BackupManifest> WriteBackup(rocksdb::DB* db, const std::string& dir,
                                   const std::function<uint64_t()>& fence_high_water,
                                   int64_t now_ms) {
  if (dir.empty()) return Status::InvalidArgument("no backup directory given");
  std::error_code ec;
  // Absolute: a server's working directory is not the operator's.
  const fs::path target = fs::absolute(fs::path(dir), ec).lexically_normal();
  if (ec) return Status::InvalidArgument("bad backup directory " + dir + ": " + ec.message());
  const std::string final_dir = target.string();
  const std::string staging = final_dir + kIncompleteSuffix;
  for (const std::string& path : {final_dir, staging}) {
    if (fs::symlink_status(path, ec).type() != fs::file_type::not_found) {
      return Status::InvalidArgument(
          path + " already exists: give a new directory" +
          (path == staging ? " (or remove this one, left by a backup that did not finish)" : ""));
    }
  }
  const fs::path parent = target.parent_path();
  fs::create_directories(parent, ec);
  if (ec) return Status::IOError("cannot create " + parent.string() + ": " + ec.message());

  rocksdb::Checkpoint* raw = nullptr;
  if (rocksdb::Status s = rocksdb::Checkpoint::Create(db, &raw); !s.ok()) return FromRocks(s);
  std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
  // log_size_for_flush 0: always flush. The memtable (which holds every acknowledged write, in
  // async mode too) goes to a table file, so the backup does not depend on WAL pages not yet
  // synced; RocksDB still copies the WAL written between the flush and the file listing.
  if (rocksdb::Status s = checkpoint->CreateCheckpoint(staging, /*log_size_for_flush=*/0);
      !s.ok()) {
    return FromRocks(s);
  }
  BackupManifest manifest;
  manifest.created_ms = now_ms;
  manifest.created_utc = UtcStamp(now_ms);
  manifest.idemstore_version = IDEM_VERSION;
  manifest.fence_high_water = fence_high_water();
  manifest.fence_floor = manifest.fence_high_water + kBackupFenceMargin;
  uint64_t keys = 0;
  if (db->GetIntProperty("rocksdb.estimate-num-keys", &keys)) manifest.estimated_records = keys;
  if (Status st = WriteSynced(staging + "/" + kBackupManifestFile, EncodeBackupManifest(manifest));
      !st.ok()) {
    return st;
  }
  if (Status st = SyncDirectory(staging); !st.ok()) return st;
  fs::rename(staging, final_dir, ec);
  if (ec)
    return Status::IOError("cannot rename " + staging + " to " + final_dir + ": " + ec.message());
  if (Status st = SyncDirectory(parent.string()); !st.ok()) return st;
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
