#include "prezeroed_wal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <optional>

namespace idem {
namespace {

constexpr size_t kZeroPiece = 64 * 1024;
const char kZeros[kZeroPiece] = {};

// pwrite(2) all of [from, to) with zeros; false on any error.
bool WriteZeros(int fd, uint64_t from, uint64_t to) {
  while (from < to) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(kZeroPiece, to - from));
    ssize_t written = ::pwrite(fd, kZeros, n, static_cast<off_t>(from));
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return false;
    from += static_cast<uint64_t>(written);
  }
  return true;
}

class PrezeroedWalFile final : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  PrezeroedWalFile(std::unique_ptr<rocksdb::FSWritableFile> file, int fd, uint64_t chunk_bytes)
      : FSWritableFileOwnerWrapper(std::move(file)), fd_(fd), chunk_bytes_(chunk_bytes) {}

  ~PrezeroedWalFile() override {
    if (fd_ >= 0) ::close(fd_);
  }

  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           rocksdb::IODebugContext* dbg) override {
    ReserveAppend(data.size());
    return target()->Append(data, options, dbg);
  }
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           const rocksdb::DataVerificationInfo& info,
                           rocksdb::IODebugContext* dbg) override {
    ReserveAppend(data.size());
    return target()->Append(data, options, info, dbg);
  }
  // Not used for WALs (direct I/O only): stop extending rather than track offsets.
  rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset,
                                     const rocksdb::IOOptions& options,
                                     rocksdb::IODebugContext* dbg) override {
    StopExtending(/*data_end_moves=*/true);
    return target()->PositionedAppend(data, offset, options, dbg);
  }
  rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset,
                                     const rocksdb::IOOptions& options,
                                     const rocksdb::DataVerificationInfo& info,
                                     rocksdb::IODebugContext* dbg) override {
    StopExtending(/*data_end_moves=*/true);
    return target()->PositionedAppend(data, offset, options, info, dbg);
  }
  rocksdb::IOStatus Truncate(uint64_t size, const rocksdb::IOOptions& options,
                             rocksdb::IODebugContext* dbg) override {
    StopExtending(/*data_end_moves=*/true);
    return target()->Truncate(size, options, dbg);
  }

  rocksdb::IOStatus Sync(const rocksdb::IOOptions& options, rocksdb::IODebugContext* dbg) override {
    rocksdb::IOStatus s = target()->Sync(options, dbg);
    if (s.ok()) MaybeExtend();
    return s;
  }
  rocksdb::IOStatus Fsync(const rocksdb::IOOptions& options,
                          rocksdb::IODebugContext* dbg) override {
    rocksdb::IOStatus s = target()->Fsync(options, dbg);
    if (s.ok()) MaybeExtend();
    return s;
  }

  rocksdb::IOStatus Close(const rocksdb::IOOptions& options,
                          rocksdb::IODebugContext* dbg) override {
    const std::optional<uint64_t> data_end = StopExtending(/*data_end_moves=*/false);
    rocksdb::IOStatus s = target()->Close(options, dbg);
    // Zeros left behind would be harmless (recovery skips them): a failed trim is no error.
    struct stat st;
    if (s.ok() && data_end && ::fstat(fd_, &st) == 0 &&
        static_cast<uint64_t>(st.st_size) > *data_end) {
      (void)::ftruncate(fd_, static_cast<off_t>(*data_end));
    }
    return s;
  }

 private:
  // Counts `n` more bytes of data, before they are written (see MaybeExtend).
  void ReserveAppend(size_t n) {
    std::lock_guard<std::mutex> lock(mu_);
    size_ += n;
  }

  // Waits for an extension in progress and allows no more. `data_end_moves`: the caller is about
  // to move the data's end other than by appending, so it is no longer known (and Close will not
  // trim). Returns where the data ends, if known.
  std::optional<uint64_t> StopExtending(bool data_end_moves) {
    std::unique_lock<std::mutex> lock(mu_);
    extended_.wait(lock, [this] { return !extending_; });
    stopped_ = true;
    if (data_end_moves) size_known_ = false;
    return size_known_ ? std::optional<uint64_t>(size_) : std::nullopt;
  }

  // After a sync: when less than half a chunk of zeros is left ahead of the data, write another
  // chunk past the data and the zeros already there, then fdatasync them.
  void MaybeExtend() {
    uint64_t from = 0, to = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_ || extending_ || zero_end_ >= size_ + chunk_bytes_ / 2) return;
      from = std::max(zero_end_, size_);
      to = from + chunk_bytes_;
      extending_ = true;
    }
    bool ok = true;
    for (uint64_t at = from; ok && at < to; at += kZeroPiece) {
      // Each piece is written under the lock that counts appends, from past the data counted so
      // far: an append that reaches a zeroed byte is counted, and so written, after the zeros.
      // Data always lands last. (A piece at a time, so an append waits 15-30 µs, not a chunk's.)
      std::lock_guard<std::mutex> lock(mu_);
      uint64_t start = std::max(at, size_);
      uint64_t end = std::min(at + kZeroPiece, to);
      if (start < end) ok = WriteZeros(fd_, start, end);
    }
    ok = ok && ::fdatasync(fd_) == 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      extending_ = false;
      if (ok) {
        zero_end_ = to;
      } else {
        stopped_ = true;  // the file works on as a plain append-only WAL
      }
    }
    extended_.notify_all();
  }

  const int fd_;
  const uint64_t chunk_bytes_;
  std::mutex mu_;
  std::condition_variable extended_;  // an extension finished
  uint64_t size_ = 0;                 // guarded by mu_: bytes of data appended (or being appended)
  uint64_t zero_end_ = 0;             // guarded by mu_: zeros were written and synced up to here
  bool extending_ = false;            // guarded by mu_: MaybeExtend is writing zeros
  bool stopped_ = false;    // guarded by mu_: no more extensions (closed, failed, untracked)
  bool size_known_ = true;  // guarded by mu_: size_ is where the data ends
};

class PrezeroedWalFileSystem final : public rocksdb::FileSystemWrapper {
 public:
  PrezeroedWalFileSystem(std::shared_ptr<rocksdb::FileSystem> base, uint64_t chunk_bytes)
      : FileSystemWrapper(std::move(base)), chunk_bytes_(chunk_bytes) {}

  const char* Name() const override { return "PrezeroedWalFileSystem"; }

  rocksdb::IOStatus NewWritableFile(const std::string& fname, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSWritableFile>* result,
                                    rocksdb::IODebugContext* dbg) override {
    rocksdb::IOStatus s = target()->NewWritableFile(fname, options, result, dbg);
    if (!s.ok() || options.use_direct_writes || !IsWalFileName(fname)) return s;
    int fd = ::open(fname.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return s;  // no second descriptor: the WAL works as a plain file
    *result = std::make_unique<PrezeroedWalFile>(std::move(*result), fd, chunk_bytes_);
    return s;
  }

 private:
  const uint64_t chunk_bytes_;
};

}  // namespace

bool IsWalFileName(const std::string& path) {
  size_t slash = path.find_last_of('/');
  std::string_view name = slash == std::string::npos ? std::string_view(path)
                                                     : std::string_view(path).substr(slash + 1);
  constexpr std::string_view kSuffix = ".log";
  if (name.size() <= kSuffix.size() || !name.ends_with(kSuffix)) return false;
  name.remove_suffix(kSuffix.size());
  return std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::shared_ptr<rocksdb::FileSystem> NewPrezeroedWalFileSystem(
    std::shared_ptr<rocksdb::FileSystem> base, uint64_t chunk_bytes) {
  return std::make_shared<PrezeroedWalFileSystem>(std::move(base), chunk_bytes);
}

}  // namespace idem
