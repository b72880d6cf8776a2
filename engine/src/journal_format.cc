#include "journal_format.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "crc32c.h"

namespace idem::journal {
namespace {

void PutFixed32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
void PutFixed64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
uint16_t Fixed16(const char* p) {
  return static_cast<uint16_t>(static_cast<uint8_t>(p[0]) | (static_cast<uint8_t>(p[1]) << 8));
}
uint32_t Fixed32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}
uint64_t Fixed64(const char* p) { return Fixed32(p) | (uint64_t{Fixed32(p + 4)} << 32); }

size_t Padded(size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

constexpr char kCompressedFlag = 1;
constexpr char kKeyInValueFlags = 3;  // compressed, with the key

bool AllZero(std::string_view bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](char c) { return c == 0; });
}

// An entry that checked: its operations are views into the segment's bytes, with their offsets.
struct CheckedEntry {
  uint32_t payload = 0;
  uint64_t sequence = 0;
  uint64_t synced_offset = 0;
  std::vector<std::pair<OpView, uint64_t>> ops;
};
uint32_t EntryHeaderCrc(const char* header, uint64_t salt) {
  char bytes[8 + kEntryHeaderBytes - 4];
  PutFixed64(bytes, salt);
  std::memcpy(bytes + 8, header + 4, kEntryHeaderBytes - 4);
  return Crc32c(std::string_view(bytes, sizeof(bytes)));
}

// Why the entry at `offset` does not check, or nothing (then `entry` describes it).
std::optional<std::string> CheckEntry(std::string_view bytes, uint64_t offset, uint64_t salt,
                                      bool has_dictionary, CheckedEntry* entry) {
  const std::string_view rest = bytes.substr(offset);
  if (rest.size() < kEntryHeaderBytes) return "the file ends inside an entry header";
  const char* h = rest.data();
  if (UnmaskCrc(Fixed32(h)) != EntryHeaderCrc(h, salt)) {
    return AllZero(rest.substr(0, kEntryHeaderBytes)) ? "zeros where an entry should be"
                                                      : "entry header checksum mismatch";
  }
  entry->payload = Fixed32(h + 4);
  entry->sequence = Fixed64(h + 8);
  const uint32_t count = Fixed32(h + 16);
  entry->synced_offset = uint64_t{Fixed32(h + 20)} * kAlignment;
  if (entry->payload % kAlignment != 0) return "entry payload length is not a multiple of 8";
  if (count == 0) return "entry has no operations";
  if (entry->payload > rest.size() - kEntryHeaderBytes) return "the file ends inside an entry";
  const std::string_view payload = rest.substr(kEntryHeaderBytes, entry->payload);
  entry->ops.clear();
  size_t at = 0;
  for (uint32_t i = 0; i < count; ++i) {
    const std::string_view op_bytes = payload.substr(at);
    std::optional<size_t> size = PeekOpBytes(op_bytes);
    if (!size || *size > op_bytes.size()) {
      return "operation " + std::to_string(i) + " does not fit in its entry";
    }
    Result<OpView> op = DecodeOp(op_bytes.substr(0, *size));
    if (!op.ok()) return "operation " + std::to_string(i) + ": " + op.status().message();
    if (op->compressed && !has_dictionary) {
      return "operation " + std::to_string(i) + " is compressed in a segment without a dictionary";
    }
    // The padding is outside the checksum: zeros, or the entry was not written whole.
    if (!AllZero(op_bytes.substr(kOpHeaderBytes + op->key.size() + op->value.size(),
                                 *size - kOpHeaderBytes - op->key.size() - op->value.size()))) {
      return "operation " + std::to_string(i) + " has bytes other than zeros in its padding";
    }
    entry->ops.emplace_back(*op, offset + kEntryHeaderBytes + at);
    at += *size;
  }
  if (at != payload.size()) return "entry's operations do not fill its payload";
  return std::nullopt;
}

}  // namespace

uint32_t SegmentFormatVersion(std::string_view bytes) {
  return bytes.size() < 12 ? 0 : Fixed32(bytes.data() + 8);
}

uint64_t EntriesOffset(size_t dictionary_bytes) {
  return dictionary_bytes == 0 ? kSegmentHeaderBytes
                               : kSegmentHeaderBytes + 8 + Padded(dictionary_bytes);
}

uint64_t SegmentHeader::entries_offset() const { return EntriesOffset(dictionary.size()); }

std::string EncodeSegmentHeader(const SegmentHeader& header) {
  std::string out(header.entries_offset(), '\0');
  std::memcpy(out.data(), kSegmentMagic.data(), kSegmentMagic.size());
  PutFixed32(out.data() + 8, header.dictionary.empty() ? kFormatVersion : kDictionaryFormatVersion);
  PutFixed64(out.data() + 16, header.number);
  PutFixed64(out.data() + 24, static_cast<uint64_t>(header.created_ms));
  PutFixed64(out.data() + 32, header.after_sequence);
  PutFixed64(out.data() + 40, header.salt);
  PutFixed32(out.data() + 12,
             MaskCrc(Crc32c(std::string_view(out).substr(16, kSegmentHeaderBytes - 16))));
  if (!header.dictionary.empty()) {
    char* d = out.data() + kSegmentHeaderBytes;
    PutFixed32(d, static_cast<uint32_t>(header.dictionary.size()));
    PutFixed32(d + 4, MaskCrc(Crc32c(header.dictionary)));
    std::memcpy(d + 8, header.dictionary.data(), header.dictionary.size());
  }
  return out;
}

Result<SegmentHeader> DecodeSegmentHeader(std::string_view bytes) {
  if (bytes.size() < kSegmentHeaderBytes) {
    return Status::Corruption("journal segment is " + std::to_string(bytes.size()) +
                              " bytes, shorter than its header");
  }
  if (bytes.substr(0, kSegmentMagic.size()) != kSegmentMagic) {
    return Status::Corruption(AllZero(bytes.substr(0, kSegmentHeaderBytes))
                                  ? "journal segment header is zeros (never written)"
                                  : "not a journal segment (bad magic)");
  }
  const uint32_t version = Fixed32(bytes.data() + 8);
  if (version != kFormatVersion && version != kValueDictionaryFormatVersion &&
      version != kDictionaryFormatVersion) {
    return Status::Corruption("journal segment format version " + std::to_string(version) +
                              " is not " + std::to_string(kFormatVersion) + ", " +
                              std::to_string(kValueDictionaryFormatVersion) + " or " +
                              std::to_string(kDictionaryFormatVersion));
  }
  if (UnmaskCrc(Fixed32(bytes.data() + 12)) != Crc32c(bytes.substr(16, kSegmentHeaderBytes - 16))) {
    return Status::Corruption("journal segment header checksum mismatch");
  }
  SegmentHeader header{Fixed64(bytes.data() + 16),
                       static_cast<int64_t>(Fixed64(bytes.data() + 24)),
                       Fixed64(bytes.data() + 32),
                       Fixed64(bytes.data() + 40),
                       {}};
  if (version != kFormatVersion) {
    const std::string_view block = bytes.substr(kSegmentHeaderBytes);
    if (block.size() < 8) return Status::Corruption("journal segment ends before its dictionary");
    const uint32_t size = Fixed32(block.data());
    if (size == 0 || size > kMaxDictionaryBytes) {
      return Status::Corruption("journal segment dictionary of " + std::to_string(size) +
                                " bytes (1.." + std::to_string(kMaxDictionaryBytes) + ")");
    }
    if (block.size() - 8 < size) {
      return Status::Corruption("journal segment ends inside its dictionary");
    }
    const std::string_view dictionary = block.substr(8, size);
    if (UnmaskCrc(Fixed32(block.data() + 4)) != Crc32c(dictionary)) {
      return Status::Corruption("journal segment dictionary checksum mismatch");
    }
    header.dictionary = std::string(dictionary);
  }
  return header;
}

void AppendKeyAndValue(std::string_view key, std::string_view value, std::string* out) {
  const size_t at = out->size();
  out->resize(at + 2);
  (*out)[at] = static_cast<char>(key.size());
  (*out)[at + 1] = static_cast<char>(key.size() >> 8);
  out->append(key).append(value);
}

Status SplitKeyAndValue(std::string_view plain, OpView* op) {
  const size_t key_bytes = plain.size() < 2 ? 0 : Fixed16(plain.data());
  if (key_bytes == 0 || plain.size() - 2 < key_bytes) {
    return Status::Corruption("journal key and value of " + std::to_string(plain.size()) +
                              " bytes do not hold a key");
  }
  op->key = plain.substr(2, key_bytes);
  op->value = plain.substr(2 + key_bytes);
  return Status::Ok();
}

size_t OpBytes(size_t key_bytes, size_t value_bytes) {
  return Padded(kOpHeaderBytes + key_bytes + value_bytes);
}

EntryBuilder::EntryBuilder() : entry_(kEntryHeaderBytes, '\0') {}

void EntryBuilder::Clear() {
  entry_.assign(kEntryHeaderBytes, '\0');
  offsets_.clear();
  max_keep_until_ms_ = 0;
  finished_bytes_ = 0;
}

// Writes the operation's bytes at `p` (OpBytes of it, zeroed by the caller).
void EncodeOp(const OpView& op, char* p) {
  p[4] = static_cast<char>(op.type);
  p[5] = op.key_in_value ? kKeyInValueFlags : op.compressed ? kCompressedFlag : 0;
  p[6] = static_cast<char>(op.key.size());
  p[7] = static_cast<char>(op.key.size() >> 8);
  PutFixed32(p + 8, static_cast<uint32_t>(op.value.size()));
  PutFixed64(p + 12, static_cast<uint64_t>(op.keep_until_ms));
  // An empty view may have no data to copy from (a key stored in its value).
  if (!op.key.empty()) std::memcpy(p + kOpHeaderBytes, op.key.data(), op.key.size());
  if (!op.value.empty()) {
    std::memcpy(p + kOpHeaderBytes + op.key.size(), op.value.data(), op.value.size());
  }
  const size_t checked = kOpHeaderBytes - 4 + op.key.size() + op.value.size();
  PutFixed32(p, MaskCrc(Crc32c(std::string_view(p + 4, checked))));
}

Status EntryBuilder::Add(const OpView& op) {
  if (finished_bytes_ != 0) Clear();
  if ((op.key.empty() && !op.key_in_value) || op.key.size() > kMaxKeyBytes) {
    return Status::InvalidArgument("journal key of " + std::to_string(op.key.size()) +
                                   " bytes; 1.." + std::to_string(kMaxKeyBytes) + " allowed");
  }
  if (op.key_in_value && (!op.compressed || !op.key.empty())) {
    return Status::InvalidArgument(
        "a journal key stored in its value needs the value compressed "
        "and no key besides");
  }
  if (op.value.size() > std::numeric_limits<uint32_t>::max()) {
    return Status::InvalidArgument("journal value over 4 GiB");
  }
  if (op.type == OpType::kDelete && !op.value.empty()) {
    return Status::InvalidArgument("a journal delete carries no value");
  }
  if (op.type != OpType::kPut && op.type != OpType::kDelete) {
    return Status::InvalidArgument("unknown journal operation type");
  }
  if (op.compressed && (op.type != OpType::kPut || op.value.empty())) {
    return Status::InvalidArgument("a compressed journal value must be a put's, not empty");
  }
  const size_t start = entry_.size();
  const size_t size = OpBytes(op.key.size(), op.value.size());
  if (start - kEntryHeaderBytes + size > std::numeric_limits<uint32_t>::max()) {
    return Status::InvalidArgument("journal entry over 4 GiB");
  }
  entry_.resize(start + size, '\0');
  EncodeOp(op, entry_.data() + start);
  offsets_.push_back(static_cast<uint32_t>(start));
  max_keep_until_ms_ =
      offsets_.size() == 1 ? op.keep_until_ms : std::max(max_keep_until_ms_, op.keep_until_ms);
  return Status::Ok();
}

uint32_t EntryBuilder::op_bytes(size_t i) const {
  const size_t end = i + 1 < offsets_.size() ? offsets_[i + 1] : finished_bytes_;
  return static_cast<uint32_t>(end - offsets_[i]);
}

std::string EntryBuilder::Finish(const EntryStamp& stamp, const CompressValue& compress) {
  if (compress) {
    // Encoded again with the values compress() shortens; never longer than as added.
    std::string out(kEntryHeaderBytes, '\0');
    out.reserve(entry_.size());
    std::string plain, stored;
    for (uint32_t& offset : offsets_) {
      const char* p = entry_.data() + offset;
      OpView op;
      op.type = static_cast<OpType>(p[4]);
      op.compressed = p[5] != 0;
      op.keep_until_ms = static_cast<int64_t>(Fixed64(p + 12));
      op.key = std::string_view(p + kOpHeaderBytes, Fixed16(p + 6));
      op.value = std::string_view(p + kOpHeaderBytes + op.key.size(), Fixed32(p + 8));
      const size_t added_bytes = OpBytes(op.key.size(), op.value.size());
      offset = static_cast<uint32_t>(out.size());
      bool shorter = false;
      if (op.type == OpType::kPut && !op.compressed) {
        plain.clear();
        AppendKeyAndValue(op.key, op.value, &plain);
        shorter = compress(plain, &stored) && stored.size() < op.key.size() + op.value.size();
      }
      if (shorter) {
        op.key = {};
        op.value = stored;
        op.compressed = op.key_in_value = true;
        out.resize(out.size() + OpBytes(0, op.value.size()), '\0');
        EncodeOp(op, out.data() + offset);
      } else {
        out.append(p, added_bytes);
      }
    }
    entry_ = std::move(out);
  }
  char* h = entry_.data();
  PutFixed32(h + 4, static_cast<uint32_t>(entry_.size() - kEntryHeaderBytes));
  PutFixed64(h + 8, stamp.sequence);
  PutFixed32(h + 16, static_cast<uint32_t>(offsets_.size()));
  PutFixed32(h + 20, static_cast<uint32_t>(stamp.synced_offset / kAlignment));
  PutFixed32(h, MaskCrc(EntryHeaderCrc(h, stamp.salt)));
  std::string finished = std::move(entry_);
  entry_.assign(kEntryHeaderBytes, '\0');
  max_keep_until_ms_ = 0;
  finished_bytes_ = finished.size();
  return finished;
}

std::optional<EntryExtent> PeekEntry(std::string_view bytes, uint64_t salt) {
  if (bytes.size() < kEntryHeaderBytes ||
      UnmaskCrc(Fixed32(bytes.data())) != EntryHeaderCrc(bytes.data(), salt)) {
    return std::nullopt;
  }
  return EntryExtent{Fixed32(bytes.data() + 4), Fixed32(bytes.data() + 16)};
}

std::optional<size_t> PeekOpBytes(std::string_view bytes) {
  if (bytes.size() < kOpHeaderBytes) return std::nullopt;
  const auto type = static_cast<uint8_t>(bytes[4]);
  if ((type != static_cast<uint8_t>(OpType::kPut) &&
       type != static_cast<uint8_t>(OpType::kDelete)) ||
      (bytes[5] != 0 && bytes[5] != kCompressedFlag && bytes[5] != kKeyInValueFlags)) {
    return std::nullopt;
  }
  return OpBytes(Fixed16(bytes.data() + 6), Fixed32(bytes.data() + 8));
}

Result<OpView> DecodeOp(std::string_view bytes) {
  std::optional<size_t> size = PeekOpBytes(bytes);
  if (!size) return Status::Corruption("not a journal operation header");
  if (*size > bytes.size()) {
    return Status::Corruption("journal operation of " + std::to_string(*size) +
                              " bytes cut off at " + std::to_string(bytes.size()));
  }
  const size_t key_bytes = Fixed16(bytes.data() + 6);
  const size_t value_bytes = Fixed32(bytes.data() + 8);
  if (UnmaskCrc(Fixed32(bytes.data())) !=
      Crc32c(bytes.substr(4, kOpHeaderBytes - 4 + key_bytes + value_bytes))) {
    return Status::Corruption("journal operation checksum mismatch");
  }
  OpView op;
  op.type = static_cast<OpType>(bytes[4]);
  op.keep_until_ms = static_cast<int64_t>(Fixed64(bytes.data() + 12));
  op.key = bytes.substr(kOpHeaderBytes, key_bytes);
  op.value = bytes.substr(kOpHeaderBytes + key_bytes, value_bytes);
  op.compressed = bytes[5] != 0;
  op.key_in_value = bytes[5] == kKeyInValueFlags;
  if (op.key_in_value ? !op.key.empty() : op.key.empty()) {
    return Status::Corruption(op.key_in_value ? "journal operation with a key besides its value's"
                                              : "journal operation with an empty key");
  }
  if (op.type == OpType::kDelete && !op.value.empty()) {
    return Status::Corruption("journal delete with a value");
  }
  if (op.compressed && op.value.empty()) {
    return Status::Corruption("journal operation with an empty compressed value");
  }
  return op;
}

bool MayHoldAnEntry(std::string_view segment_bytes) {
  return segment_bytes.size() > kSegmentHeaderBytes &&
         !AllZero(segment_bytes.substr(kSegmentHeaderBytes));
}

Result<SegmentScan> ScanSegment(std::string_view bytes, uint64_t after_sequence,
                                const OpVisitor& visit, AfterDamage after_damage) {
  Result<SegmentHeader> header = DecodeSegmentHeader(bytes);
  if (!header.ok()) return header.status();
  SegmentScan scan;
  scan.header = *header;
  const uint64_t salt = header->salt;
  const bool has_dictionary = !header->dictionary.empty();
  uint64_t last = std::max(after_sequence, header->after_sequence);
  uint64_t at = header->entries_offset();
  CheckedEntry entry;
  std::optional<std::string> bad;
  bool out_of_order = false;  // a whole entry not numbered above the one before: never torn
  while (at < bytes.size()) {
    bad = CheckEntry(bytes, at, salt, has_dictionary, &entry);
    if (bad) break;
    if (entry.sequence <= last) {
      // Whole, so not a torn write, yet out of order: not what the writer wrote here.
      if (after_damage == AfterDamage::kVisit) {
        bad = "entry sequence " + std::to_string(entry.sequence) + " is not above " +
              std::to_string(last);
        out_of_order = true;
        break;
      }
      scan.end_offset = scan.bad_offset = at;
      scan.what = "entry sequence " + std::to_string(entry.sequence) + " is not above " +
                  std::to_string(last);
      scan.tail = SegmentScan::Tail::kDamaged;
      return scan;
    }
    for (const auto& [op, offset] : entry.ops) {
      scan.max_keep_until_ms = std::max(scan.max_keep_until_ms, op.keep_until_ms);
      if (visit) visit(op, offset, entry.sequence);
    }
    scan.max_synced_offset = std::max(scan.max_synced_offset, entry.synced_offset);
    if (scan.entries == 0) scan.first_sequence = entry.sequence;
    scan.last_sequence = last = entry.sequence;
    ++scan.entries;
    scan.ops += entry.ops.size();
    at += kEntryHeaderBytes + entry.payload;
  }
  scan.end_offset = at;
  if (!bad || AllZero(bytes.substr(at))) return scan;  // the clean end

  // Something other than zeros follows the intact entries: look for intact entries after it, at
  // every aligned offset (a bad header's length cannot be trusted to skip it).
  scan.bad_offset = at;
  scan.what = std::move(*bad);
  bool synced_past_bad = false;
  for (uint64_t next = at + kAlignment; next + kEntryHeaderBytes <= bytes.size();) {
    if (CheckEntry(bytes, next, salt, has_dictionary, &entry)) {
      next += kAlignment;
      continue;
    }
    if (entry.sequence <= last) {
      out_of_order |= after_damage == AfterDamage::kVisit;
      next += kAlignment;
      continue;
    }
    if (scan.entries_after_bad == 0) scan.resume_sequence = entry.sequence;
    ++scan.entries_after_bad;
    if (after_damage == AfterDamage::kVisit && visit) {
      for (const auto& [op, offset] : entry.ops) visit(op, offset, entry.sequence);
    }
    synced_past_bad |= entry.synced_offset > at;
    scan.max_synced_offset = std::max(scan.max_synced_offset, entry.synced_offset);
    last = entry.sequence;
    next += kEntryHeaderBytes + entry.payload;
  }
  scan.tail =
      synced_past_bad || out_of_order ? SegmentScan::Tail::kDamaged : SegmentScan::Tail::kTorn;
  return scan;
}

}  // namespace idem::journal
