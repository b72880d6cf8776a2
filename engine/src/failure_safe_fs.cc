#include "failure_safe_fs.h"

#include <string>
#include <string_view>

#include "prezeroed_wal.h"

namespace idem {
namespace {

// A WAL file: a failed append reaches WriteHealth before RocksDB.
class WalFile final : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  WalFile(std::unique_ptr<rocksdb::FSWritableFile> file, WriteHealth* health)
      : FSWritableFileOwnerWrapper(std::move(file)), health_(health) {}

  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           rocksdb::IODebugContext* dbg) override {
    return Checked(target()->Append(data, options, dbg));
  }
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           const rocksdb::DataVerificationInfo& info,
                           rocksdb::IODebugContext* dbg) override {
    return Checked(target()->Append(data, options, info, dbg));
  }
  rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset,
                                     const rocksdb::IOOptions& options,
                                     rocksdb::IODebugContext* dbg) override {
    return Checked(target()->PositionedAppend(data, offset, options, dbg));
  }
  rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset,
                                     const rocksdb::IOOptions& options,
                                     const rocksdb::DataVerificationInfo& info,
                                     rocksdb::IODebugContext* dbg) override {
    return Checked(target()->PositionedAppend(data, offset, options, info, dbg));
  }

 private:
  rocksdb::IOStatus Checked(rocksdb::IOStatus s) {
    if (!s.ok()) health_->WalAppendFailed(s.ToString());
    return s;
  }
  WriteHealth* const health_;
};

// The info LOG: write errors are dropped (see the header).
class InfoLogFile final : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  using FSWritableFileOwnerWrapper::FSWritableFileOwnerWrapper;

  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           rocksdb::IODebugContext* dbg) override {
    target()->Append(data, options, dbg).PermitUncheckedError();
    return rocksdb::IOStatus::OK();
  }
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           const rocksdb::DataVerificationInfo& info,
                           rocksdb::IODebugContext* dbg) override {
    target()->Append(data, options, info, dbg).PermitUncheckedError();
    return rocksdb::IOStatus::OK();
  }
  rocksdb::IOStatus Flush(const rocksdb::IOOptions& options,
                          rocksdb::IODebugContext* dbg) override {
    target()->Flush(options, dbg).PermitUncheckedError();
    return rocksdb::IOStatus::OK();
  }
  rocksdb::IOStatus Sync(const rocksdb::IOOptions& options, rocksdb::IODebugContext* dbg) override {
    target()->Sync(options, dbg).PermitUncheckedError();
    return rocksdb::IOStatus::OK();
  }
  rocksdb::IOStatus Fsync(const rocksdb::IOOptions& options,
                          rocksdb::IODebugContext* dbg) override {
    target()->Fsync(options, dbg).PermitUncheckedError();
    return rocksdb::IOStatus::OK();
  }
};

bool IsInfoLogName(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return std::string_view(path).substr(slash == std::string::npos ? 0 : slash + 1) == "LOG";
}

class FailureSafeFileSystem final : public rocksdb::FileSystemWrapper {
 public:
  FailureSafeFileSystem(std::shared_ptr<rocksdb::FileSystem> base,
                        std::shared_ptr<WriteHealth> health)
      : FileSystemWrapper(std::move(base)), health_(std::move(health)) {}

  const char* Name() const override { return "FailureSafeFileSystem"; }

  rocksdb::IOStatus NewWritableFile(const std::string& fname, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSWritableFile>* result,
                                    rocksdb::IODebugContext* dbg) override {
    rocksdb::IOStatus s = target()->NewWritableFile(fname, options, result, dbg);
    if (!s.ok()) return s;
    if (IsWalFileName(fname)) {
      *result = std::make_unique<WalFile>(std::move(*result), health_.get());
    } else if (IsInfoLogName(fname)) {
      *result = std::make_unique<InfoLogFile>(std::move(*result));
    }
    return s;
  }
  rocksdb::IOStatus ReuseWritableFile(const std::string& fname, const std::string& old_fname,
                                      const rocksdb::FileOptions& options,
                                      std::unique_ptr<rocksdb::FSWritableFile>* result,
                                      rocksdb::IODebugContext* dbg) override {
    rocksdb::IOStatus s = target()->ReuseWritableFile(fname, old_fname, options, result, dbg);
    if (s.ok() && IsWalFileName(fname)) {
      *result = std::make_unique<WalFile>(std::move(*result), health_.get());
    }
    return s;
  }
  // FileSystemWrapper would forward to the base, whose logger opens its file there, past this
  // layer; FileSystem's own NewLogger opens it through NewWritableFile above.
  rocksdb::IOStatus NewLogger(const std::string& fname, const rocksdb::IOOptions& options,
                              std::shared_ptr<rocksdb::Logger>* result,
                              rocksdb::IODebugContext* dbg) override {
    return rocksdb::FileSystem::NewLogger(fname, options, result, dbg);
  }

 private:
  const std::shared_ptr<WriteHealth> health_;
};

}  // namespace

std::shared_ptr<rocksdb::FileSystem> NewFailureSafeFileSystem(
    std::shared_ptr<rocksdb::FileSystem> base, std::shared_ptr<WriteHealth> health) {
  return std::make_shared<FailureSafeFileSystem>(std::move(base), std::move(health));
}

}  // namespace idem
