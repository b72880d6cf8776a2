#include "journal_saved_index.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string_view>

#include <rocksdb/file_system.h>

#include "coding.h"
#include "crc32c.h"
#include "rocks_status.h"

namespace idem::journal {
namespace {

constexpr std::string_view kMagic = "IDEMJIDX";
// Version 2 added the deletes' needs; a file of version 1 reads with none.
constexpr uint32_t kVersion = 2;
constexpr uint32_t kOldestVersion = 1;
constexpr size_t kSavedSegmentBytes = 8 + 4 + 8 + 8 + 8 + 8;  // one segment in the head
constexpr size_t kBucketBytes = 16;

std::string PathOf(const std::string& dir, std::string_view name) {
  return dir + "/" + std::string(name);
}

void PutFixed32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>(v >> (8 * i)));
}

uint32_t DecodeFixed32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

// Reads the file front to back, counting what is left so that no count read from it makes
// anything larger than the file could fill.
class SavedIndexReader {
 public:
  SavedIndexReader(std::unique_ptr<rocksdb::FSSequentialFile> file, uint64_t size)
      : file_(std::move(file)), left_(size) {}

  uint64_t left() const { return left_; }
  // Appends the next `n` bytes to `out`. Corruption if the file has fewer left.
  Status Take(uint64_t n, std::string* out) {
    if (n > left_) return Status::Corruption("it ends early");
    const size_t start = out->size();
    out->resize(start + n);
    rocksdb::Slice read;
    rocksdb::IOStatus s = file_->Read(n, rocksdb::IOOptions(), &read, out->data() + start, nullptr);
    if (!s.ok()) return FromRocks(s);
    if (read.size() != n) return Status::IOError("a read came back short");
    if (read.data() != out->data() + start) std::memcpy(out->data() + start, read.data(), n);
    left_ -= n;
    return Status::Ok();
  }

 private:
  std::unique_ptr<rocksdb::FSSequentialFile> file_;
  uint64_t left_;
};

Status CheckCrc(std::string_view covered, std::string_view stored, const char* what) {
  if (MaskCrc(Crc32c(covered)) != DecodeFixed32(stored.data())) {
    return Status::Corruption(std::string(what) + " does not match its checksum");
  }
  return Status::Ok();
}

Result<SavedJournal> DecodeHead(std::string_view head, uint32_t version) {
  SavedJournal journal;
  // Fixed-width throughout: decoded by offsets, each count checked against what is left.
  size_t at = 0;
  auto need = [&](uint64_t n) { return head.size() - at >= n; };
  auto u64 = [&] {
    const uint64_t v = coding::DecodeFixed64(head.data() + at);
    at += 8;
    return v;
  };
  auto u32 = [&] {
    const uint32_t v = DecodeFixed32(head.data() + at);
    at += 4;
    return v;
  };
  if (!need(12)) return Status::Corruption("its head is cut short");
  journal.last_sequence = u64();
  const uint32_t segments = u32();
  if (segments == 0 || segments > JournalIndex::kMaxSegments ||
      !need(uint64_t{segments} * kSavedSegmentBytes)) {
    return Status::Corruption("its head lists " + std::to_string(segments) + " segments");
  }
  journal.segments.resize(segments);
  for (Journal::SegmentInfo& s : journal.segments) {
    s.number = u64();
    s.id = u32();
    s.end_offset = u64();
    s.max_keep_until_ms = static_cast<int64_t>(u64());
    s.entries_offset = u64();
    s.salt = u64();
  }
  auto decode_needs = [&](NeedsBySegment* out) -> Status {
    if (!need(4)) return Status::Corruption("its head is cut short");
    const uint32_t with_needs = u32();
    if (with_needs > segments || !need(uint64_t{with_needs} * 8)) {
      return Status::Corruption("its head lists needs of " + std::to_string(with_needs) +
                                " segments");
    }
    for (uint32_t i = 0; i < with_needs; ++i) {
      if (!need(8)) return Status::Corruption("its head is cut short");
      const uint32_t id = u32();
      const uint32_t buckets = u32();
      if (!need(uint64_t{buckets} * kBucketBytes)) {
        return Status::Corruption("its head is cut short");
      }
      std::map<int64_t, uint64_t>& needs = (*out)[id];
      for (uint32_t b = 0; b < buckets; ++b) {
        const auto keep_until = static_cast<int64_t>(u64());
        needs[keep_until] = u64();
      }
    }
    return Status::Ok();
  };
  if (Status st = decode_needs(&journal.needs); !st.ok()) return st;
  if (version >= 2) {
    if (Status st = decode_needs(&journal.delete_needs); !st.ok()) return st;
  }
  if (at != head.size()) return Status::Corruption("its head has bytes past its end");
  return journal;
}

}  // namespace

Status WriteSavedIndex(rocksdb::FileSystem* fs, const std::string& dir, const SavedJournal& journal,
                       const std::vector<std::vector<uint64_t>>& tables) {
  if (tables.size() != JournalIndex::kShards) {
    return Status::InvalidArgument("a saved index needs every shard of the index");
  }
  std::string head;
  coding::PutFixed64(&head, journal.last_sequence);
  PutFixed32(&head, static_cast<uint32_t>(journal.segments.size()));
  for (const Journal::SegmentInfo& s : journal.segments) {
    coding::PutFixed64(&head, s.number);
    PutFixed32(&head, s.id);
    coding::PutFixed64(&head, s.end_offset);
    coding::PutFixed64(&head, static_cast<uint64_t>(s.max_keep_until_ms));
    coding::PutFixed64(&head, s.entries_offset);
    coding::PutFixed64(&head, s.salt);
  }
  for (const NeedsBySegment* section : {&journal.needs, &journal.delete_needs}) {
    PutFixed32(&head, static_cast<uint32_t>(section->size()));
    for (const auto& [id, needs] : *section) {
      PutFixed32(&head, id);
      PutFixed32(&head, static_cast<uint32_t>(needs.size()));
      for (const auto& [keep_until, bytes] : needs) {
        coding::PutFixed64(&head, static_cast<uint64_t>(keep_until));
        coding::PutFixed64(&head, bytes);
      }
    }
  }
  std::string out(kMagic);
  PutFixed32(&out, kVersion);
  PutFixed32(&out, static_cast<uint32_t>(head.size()));
  out += head;
  PutFixed32(&out, MaskCrc(Crc32c(head)));

  const std::string tmp = PathOf(dir, std::string(kSavedIndexName) + ".tmp");
  const rocksdb::IOOptions io;
  std::unique_ptr<rocksdb::FSWritableFile> file;
  rocksdb::IOStatus s = fs->NewWritableFile(tmp, rocksdb::FileOptions(), &file, nullptr);
  if (s.ok()) s = file->Append(out, io, nullptr);
  for (size_t shard = 0; s.ok() && shard < JournalIndex::kShards; ++shard) {
    const std::vector<uint64_t>& table = tables[shard];
    const size_t entries = table.size() - std::count(table.begin(), table.end(), uint64_t{0});
    out.clear();
    out.reserve(8 + entries * 8 + 4);
    PutFixed32(&out, static_cast<uint32_t>(table.size()));
    PutFixed32(&out, static_cast<uint32_t>(entries));
    for (uint64_t slot : table) {
      if (slot != 0) coding::PutFixed64(&out, slot);
    }
    PutFixed32(&out, MaskCrc(Crc32c(out)));
    s = file->Append(out, io, nullptr);
  }
  if (s.ok()) s = file->Sync(io, nullptr);
  if (s.ok()) s = file->Close(io, nullptr);
  if (s.ok()) s = fs->RenameFile(tmp, PathOf(dir, kSavedIndexName), io, nullptr);
  if (s.ok()) s = SyncDirectory(fs, dir);
  if (!s.ok()) {
    (void)fs->DeleteFile(tmp, io, nullptr);
    return Status::IOError(tmp + ": " + FromRocks(s).message());
  }
  return Status::Ok();
}

Result<std::optional<SavedJournal>> ReadSavedIndex(rocksdb::FileSystem* fs, const std::string& dir,
                                                   JournalIndex* index) {
  const std::string path = PathOf(dir, kSavedIndexName);
  const rocksdb::IOOptions io;
  rocksdb::IOStatus exists = fs->FileExists(path, io, nullptr);
  if (exists.IsNotFound()) return std::optional<SavedJournal>();
  uint64_t size = 0;
  if (exists.ok()) exists = fs->GetFileSize(path, io, &size, nullptr);
  std::unique_ptr<rocksdb::FSSequentialFile> file;
  if (exists.ok()) exists = fs->NewSequentialFile(path, rocksdb::FileOptions(), &file, nullptr);
  if (!exists.ok()) return Status::IOError(path + ": " + FromRocks(exists).message());
  SavedIndexReader in(std::move(file), size);
  auto fail = [&](const Status& why) -> Status {
    index->Clear();
    return why.IsCorruption() ? Status::Corruption(path + ": " + why.message())
                              : Status::IOError(path + ": " + why.message());
  };
  std::string bytes;
  if (Status s = in.Take(kMagic.size() + 8, &bytes); !s.ok()) return fail(s);
  if (std::string_view(bytes).substr(0, kMagic.size()) != kMagic) {
    return fail(Status::Corruption("it is not a saved index"));
  }
  const uint32_t version = DecodeFixed32(bytes.data() + kMagic.size());
  if (version < kOldestVersion || version > kVersion) {
    return fail(Status::Corruption("it is of version " + std::to_string(version) + ", not " +
                                   std::to_string(kOldestVersion) + " to " +
                                   std::to_string(kVersion)));
  }
  const uint32_t head_bytes = DecodeFixed32(bytes.data() + kMagic.size() + 4);
  bytes.clear();
  if (Status s = in.Take(uint64_t{head_bytes} + 4, &bytes); !s.ok()) return fail(s);
  const std::string_view head = std::string_view(bytes).substr(0, head_bytes);
  if (Status s = CheckCrc(head, std::string_view(bytes).substr(head_bytes), "its head"); !s.ok()) {
    return fail(s);
  }
  Result<SavedJournal> journal = DecodeHead(head, version);
  if (!journal.ok()) return fail(journal.status());
  JournalIndex::ShardImage image;
  for (size_t shard = 0; shard < JournalIndex::kShards; ++shard) {
    bytes.clear();
    if (Status s = in.Take(8, &bytes); !s.ok()) return fail(s);
    image.slots = DecodeFixed32(bytes.data());
    const uint32_t entries = DecodeFixed32(bytes.data() + 4);
    if (uint64_t{entries} * 8 + 4 > in.left()) {
      return fail(Status::Corruption("shard " + std::to_string(shard) + " says " +
                                     std::to_string(entries) + " entries, more than it holds"));
    }
    if (Status s = in.Take(uint64_t{entries} * 8 + 4, &bytes); !s.ok()) return fail(s);
    const std::string_view covered = std::string_view(bytes).substr(0, bytes.size() - 4);
    if (Status s = CheckCrc(covered, std::string_view(bytes).substr(covered.size()),
                            ("shard " + std::to_string(shard)).c_str());
        !s.ok()) {
      return fail(s);
    }
    image.entries.resize(entries);
    for (uint32_t i = 0; i < entries; ++i) {
      image.entries[i] = coding::DecodeFixed64(bytes.data() + 8 + 8 * size_t{i});
    }
    if (!index->Import(shard, image)) {
      return fail(Status::Corruption("shard " + std::to_string(shard) + " is not an index's"));
    }
  }
  if (in.left() != 0) return fail(Status::Corruption("it has bytes past its end"));
  return std::optional<SavedJournal>(std::move(*journal));
}

namespace {

Status DeleteIfThere(rocksdb::FileSystem* fs, const std::string& path) {
  const rocksdb::IOOptions io;
  rocksdb::IOStatus s = fs->FileExists(path, io, nullptr);
  if (s.IsNotFound()) return Status::Ok();
  if (s.ok()) s = fs->DeleteFile(path, io, nullptr);
  return s.ok() ? Status::Ok() : Status::IOError(path + ": " + FromRocks(s).message());
}

}  // namespace

Status DeleteUnfinishedSave(rocksdb::FileSystem* fs, const std::string& dir) {
  return DeleteIfThere(fs, PathOf(dir, std::string(kSavedIndexName) + ".tmp"));
}

Status DeleteSavedIndex(rocksdb::FileSystem* fs, const std::string& dir) {
  return DeleteIfThere(fs, PathOf(dir, kSavedIndexName));
}

}  // namespace idem::journal
