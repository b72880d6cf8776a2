#include "stored_response.h"

namespace idem {
namespace {

constexpr std::string_view kMagic = "IGR1";
constexpr uint8_t kBodyStored = 0;
constexpr uint8_t kBodyNotStored = 1;

void PutFixed(std::string* out, uint64_t v, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) {
    out->push_back(static_cast<char>(v & 0xff));
    v >>= 8;
  }
}

// Reads the encoding front to back; every read checks what is left first.
class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}

  bool Fixed(size_t bytes, uint64_t* v) {
    if (bytes_.size() - pos_ < bytes) return false;
    *v = 0;
    for (size_t i = 0; i < bytes; ++i) {
      *v |= static_cast<uint64_t>(static_cast<unsigned char>(bytes_[pos_ + i])) << (8 * i);
    }
    pos_ += bytes;
    return true;
  }
  bool Bytes(uint64_t n, std::string* out) {
    if (bytes_.size() - pos_ < n) return false;
    out->assign(bytes_.substr(pos_, n));
    pos_ += n;
    return true;
  }
  size_t pos() const { return pos_; }
  size_t left() const { return bytes_.size() - pos_; }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

Status Damaged(const Reader& r, std::string_view what) {
  return Status::Corruption("stored gateway response: " + std::string(what) + " at offset " +
                            std::to_string(r.pos()));
}

}  // namespace

size_t EncodedStoredResponseSize(const StoredResponse& response) {
  size_t n = kMagic.size() + 1 + 2 + 2 + 8;
  for (const auto& [name, value] : response.headers) n += 2 + name.size() + 4 + value.size();
  if (response.body_stored) n += response.body.size();
  return n;
}

std::string EncodeStoredResponse(const StoredResponse& response) {
  std::string out;
  out.reserve(EncodedStoredResponseSize(response));
  out.append(kMagic);
  out.push_back(static_cast<char>(response.body_stored ? kBodyStored : kBodyNotStored));
  PutFixed(&out, response.status, 2);
  PutFixed(&out, response.headers.size(), 2);
  for (const auto& [name, value] : response.headers) {
    PutFixed(&out, name.size(), 2);
    out.append(name);
    PutFixed(&out, value.size(), 4);
    out.append(value);
  }
  PutFixed(&out, response.body_stored ? response.body.size() : response.body_size, 8);
  if (response.body_stored) out.append(response.body);
  return out;
}

Result<StoredResponse> DecodeStoredResponse(std::string_view bytes) {
  Reader r(bytes);
  std::string magic;
  if (!r.Bytes(kMagic.size(), &magic) || magic != kMagic) return Damaged(r, "no magic");
  StoredResponse response;
  uint64_t kind = 0, status = 0, count = 0;
  if (!r.Fixed(1, &kind) || kind > kBodyNotStored) return Damaged(r, "bad kind");
  response.body_stored = kind == kBodyStored;
  if (!r.Fixed(2, &status) || status < 100 || status > 999) return Damaged(r, "bad status");
  response.status = static_cast<unsigned>(status);
  if (!r.Fixed(2, &count)) return Damaged(r, "truncated header count");
  // Each header takes at least 6 bytes: a count the rest cannot hold is damage, not a size.
  if (count * 6 > r.left()) return Damaged(r, "header count beyond the record");
  response.headers.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t length = 0;
    std::string name, value;
    if (!r.Fixed(2, &length) || !r.Bytes(length, &name)) return Damaged(r, "truncated header");
    if (!r.Fixed(4, &length) || !r.Bytes(length, &value)) return Damaged(r, "truncated header");
    response.headers.emplace_back(std::move(name), std::move(value));
  }
  if (!r.Fixed(8, &response.body_size)) return Damaged(r, "truncated body length");
  if (response.body_stored) {
    if (response.body_size != r.left()) return Damaged(r, "body length does not match the record");
    r.Bytes(response.body_size, &response.body);
  } else if (r.left() != 0) {
    return Damaged(r, "bytes after a not-stored marker");
  }
  return response;
}

}  // namespace idem
