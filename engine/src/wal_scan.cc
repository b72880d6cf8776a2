#include "wal_scan.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <utility>

#include "coding.h"
#include "crc32c.h"
#include "prezeroed_wal.h"

namespace idem {
namespace {

constexpr size_t kBlockSize = 32 * 1024;
constexpr size_t kHeaderSize = 7;
constexpr size_t kBatchHeaderSize = 12;  // a WriteBatch's sequence number (8) and count (4)

enum RecordType : uint8_t {
  kZeroType = 0,
  kFullType = 1,
  kFirstType = 2,
  kMiddleType = 3,
  kLastType = 4,
  // 5..8: the recyclable variants, with a longer header (WAL recycling, which the engine refuses)
  kSetCompressionType = 9,
};

uint32_t DecodeFixed32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

uint64_t DecodeFixed64(const char* p) {
  return DecodeFixed32(p) | (static_cast<uint64_t>(DecodeFixed32(p + 4)) << 32);
}

// A WriteBatch's operation types (RocksDB db/dbformat.h ValueType, as db/write_batch.cc writes
// them into the WAL).
enum BatchType : uint8_t {
  kDeletion = 0x0,
  kValue = 0x1,
  kMerge = 0x2,
  kLogData = 0x3,
  kColumnFamilyDeletion = 0x4,
  kColumnFamilyValue = 0x5,
  kColumnFamilyMerge = 0x6,
  kSingleDeletion = 0x7,
  kColumnFamilySingleDeletion = 0x8,
  kBeginPrepareXid = 0x9,
  kEndPrepareXid = 0xA,
  kCommitXid = 0xB,
  kRollbackXid = 0xC,
  kNoop = 0xD,
  kColumnFamilyRangeDeletion = 0xE,
  kRangeDeletion = 0xF,
  kColumnFamilyBlobIndex = 0x10,
  kBlobIndex = 0x11,
  kBeginPersistedPrepareXid = 0x12,
  kBeginUnprepareXid = 0x13,
  kCommitXidAndTimestamp = 0x15,
  kWideColumnEntity = 0x16,
  kColumnFamilyWideColumnEntity = 0x17,
};

// The operations of the WriteBatch `batch` that write a column family other than default. Each
// entry is its type byte; for the column-family types the family's id (varint32); then its
// length-prefixed strings (key, value, ...). Counting stops at a type not listed here.
uint64_t OtherFamilyOperations(std::string_view batch) {
  if (batch.size() < kBatchHeaderSize) return 0;
  coding::Reader in(batch.substr(kBatchHeaderSize));
  uint64_t count = 0;
  uint8_t type = 0;
  while (in.GetByte(&type)) {
    bool family = false;
    int strings = 0;
    switch (type) {
      case kColumnFamilyDeletion:
      case kColumnFamilySingleDeletion:
        family = true;
        strings = 1;
        break;
      case kColumnFamilyValue:
      case kColumnFamilyMerge:
      case kColumnFamilyRangeDeletion:
      case kColumnFamilyBlobIndex:
      case kColumnFamilyWideColumnEntity:
        family = true;
        strings = 2;
        break;
      case kDeletion:
      case kSingleDeletion:
      case kLogData:
      case kEndPrepareXid:
      case kCommitXid:
      case kRollbackXid:
        strings = 1;
        break;
      case kValue:
      case kMerge:
      case kRangeDeletion:
      case kBlobIndex:
      case kWideColumnEntity:
      case kCommitXidAndTimestamp:
        strings = 2;
        break;
      case kBeginPrepareXid:
      case kNoop:
      case kBeginPersistedPrepareXid:
      case kBeginUnprepareXid:
        break;
      default:
        return count;
    }
    uint64_t id = 0;
    if (family && !in.GetVarint64(&id)) return count;
    std::string_view skipped;
    for (int i = 0; i < strings; ++i) {
      if (!in.GetLengthPrefixed(&skipped)) return count;
    }
    if (id != 0) count++;
  }
  return count;
}

bool AllZero(std::string_view bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](char c) { return c == 0; });
}

// Follows the physical records block by block, as RocksDB's log::Reader does: after a bad
// record it drops the rest of the block and goes on with the next.
class Scanner {
 public:
  // `bytes` is the block at file offset `base`; `last`: the file ends with it.
  void Block(std::string_view bytes, uint64_t base, bool last) {
    size_t pos = 0;
    while (pos < bytes.size()) {
      const uint64_t at = base + pos;
      const std::string_view rest = bytes.substr(pos);
      if (rest.size() < kHeaderSize) {
        // A full block's trailer is padding; at the end of the file it is a header cut off.
        if (last && !AllZero(rest)) EndsInsideRecord(at);
        return;
      }
      const uint32_t length = static_cast<uint8_t>(rest[4]) |
                              (static_cast<uint32_t>(static_cast<uint8_t>(rest[5])) << 8);
      const uint8_t type = static_cast<uint8_t>(rest[6]);
      if (type == kZeroType && length == 0) {
        if (AllZero(rest)) {
          Zeros(at);
        } else {
          Damaged(RecordStart(at), "non-zero bytes after a zero header");  // recovery skips them
        }
        return;
      }
      if (kHeaderSize + length > rest.size()) {
        if (last) {
          EndsInsideRecord(at);
        } else {
          Damaged(RecordStart(at), "bad record length");
        }
        return;
      }
      const std::string_view payload = rest.substr(kHeaderSize, length);
      if (UnmaskCrc(DecodeFixed32(rest.data())) != Crc32c(rest.substr(6, 1 + length))) {
        Damaged(RecordStart(at), "checksum mismatch");
        return;
      }
      Physical(type, at, at + kHeaderSize + length, payload);
      pos += kHeaderSize + length;
    }
  }

  WalScan Finish(uint64_t file_bytes) {
    // A fragmented record still open at the end: its last fragment was never written.
    if (in_fragment_) EndsInsideRecord(file_bytes);
    scan_.file_bytes = file_bytes;
    return scan_;
  }

 private:
  uint64_t RecordStart(uint64_t at) const { return in_fragment_ ? fragment_start_ : at; }

  void Damaged(uint64_t offset, std::string what) {
    if (!scan_.damage) scan_.damage = WalScan::Damage{offset, std::move(what)};
    in_fragment_ = false;
    fragment_after_damage_ = false;
  }

  void EndsInsideRecord(uint64_t at) {
    scan_.ends_inside_record = true;
    Damaged(RecordStart(at), "the file ends inside a record");
  }

  // A zero header: zeros to the end of the block. The end of the log, unless records follow.
  void Zeros(uint64_t at) {
    fragment_after_damage_ = false;
    if (scan_.damage) return;
    if (in_fragment_) {
      Damaged(fragment_start_, "a record torn off by zeros");
    } else if (!zeros_at_) {
      zeros_at_ = at;
    }
  }

  void Physical(uint8_t type, uint64_t start, uint64_t end, std::string_view payload) {
    if (!scan_.damage) {
      if (zeros_at_) {
        Damaged(*zeros_at_, "zeros where records should be");
      } else if ((type == kFullType || type == kFirstType) && in_fragment_) {
        Damaged(fragment_start_, "a fragmented record without its end");
      } else if ((type == kMiddleType || type == kLastType) && !in_fragment_) {
        Damaged(start, "a record fragment without its start");
      } else if (type != kFullType && type != kFirstType && type != kMiddleType &&
                 type != kLastType && type != kSetCompressionType) {
        Damaged(start, "unknown record type " + std::to_string(type));
      }
    }
    if (scan_.damage) {
      scan_.readable_after_damage++;
      if (type == kFullType) {
        CompleteAfterDamage(payload);
      } else if (type == kFirstType) {
        record_.assign(payload);
      } else if ((type == kMiddleType || type == kLastType) && fragment_after_damage_) {
        record_.append(payload);
        if (type == kLastType) CompleteAfterDamage(record_);
      }
      fragment_after_damage_ =
          type == kFirstType || (type == kMiddleType && fragment_after_damage_);
      if ((type == kFullType || type == kFirstType) && scan_.resume_sequence == 0 &&
          payload.size() >= kBatchHeaderSize) {
        scan_.resume_sequence = DecodeFixed64(payload.data());
      }
      return;
    }
    switch (type) {
      case kFullType:
        Complete(end, payload);
        break;
      case kFirstType:
        in_fragment_ = true;
        fragment_start_ = start;
        record_.assign(payload);
        break;
      case kMiddleType:
      case kLastType:
        record_.append(payload);
        if (type == kLastType) {
          in_fragment_ = false;
          Complete(end, record_);
        }
        break;
      default:  // kSetCompressionType: not a record
        scan_.intact_bytes = end;
        break;
    }
  }

  void Complete(uint64_t end, std::string_view batch) {
    scan_.records++;
    scan_.intact_bytes = end;
    scan_.other_family_operations += OtherFamilyOperations(batch);
    if (batch.size() < kBatchHeaderSize) return;
    const uint64_t sequence = DecodeFixed64(batch.data());
    if (scan_.records == 1) scan_.first_sequence = sequence;
    scan_.next_sequence = sequence + DecodeFixed32(batch.data() + 8);
  }

  void CompleteAfterDamage(std::string_view batch) {
    scan_.records_after_damage++;
    scan_.other_family_operations += OtherFamilyOperations(batch);
  }

  WalScan scan_;
  bool in_fragment_ = false;
  uint64_t fragment_start_ = 0;
  std::string record_;                  // the fragmented record being read
  std::optional<uint64_t> zeros_at_;    // a zero header seen in the intact part
  bool fragment_after_damage_ = false;  // after the damage, inside a fragmented record
};

}  // namespace

Result<WalScan> ScanWal(const std::string& path) {
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) return Status::IOError("cannot read " + path + ": " + ec.message());
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IOError("cannot open " + path);
  Scanner scanner;
  std::string block(kBlockSize, '\0');
  uint64_t offset = 0;
  while (offset < size) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(kBlockSize, size - offset));
    in.read(block.data(), static_cast<std::streamsize>(want));
    if (static_cast<size_t>(in.gcount()) != want) {
      return Status::IOError("cannot read " + path + " at byte " + std::to_string(offset));
    }
    scanner.Block(std::string_view(block.data(), want), offset, offset + want == size);
    offset += want;
  }
  return scanner.Finish(offset);
}

Result<std::vector<std::string>> ListWals(const std::string& dir) {
  std::vector<std::pair<uint64_t, std::string>> numbered;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!IsWalFileName(name)) continue;
    uint64_t number = 0;
    if (std::from_chars(name.data(), name.data() + name.size() - 4, number).ec != std::errc()) {
      number = UINT64_MAX;  // too many digits for RocksDB to have written: last
    }
    numbered.emplace_back(number, it->path().string());
  }
  if (ec) return Status::IOError("cannot list " + dir + ": " + ec.message());
  std::sort(numbered.begin(), numbered.end());
  std::vector<std::string> paths;
  paths.reserve(numbered.size());
  for (auto& [number, path] : numbered) paths.push_back(std::move(path));
  return paths;
}

}  // namespace idem
