#include "record_codec.h"

#include "coding.h"

namespace idem {
namespace {

// The kind byte of a record or marker; Corruption for a kind this build does not know.
Status DecodeKind(uint8_t byte, RecordKind* kind) {
  if (byte > static_cast<uint8_t>(kLastRecordKind)) {
    return Status::Corruption("unknown record kind " + std::to_string(byte));
  }
  *kind = static_cast<RecordKind>(byte);
  return Status::Ok();
}

}  // namespace

void EncodeRecord(const Record& r, std::string* dst) {
  dst->reserve(dst->size() + kRecordHeaderBytes + 40 + r.status.size() + r.fingerprint.size() +
               r.owner.size() + r.payload.size());
  dst->push_back(static_cast<char>(kRecordFormatVersion));
  dst->push_back(static_cast<char>(r.kind));
  coding::PutFixed64(dst, static_cast<uint64_t>(r.expires_at_ms));
  coding::PutFixed64(dst, r.fence);
  coding::PutVarint64(dst, r.version);
  coding::PutVarint64(dst, static_cast<uint64_t>(r.created_ms));
  coding::PutVarint64(dst, static_cast<uint64_t>(r.updated_ms));
  coding::PutVarint64(dst, static_cast<uint64_t>(r.lease_until_ms));
  coding::PutLengthPrefixed(dst, r.status);
  coding::PutLengthPrefixed(dst, r.fingerprint);
  coding::PutLengthPrefixed(dst, r.owner);
  coding::PutLengthPrefixed(dst, r.payload);
}

Status DecodeRecord(std::string_view in, Record* r) {
  coding::Reader reader(in);
  uint8_t format = 0, kind = 0;
  uint64_t expires = 0, fence = 0, version = 0, created = 0, updated = 0, lease = 0;
  std::string_view status, fingerprint, owner, payload;
  if (!reader.GetByte(&format)) return Status::Corruption("empty record value");
  if (format != kRecordFormatVersion) {
    return Status::Corruption("unsupported record format version " + std::to_string(format));
  }
  bool ok = reader.GetByte(&kind) && reader.GetFixed64(&expires) && reader.GetFixed64(&fence) &&
            reader.GetVarint64(&version) && reader.GetVarint64(&created) &&
            reader.GetVarint64(&updated) && reader.GetVarint64(&lease) &&
            reader.GetLengthPrefixed(&status) && reader.GetLengthPrefixed(&fingerprint) &&
            reader.GetLengthPrefixed(&owner) && reader.GetLengthPrefixed(&payload);
  if (!ok) return Status::Corruption("truncated or malformed record value");
  if (!reader.empty()) return Status::Corruption("trailing bytes after record value");
  if (Status st = DecodeKind(kind, &r->kind); !st.ok()) return st;
  r->expires_at_ms = static_cast<int64_t>(expires);
  r->fence = fence;
  r->version = version;
  r->created_ms = static_cast<int64_t>(created);
  r->updated_ms = static_cast<int64_t>(updated);
  r->lease_until_ms = static_cast<int64_t>(lease);
  r->status.assign(status);
  r->fingerprint.assign(fingerprint);
  r->owner.assign(owner);
  r->payload.assign(payload);
  return Status::Ok();
}

void EncodeMarker(const Marker& m, std::string* dst) {
  dst->reserve(dst->size() + kMarkerHeaderBytes + 21 + m.fingerprint.size());
  dst->push_back(static_cast<char>(kMarkerFormat));
  dst->push_back(static_cast<char>(m.kind));
  coding::PutFixed64(dst, static_cast<uint64_t>(m.expires_at_ms));
  coding::PutVarint64(dst, static_cast<uint64_t>(m.record_expired_ms));
  coding::PutVarint64(dst, static_cast<uint64_t>(m.completed_ms));
  coding::PutLengthPrefixed(dst, m.fingerprint);
}

Status DecodeMarker(std::string_view in, Marker* m) {
  coding::Reader reader(in);
  uint8_t format = 0, kind = 0;
  uint64_t expires = 0, record_expired = 0, completed = 0;
  std::string_view fingerprint;
  if (!reader.GetByte(&format) || format != kMarkerFormat) {
    return Status::Corruption("not a remembered-key marker");
  }
  bool ok = reader.GetByte(&kind) && reader.GetFixed64(&expires) &&
            reader.GetVarint64(&record_expired) && reader.GetVarint64(&completed) &&
            reader.GetLengthPrefixed(&fingerprint);
  if (!ok) return Status::Corruption("truncated or malformed marker value");
  if (!reader.empty()) return Status::Corruption("trailing bytes after marker value");
  if (Status st = DecodeKind(kind, &m->kind); !st.ok()) return st;
  m->expires_at_ms = static_cast<int64_t>(expires);
  m->record_expired_ms = static_cast<int64_t>(record_expired);
  m->completed_ms = static_cast<int64_t>(completed);
  m->fingerprint.assign(fingerprint);
  return Status::Ok();
}

std::optional<int64_t> PeekExpiry(std::string_view in) {
  const bool record =
      in.size() >= kRecordHeaderBytes && static_cast<uint8_t>(in[0]) == kRecordFormatVersion;
  if (!record && !(in.size() >= kMarkerHeaderBytes && IsMarker(in))) return std::nullopt;
  return static_cast<int64_t>(coding::DecodeFixed64(in.data() + 2));
}

}  // namespace idem
