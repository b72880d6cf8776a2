#include "gateway_key.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include <openssl/evp.h>

namespace idem {
namespace {

// One SHA-256 computation over pieces fed in turn. SHA-256 is fetched from OpenSSL's provider
// once per process (fetching it per digest costs more than hashing a short key).
class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new()) {
    static EVP_MD* const sha256 = EVP_MD_fetch(nullptr, "SHA256", nullptr);  // never freed
    ok_ = sha256 != nullptr && ctx_ != nullptr &&
          EVP_DigestInit_ex2(ctx_.get(), sha256, nullptr) == 1;
  }
  void Update(std::string_view bytes) {
    ok_ = ok_ && EVP_DigestUpdate(ctx_.get(), bytes.data(), bytes.size()) == 1;
  }
  // Each piece prefixed with its length (8 bytes, little-endian): no two inputs concatenate alike.
  void UpdatePrefixed(std::string_view bytes) {
    std::array<char, 8> length;
    uint64_t n = bytes.size();
    for (char& c : length) {
      c = static_cast<char>(n & 0xff);
      n >>= 8;
    }
    Update(std::string_view(length.data(), length.size()));
    Update(bytes);
  }
  // The digest; OpenSSL failing (out of memory) aborts: a fingerprint must never be a guess.
  std::string Final() {
    std::string digest(32, '\0');
    unsigned int size = 0;
    ok_ = ok_ &&
          EVP_DigestFinal_ex(ctx_.get(), reinterpret_cast<unsigned char*>(digest.data()), &size) ==
              1 &&
          size == digest.size();
    if (!ok_) std::abort();
    return digest;
  }

 private:
  struct Free {
    void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
  };
  std::unique_ptr<EVP_MD_CTX, Free> ctx_;
  bool ok_ = false;
};

std::string_view TrimSpaces(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

bool RouteCovers(const GatewayRoute& route, std::string_view method, std::string_view path) {
  if (std::find(route.methods.begin(), route.methods.end(), method) == route.methods.end()) {
    return false;
  }
  if (route.path_prefixes.empty()) return true;
  return std::any_of(route.path_prefixes.begin(), route.path_prefixes.end(),
                     [path](const std::string& prefix) { return path.starts_with(prefix); });
}

Result<std::string> ParseIdempotencyKey(std::string_view field_value) {
  const std::string_view v = TrimSpaces(field_value);
  constexpr std::string_view kRule =
      "Idempotency-Key must be a quoted string (RFC 8941 sf-string, as the IETF draft requires; a "
      "bare token is not accepted) of 1..255 printable ASCII characters, with \\\" and \\\\ as "
      "the only escapes";
  if (v.size() < 2 || v.front() != '"' || v.back() != '"') {
    return Status::InvalidArgument(std::string(kRule) + ": the value is not in double quotes");
  }
  std::string key;
  for (size_t i = 1; i + 1 < v.size(); ++i) {
    char c = v[i];
    if (c < 0x20 || c > 0x7e) {
      return Status::InvalidArgument(std::string(kRule) + ": a character outside 0x20..0x7E at " +
                                     "offset " + std::to_string(i));
    }
    if (c == '"') {
      return Status::InvalidArgument(std::string(kRule) + ": an unescaped '\"' at offset " +
                                     std::to_string(i));
    }
    if (c == '\\') {
      if (i + 2 >= v.size() || (v[i + 1] != '"' && v[i + 1] != '\\')) {
        return Status::InvalidArgument(std::string(kRule) + ": a bad escape at offset " +
                                       std::to_string(i));
      }
      c = v[++i];
    }
    if (key.size() == kMaxIdempotencyKeyChars) {
      return Status::InvalidArgument(std::string(kRule) + ": the key is longer than 255");
    }
    key.push_back(c);
  }
  if (key.empty()) return Status::InvalidArgument(std::string(kRule) + ": the key is empty");
  return key;
}

std::string Hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * bytes.size());
  for (unsigned char b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 0xf]);
  }
  return out;
}

std::string ScopedStoreKey(std::string_view identity, std::string_view key) {
  Sha256 sha;
  sha.Update(identity);
  std::string out = Hex(std::string_view(sha.Final()).substr(0, 16));
  out.push_back(':');
  out.append(key);
  return out;
}

std::string RequestFingerprint(const FingerprintInput& input) {
  const size_t question = input.target.find('?');
  const std::string_view path = input.target.substr(0, question);
  std::vector<std::string_view> params;
  if (question != std::string_view::npos) {
    std::string_view query = input.target.substr(question + 1);
    while (!query.empty()) {
      const size_t amp = query.find('&');
      const std::string_view param = query.substr(0, amp);
      if (!param.empty()) params.push_back(param);
      if (amp == std::string_view::npos) break;
      query.remove_prefix(amp + 1);
    }
    std::sort(params.begin(), params.end());
  }
  Sha256 sha;
  sha.UpdatePrefixed(input.method);
  sha.UpdatePrefixed(path);
  sha.UpdatePrefixed(std::to_string(params.size()));
  for (std::string_view param : params) sha.UpdatePrefixed(param);
  sha.UpdatePrefixed(std::to_string(input.headers.size()));
  for (const auto& [name, value] : input.headers) {
    sha.UpdatePrefixed(name);
    sha.UpdatePrefixed(value ? "1" : "0");  // absent differs from empty
    sha.UpdatePrefixed(value ? std::string_view(*value) : std::string_view());
  }
  sha.UpdatePrefixed(input.body);
  return sha.Final();
}

}  // namespace idem
