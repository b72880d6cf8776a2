// A file mapped read-only, and copies out of it that turn the fault of a page the file no longer
// has into an error instead of a crash.
//
// Why map: a record read from the page cache with pread costs a system call, ~40 % of a
// duplicate insert's time under the journal layout (docs/performance.md); out of a mapping it is
// a copy. The price: a page that cannot be had (the file was truncated under the mapping, or the
// disk failed to read it) raises SIGBUS in the reader instead of returning an error. CopyOut
// catches exactly that: the first Map installs a process-wide SIGBUS handler that returns into
// the copy that faulted, and passes any other SIGBUS on to the handler that was there before it
// (or to the default action: the process dies as it would have). A program that replaces the
// handler afterwards loses that protection, not the data: docs/embedding.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "idem/result.h"

namespace idem {

class MappedFile {
 public:
  // Maps `path` read-only, at least `min_length` bytes of it (more if the file is larger): a file
  // that will grow is mapped at the size it may reach, and its new bytes show in the mapping as
  // they are written (one page cache). Pages wholly past the file's end must not be read; CopyOut
  // fails on them. The descriptor is closed before this returns: a mapping holds none. IOError
  // naming the path if the file cannot be opened, sized or mapped.
  static Result<std::shared_ptr<const MappedFile>> Map(const std::string& path,
                                                       uint64_t min_length);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  uint64_t length() const { return length_; }
  // Copies `bytes` bytes at `offset` into `out` (resized to them). InvalidArgument past
  // length(); IOError if a page of them could not be read: the file is shorter than it was, or
  // the disk failed. `out` is empty after a failure.
  Status CopyOut(uint64_t offset, size_t bytes, std::string* out) const;

 private:
  MappedFile(const char* base, uint64_t length, std::string path)
      : base_(base), length_(length), path_(std::move(path)) {}

  const char* const base_;
  const uint64_t length_;
  const std::string path_;
};

}  // namespace idem
