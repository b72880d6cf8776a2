// A RocksDB FileSystem wrapper for the journal's tests (engine/src/journal.h opens its segments as
// random-access read-write files): makes creations, writes, syncs or deletes fail on demand,
// records the syncs and deletes in order, counts the files open, and lets a test hold a reader
// after its read.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <rocksdb/file_system.h>

namespace idem::testing {

class JournalFaultFs final : public rocksdb::FileSystemWrapper {
 public:
  JournalFaultFs() : FileSystemWrapper(rocksdb::FileSystem::Default()) {}
  const char* Name() const override { return "JournalFaultFs"; }

  std::atomic<bool> fail_writes{false};  // ENOSPC
  std::atomic<bool> fail_syncs{false};   // EIO
  // >= 0: that many more writes succeed, then every one fails (ENOSPC).
  std::atomic<int> writes_before_failure{-1};
  std::atomic<bool> fail_deletes{false};  // EIO
  std::atomic<bool> fail_creates{false};  // ENOSPC on creating a file
  std::atomic<bool> fail_opens{false};    // EIO on opening a file for reads and writes
  // Opening a directory (to sync it) fails (EIO): as a failed directory sync, to the journal.
  std::atomic<bool> fail_directories{false};
  // Syncs of this file fail (EIO). Set while no journal is syncing.
  std::string fail_syncs_of;
  // The next sync of this file fails (EIO), the ones after it succeed: as Linux reports a
  // writeback error once per open file.
  void FailNextSyncOf(std::string path) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_next_sync_of_ = std::move(path);
  }
  // While on, "sync <path>" and "delete <path>" are recorded, in order.
  std::atomic<bool> record{false};
  // Called after each read of a file, with its path, on the reading thread. Set while no read
  // is in flight; null: none.
  std::function<void(const std::string&)> after_read;
  // Called before each sync of a file, with its path, on the syncing thread. Set while no sync
  // is in flight; null: none.
  std::function<void(const std::string&)> before_sync;
  // Called before each delete of a file, with its path. Set while no delete is in flight.
  std::function<void(const std::string&)> before_delete;
  // Called before each open of a file for reads and writes, with its path. Set while no open is
  // in flight.
  std::function<void(const std::string&)> before_open;
  // Called before each open of a directory (to sync it). Set while none is in flight.
  std::function<void()> before_directory;
  // Called before each creation of a file, with its path, on the creating thread. Set while
  // none is in flight.
  std::function<void(const std::string&)> before_create;

  // Files opened for reads and writes and not closed yet; the most there were since the last
  // ResetPeakOpenFiles.
  int open_files() const { return open_files_.load(); }
  int peak_open_files() const { return peak_open_files_.load(); }
  void ResetPeakOpenFiles() { peak_open_files_ = open_files_.load(); }

  std::vector<std::string> events() const {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  // The paths synced while recording, in order.
  std::vector<std::string> synced() const {
    std::vector<std::string> paths;
    for (const std::string& event : events()) {
      if (event.rfind("sync ", 0) == 0) paths.push_back(event.substr(5));
    }
    return paths;
  }

  rocksdb::IOStatus DeleteFile(const std::string& name, const rocksdb::IOOptions& options,
                               rocksdb::IODebugContext* dbg) override {
    if (before_delete) before_delete(name);
    if (fail_deletes) return rocksdb::IOStatus::IOError("injected EIO");
    Record("delete " + name);
    return target()->DeleteFile(name, options, dbg);
  }
  rocksdb::IOStatus NewDirectory(const std::string& name, const rocksdb::IOOptions& options,
                                 std::unique_ptr<rocksdb::FSDirectory>* result,
                                 rocksdb::IODebugContext* dbg) override {
    if (before_directory) before_directory();
    if (fail_directories) return rocksdb::IOStatus::IOError("injected EIO");
    return target()->NewDirectory(name, options, result, dbg);
  }
  rocksdb::IOStatus NewWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSWritableFile>* result,
                                    rocksdb::IODebugContext* dbg) override {
    if (before_create) before_create(name);
    if (fail_creates) return rocksdb::IOStatus::NoSpace("injected ENOSPC");
    return target()->NewWritableFile(name, options, result, dbg);
  }
  rocksdb::IOStatus NewRandomRWFile(const std::string& name, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSRandomRWFile>* result,
                                    rocksdb::IODebugContext* dbg) override {
    if (before_open) before_open(name);
    if (fail_opens) return rocksdb::IOStatus::IOError("injected EIO");
    std::unique_ptr<rocksdb::FSRandomRWFile> file;
    rocksdb::IOStatus s = target()->NewRandomRWFile(name, options, &file, dbg);
    if (s.ok()) *result = std::make_unique<File>(std::move(file), this, name);
    return s;
  }

 private:
  void Record(std::string event) {
    if (!record) return;
    std::lock_guard<std::mutex> lock(mu_);
    events_.push_back(std::move(event));
  }

  class File final : public rocksdb::FSRandomRWFileOwnerWrapper {
   public:
    File(std::unique_ptr<rocksdb::FSRandomRWFile> file, JournalFaultFs* fs, std::string name)
        : FSRandomRWFileOwnerWrapper(std::move(file)), fs_(fs), name_(std::move(name)) {
      const int open = ++fs_->open_files_;
      int peak = fs_->peak_open_files_.load();
      while (open > peak && !fs_->peak_open_files_.compare_exchange_weak(peak, open)) {
      }
    }
    ~File() override { --fs_->open_files_; }
    rocksdb::IOStatus Write(uint64_t offset, const rocksdb::Slice& data,
                            const rocksdb::IOOptions& options,
                            rocksdb::IODebugContext* dbg) override {
      if (fs_->fail_writes) return rocksdb::IOStatus::NoSpace("injected ENOSPC");
      if (fs_->writes_before_failure >= 0 && fs_->writes_before_failure-- == 0) {
        fs_->fail_writes = true;
        return rocksdb::IOStatus::NoSpace("injected ENOSPC");
      }
      return FSRandomRWFileOwnerWrapper::Write(offset, data, options, dbg);
    }
    rocksdb::IOStatus Sync(const rocksdb::IOOptions& options,
                           rocksdb::IODebugContext* dbg) override {
      if (fs_->before_sync) fs_->before_sync(name_);
      if (fs_->fail_syncs || name_ == fs_->fail_syncs_of) {
        return rocksdb::IOStatus::IOError("injected EIO");
      }
      if (fs_->TakeFailNextSync(name_)) return rocksdb::IOStatus::IOError("injected EIO");
      fs_->Record("sync " + name_);
      return FSRandomRWFileOwnerWrapper::Sync(options, dbg);
    }
    rocksdb::IOStatus Read(uint64_t offset, size_t n, const rocksdb::IOOptions& options,
                           rocksdb::Slice* result, char* scratch,
                           rocksdb::IODebugContext* dbg) const override {
      rocksdb::IOStatus s =
          FSRandomRWFileOwnerWrapper::Read(offset, n, options, result, scratch, dbg);
      if (fs_->after_read) fs_->after_read(name_);
      return s;
    }

   private:
    JournalFaultFs* fs_;
    std::string name_;
  };

  bool TakeFailNextSync(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    if (path != fail_next_sync_of_) return false;
    fail_next_sync_of_.clear();
    return true;
  }

  std::atomic<int> open_files_{0};
  std::atomic<int> peak_open_files_{0};
  mutable std::mutex mu_;
  std::vector<std::string> events_;  // guarded by mu_
  std::string fail_next_sync_of_;    // guarded by mu_
};

}  // namespace idem::testing
