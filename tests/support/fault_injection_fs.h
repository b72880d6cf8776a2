// A RocksDB FileSystem wrapper for tests that makes chosen file operations fail, switchable while
// the database runs: ENOSPC on WAL appends, EIO on WAL syncs, ENOSPC on table-file writes (flush
// and compaction), failures to create any file (a full disk at open), ENOSPC on any write under
// a chosen directory (a backup's). The errors are the ones
// RocksDB's POSIX file system returns for those errnos (NoSpace for ENOSPC, IOError for EIO), so
// RocksDB handles them as it would a real failing disk.
//
// Engines open on it through OpenEngineOnFileSystem (engine/src/engine_open.h).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include <rocksdb/file_system.h>

#include "prezeroed_wal.h"  // IsWalFileName

namespace idem::testing {

class FaultInjectionFs final : public rocksdb::FileSystemWrapper {
 public:
  enum class Fault { kNone, kNoSpace, kIoError };

  explicit FaultInjectionFs(
      std::shared_ptr<rocksdb::FileSystem> base = rocksdb::FileSystem::Default())
      : FileSystemWrapper(std::move(base)) {}
  const char* Name() const override { return "FaultInjectionFs"; }

  // Each takes effect for calls that start afterwards, until set back to kNone.
  void FailWalAppends(Fault f) { wal_append_ = f; }
  void FailWalSyncs(Fault f) { wal_sync_ = f; }
  void FailTableWrites(Fault f) { table_write_ = f; }
  void FailFileCreation(Fault f) { create_ = f; }
  void FailInfoLogWrites(Fault f) { info_log_ = f; }
  // Appends to files created under `prefix` (a directory path and '/'...: a backup being
  // written, say), whatever their kind.
  void FailWritesUnder(const std::string& prefix, Fault f) {
    std::lock_guard<std::mutex> lock(hook_mu_);
    under_prefix_ = prefix;
    under_ = f;
  }
  // Renames of the file or directory `from`, and syncs of the directory `dir` (its entries),
  // fail with EIO. Empty: none.
  void FailRenamesOf(const std::string& from) {
    std::lock_guard<std::mutex> lock(hook_mu_);
    rename_from_ = from;
  }
  void FailDirectorySyncsOf(const std::string& dir) {
    std::lock_guard<std::mutex> lock(hook_mu_);
    directory_sync_ = dir;
  }
  void ClearAll() {
    wal_append_ = wal_sync_ = table_write_ = create_ = info_log_ = Fault::kNone;
    FailWritesUnder("", Fault::kNone);
    FailRenamesOf("");
    FailDirectorySyncsOf("");
  }
  // Called at the start of every WAL sync, on the syncing thread (so a test can hold a sync in
  // flight); returning true fails that sync with EIO. Null: none.
  void OnWalSync(std::function<bool()> hook) {
    std::lock_guard<std::mutex> lock(hook_mu_);
    wal_sync_hook_ = std::move(hook);
  }
  // Called after a writable file was created, with its name, on the creating thread. Null: none.
  void OnCreate(std::function<void(const std::string&)> hook) {
    std::lock_guard<std::mutex> lock(hook_mu_);
    create_hook_ = std::move(hook);
  }
  // Calls failed so far.
  int injected() const { return injected_.load(); }

  rocksdb::IOStatus NewWritableFile(const std::string& fname, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSWritableFile>* result,
                                    rocksdb::IODebugContext* dbg) override {
    if (rocksdb::IOStatus s = Inject(create_, "While open a file for appending", fname); !s.ok()) {
      return s;
    }
    rocksdb::IOStatus s = target()->NewWritableFile(fname, options, result, dbg);
    if (!s.ok()) return s;
    {
      std::function<void(const std::string&)> hook;
      Fault under = Fault::kNone;
      {
        std::lock_guard<std::mutex> lock(hook_mu_);
        hook = create_hook_;
        if (!under_prefix_.empty() && fname.rfind(under_prefix_, 0) == 0) under = under_;
      }
      if (hook) hook(fname);
      if (under != Fault::kNone) {
        *result = std::make_unique<File>(std::move(*result), this, fname, Kind::kChosen, under);
        return s;
      }
    }
    const bool wal = IsWalFileName(fname);
    const bool table = fname.size() > 4 && fname.compare(fname.size() - 4, 4, ".sst") == 0;
    const bool info_log = fname.size() >= 4 && fname.compare(fname.size() - 4, 4, "/LOG") == 0;
    if (wal || table || info_log) {
      *result = std::make_unique<File>(std::move(*result), this, fname,
                                       wal     ? Kind::kWal
                                       : table ? Kind::kTable
                                               : Kind::kInfoLog);
    }
    return s;
  }
  rocksdb::IOStatus RenameFile(const std::string& from, const std::string& to,
                               const rocksdb::IOOptions& options,
                               rocksdb::IODebugContext* dbg) override {
    if (Chosen(rename_from_, from)) {
      return Inject(Fault::kIoError, "While renaming a file to " + to, from);
    }
    return target()->RenameFile(from, to, options, dbg);
  }
  rocksdb::IOStatus NewDirectory(const std::string& name, const rocksdb::IOOptions& options,
                                 std::unique_ptr<rocksdb::FSDirectory>* result,
                                 rocksdb::IODebugContext* dbg) override {
    rocksdb::IOStatus s = target()->NewDirectory(name, options, result, dbg);
    if (s.ok() && Chosen(directory_sync_, name)) {
      *result = std::make_unique<Directory>(std::move(*result), this, name);
    }
    return s;
  }
  // FileSystemWrapper would let the base open the LOG, past this wrapper.
  rocksdb::IOStatus NewLogger(const std::string& fname, const rocksdb::IOOptions& options,
                              std::shared_ptr<rocksdb::Logger>* result,
                              rocksdb::IODebugContext* dbg) override {
    return rocksdb::FileSystem::NewLogger(fname, options, result, dbg);
  }

 private:
  enum class Kind { kWal, kTable, kInfoLog, kChosen };
  class File final : public rocksdb::FSWritableFileOwnerWrapper {
   public:
    File(std::unique_ptr<rocksdb::FSWritableFile> f, FaultInjectionFs* fs, std::string name,
         Kind kind, Fault chosen = Fault::kNone)
        : FSWritableFileOwnerWrapper(std::move(f)),
          fs_(fs),
          name_(std::move(name)),
          kind_(kind),
          chosen_(chosen) {}

    rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                             rocksdb::IODebugContext* dbg) override {
      if (auto s = fs_->Inject(WriteFault(), "While appending to file", name_); !s.ok()) return s;
      return target()->Append(data, o, dbg);
    }
    rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& o,
                             const rocksdb::DataVerificationInfo& info,
                             rocksdb::IODebugContext* dbg) override {
      if (auto s = fs_->Inject(WriteFault(), "While appending to file", name_); !s.ok()) return s;
      return target()->Append(data, o, info, dbg);
    }
    rocksdb::IOStatus Sync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
      if (auto s = fs_->Inject(SyncFault(), "While fdatasync", name_); !s.ok()) return s;
      return target()->Sync(o, dbg);
    }
    rocksdb::IOStatus Fsync(const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override {
      if (auto s = fs_->Inject(SyncFault(), "While fsync", name_); !s.ok()) return s;
      return target()->Fsync(o, dbg);
    }

   private:
    Fault SyncFault() const {
      if (kind_ == Kind::kWal && fs_->RunWalSyncHook()) return Fault::kIoError;
      return kind_ == Kind::kWal ? fs_->wal_sync_.load() : WriteFault();
    }
    Fault WriteFault() const {
      switch (kind_) {
        case Kind::kWal:
          return fs_->wal_append_.load();
        case Kind::kTable:
          return fs_->table_write_.load();
        case Kind::kInfoLog:
          return fs_->info_log_.load();
        case Kind::kChosen:
          return chosen_;
      }
      return Fault::kNone;
    }
    FaultInjectionFs* const fs_;
    const std::string name_;
    const Kind kind_;
    const Fault chosen_;  // kChosen: FailWritesUnder's fault when the file was created
  };

  // A directory whose syncs fail (FailDirectorySyncsOf).
  class Directory final : public rocksdb::FSDirectoryWrapper {
   public:
    Directory(std::unique_ptr<rocksdb::FSDirectory> d, FaultInjectionFs* fs, std::string name)
        : FSDirectoryWrapper(std::move(d)), fs_(fs), name_(std::move(name)) {}
    rocksdb::IOStatus Fsync(const rocksdb::IOOptions&, rocksdb::IODebugContext*) override {
      return fs_->Inject(Fault::kIoError, "While fsync a directory", name_);
    }
    rocksdb::IOStatus FsyncWithDirOptions(const rocksdb::IOOptions&, rocksdb::IODebugContext*,
                                          const rocksdb::DirFsyncOptions&) override {
      return fs_->Inject(Fault::kIoError, "While fsync a directory", name_);
    }

   private:
    FaultInjectionFs* const fs_;
    const std::string name_;
  };

  bool Chosen(const std::string& chosen, const std::string& path) {
    std::lock_guard<std::mutex> lock(hook_mu_);
    return !chosen.empty() && path == chosen;
  }

  bool RunWalSyncHook() {
    std::function<bool()> hook;
    {
      std::lock_guard<std::mutex> lock(hook_mu_);
      hook = wal_sync_hook_;
    }
    return hook && hook();
  }

  rocksdb::IOStatus Inject(Fault f, const std::string& context, const std::string& file) {
    switch (f) {
      case Fault::kNone:
        return rocksdb::IOStatus::OK();
      case Fault::kNoSpace:
        ++injected_;
        return rocksdb::IOStatus::NoSpace(context, file + ": No space left on device");
      case Fault::kIoError:
        ++injected_;
        return rocksdb::IOStatus::IOError(context, file + ": Input/output error");
    }
    return rocksdb::IOStatus::OK();
  }

  std::atomic<Fault> wal_append_{Fault::kNone};
  std::atomic<Fault> wal_sync_{Fault::kNone};
  std::atomic<Fault> table_write_{Fault::kNone};
  std::atomic<Fault> create_{Fault::kNone};
  std::atomic<Fault> info_log_{Fault::kNone};
  std::atomic<int> injected_{0};
  std::mutex hook_mu_;
  std::function<bool()> wal_sync_hook_;                  // guarded by hook_mu_
  std::function<void(const std::string&)> create_hook_;  // guarded by hook_mu_
  std::string under_prefix_;                             // guarded by hook_mu_
  Fault under_ = Fault::kNone;                           // guarded by hook_mu_
  std::string rename_from_;                              // guarded by hook_mu_
  std::string directory_sync_;                           // guarded by hook_mu_
};

}  // namespace idem::testing
