#include "credentials.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <utility>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

namespace idem {
namespace {

constexpr std::string_view kHashScheme = "sha256$";
constexpr size_t kSaltBytes = 16;
constexpr size_t kDigestBytes = 32;  // SHA-256
constexpr size_t kMaxNameBytes = 64;
// A namespace is at most 255 bytes whatever the server's limit (the key layout stores its length
// in one byte): a longer pattern could never cover one.
constexpr size_t kMaxPatternBytes = 255;
constexpr size_t kNewSecretBytes = 32;
constexpr std::string_view kLineFormat = "a line is NAME HASH NS:PERMS... (docs/security.md)";

using Salt = std::array<unsigned char, kSaltBytes>;
using Digest = std::array<unsigned char, kDigestBytes>;

std::string Hex(const unsigned char* bytes, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(2 * n, '\0');
  for (size_t i = 0; i < n; ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 0xf];
  }
  return out;
}

// Lower-case hex only, so that a hash has one spelling. False for anything else.
bool DecodeHex(std::string_view hex, unsigned char* out, size_t n) {
  if (hex.size() != 2 * n) return false;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (size_t i = 0; i < n; ++i) {
    const int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<unsigned char>(hi << 4 | lo);
  }
  return true;
}

// "sha256$SALT$DIGEST" -> its bytes; false when malformed.
bool ParseHash(std::string_view hash, Salt* salt, Digest* digest) {
  if (!hash.starts_with(kHashScheme)) return false;
  hash.remove_prefix(kHashScheme.size());
  const size_t dollar = hash.find('$');
  if (dollar == std::string_view::npos) return false;
  return DecodeHex(hash.substr(0, dollar), salt->data(), salt->size()) &&
         DecodeHex(hash.substr(dollar + 1), digest->data(), digest->size());
}

// SHA-256(salt || secret). False only when OpenSSL fails (out of memory).
bool ComputeDigest(const Salt& salt, std::string_view secret, Digest* digest) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  unsigned int size = 0;
  return ctx != nullptr && EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) == 1 &&
         EVP_DigestUpdate(ctx.get(), salt.data(), salt.size()) == 1 &&
         EVP_DigestUpdate(ctx.get(), secret.data(), secret.size()) == 1 &&
         EVP_DigestFinal_ex(ctx.get(), digest->data(), &size) == 1 && size == digest->size();
}

// Text from the file as an error message shows it: printable ASCII as is, other bytes as \xNN,
// cut after 80 characters, so a bad line cannot put control characters into a log.
std::string Quote(std::string_view text) {
  constexpr size_t kMaxShown = 80;
  std::string out = "'";
  for (size_t i = 0; i < text.size() && i < kMaxShown; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x" + Hex(&c, 1);
    }
  }
  if (text.size() > kMaxShown) out += "...";
  return out + "'";
}

bool IsPrincipalNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

// The characters of a namespace (engine/src/validation.cc).
bool IsNamespaceChar(char c) { return IsPrincipalNameChar(c) || c == ':'; }

// The fields of a line, split at spaces and tabs, without its comment.
std::vector<std::string_view> Fields(std::string_view line) {
  line = line.substr(0, line.find('#'));
  std::vector<std::string_view> fields;
  size_t start = 0;
  while (true) {
    start = line.find_first_not_of(" \t", start);
    if (start == std::string_view::npos) return fields;
    const size_t end = std::min(line.find_first_of(" \t", start), line.size());
    fields.push_back(line.substr(start, end - start));
    start = end;
  }
}

// The parser's position, for "SOURCE:LINE: ..." errors.
struct Where {
  std::string_view source;
  size_t line = 0;

  Status Error(const std::string& message) const {
    return Status::InvalidArgument(std::string(source) + ":" + std::to_string(line) + ": " +
                                   message);
  }
};

Status CheckName(std::string_view name, const Where& where) {
  if (name.size() > kMaxNameBytes || !std::all_of(name.begin(), name.end(), IsPrincipalNameChar)) {
    return where.Error("principal name " + Quote(name) +
                       ": 1 to 64 characters of [A-Za-z0-9._-] (" + std::string(kLineFormat) + ")");
  }
  return Status::Ok();
}

// "payments", "tenant-a.*" or "*".
Status CheckPattern(std::string_view pattern, std::string_view grant, const Where& where) {
  if (pattern.empty()) return where.Error("grant " + Quote(grant) + " names no namespace");
  if (pattern.size() > kMaxPatternBytes) {
    return where.Error("grant " + Quote(grant) + ": a namespace is at most 255 characters");
  }
  const std::string_view body =
      pattern.ends_with('*') ? pattern.substr(0, pattern.size() - 1) : pattern;
  if (body.find('*') != std::string_view::npos) {
    return where.Error("grant " + Quote(grant) +
                       ": '*' stands alone (every namespace) or ends a prefix (\"tenant-a.*\")");
  }
  if (!std::all_of(body.begin(), body.end(), IsNamespaceChar)) {
    return where.Error("grant " + Quote(grant) +
                       ": a namespace has only the characters [A-Za-z0-9_.:-] (a prefix also "
                       "a final '*'), so this grant would cover none");
  }
  return Status::Ok();
}

// "read,write" -> Permission bits.
Result<uint8_t> ParsePermissions(std::string_view perms, std::string_view grant,
                                 const Where& where) {
  if (perms.empty()) {
    return where.Error("grant " + Quote(grant) + " gives no permission (read, write, admin)");
  }
  uint8_t bits = 0;
  while (true) {
    const size_t comma = perms.find(',');
    const std::string_view word = perms.substr(0, comma);
    if (word == "read") {
      bits |= static_cast<uint8_t>(Permission::kRead);
    } else if (word == "write") {
      bits |= static_cast<uint8_t>(Permission::kWrite);
    } else if (word == "admin") {
      bits |= static_cast<uint8_t>(Permission::kAdmin);
    } else {
      return where.Error("grant " + Quote(grant) + ": unknown permission " + Quote(word) +
                         " (read, write, admin, separated by commas)");
    }
    if (comma == std::string_view::npos) return bits;
    perms.remove_prefix(comma + 1);
  }
}

// "NAMESPACES:PERMS"; the namespace may itself contain ':', so the last one separates.
Result<Grant> ParseGrant(std::string_view text, const Where& where) {
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    return where.Error("grant " + Quote(text) +
                       " has no permissions: NS:PERMS, e.g. payments:read,write");
  }
  const std::string_view pattern = text.substr(0, colon);
  if (Status s = CheckPattern(pattern, text, where); !s.ok()) return s;
  Result<uint8_t> bits = ParsePermissions(text.substr(colon + 1), text, where);
  if (!bits.ok()) return bits.status();
  return Grant{std::string(pattern), *bits};
}

// One non-blank line: NAME HASH GRANT...
Result<Principal> ParsePrincipal(const std::vector<std::string_view>& fields, const Where& where) {
  Principal p;
  if (Status s = CheckName(fields[0], where); !s.ok()) return s;
  p.name = std::string(fields[0]);
  if (fields.size() < 2) {
    return where.Error("principal " + Quote(p.name) + " has no secret hash and no grant (" +
                       std::string(kLineFormat) + ")");
  }
  // The field is never shown: it might be a secret pasted where its hash belongs.
  Salt salt;
  Digest digest;
  if (!ParseHash(fields[1], &salt, &digest)) {
    return where.Error("principal " + Quote(p.name) +
                       ": malformed secret hash: expected sha256$<32 hex salt>$<64 hex digest> "
                       "in lower case, as idemctl auth hash prints it");
  }
  p.secret_hash = std::string(fields[1]);
  if (fields.size() < 3) {
    return where.Error("principal " + Quote(p.name) +
                       " has no grant: NS:PERMS, e.g. payments:read,write");
  }
  for (size_t i = 2; i < fields.size(); ++i) {
    Result<Grant> grant = ParseGrant(fields[i], where);
    if (!grant.ok()) return grant.status();
    p.grants.push_back(std::move(*grant));
  }
  return p;
}

}  // namespace

bool Grant::Covers(std::string_view ns) const {
  if (pattern.ends_with('*')) {
    return ns.starts_with(std::string_view(pattern).substr(0, pattern.size() - 1));
  }
  return ns == pattern;
}

bool Principal::Allows(std::string_view ns, Permission permission) const {
  return std::any_of(grants.begin(), grants.end(), [&](const Grant& g) {
    return (g.permissions & static_cast<uint8_t>(permission)) != 0 && g.Covers(ns);
  });
}

bool Principal::AllowsEverywhere(Permission permission) const {
  return std::any_of(grants.begin(), grants.end(), [&](const Grant& g) {
    return (g.permissions & static_cast<uint8_t>(permission)) != 0 && g.pattern == "*";
  });
}

Result<std::shared_ptr<const Credentials>> Credentials::Load(const std::string& path) {
  // O_NONBLOCK: opening a FIFO named by mistake must not wait for a writer; a regular file's
  // reads ignore it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return Status::IOError(path + ": cannot open: " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) return Status::IOError(path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return Status::InvalidArgument(path + ": not a regular file");
  auto too_large = [&](uint64_t bytes) {
    return Status::InvalidArgument(path + ": " + std::to_string(bytes) +
                                   " bytes, larger than the limit of " +
                                   std::to_string(kMaxFileBytes) + " bytes");
  };
  if (static_cast<uint64_t>(st.st_size) > kMaxFileBytes) return too_large(st.st_size);
  std::string text;
  text.reserve(static_cast<size_t>(st.st_size));
  // Read to the end, but never past the limit: the file may have grown since fstat.
  std::array<char, 64 * 1024> chunk;
  while (true) {
    const ssize_t n = ::read(fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IOError(path + ": cannot read: " + std::strerror(errno));
    if (n == 0) break;
    if (text.size() + static_cast<size_t>(n) > kMaxFileBytes) {
      return too_large(text.size() + static_cast<size_t>(n));
    }
    text.append(chunk.data(), static_cast<size_t>(n));
  }
  return Parse(text, path);
}

Result<std::shared_ptr<const Credentials>> Credentials::Parse(std::string_view text,
                                                              std::string_view source) {
  if (text.size() > kMaxFileBytes) {
    return Status::InvalidArgument(std::string(source) + ": " + std::to_string(text.size()) +
                                   " bytes, larger than the limit of " +
                                   std::to_string(kMaxFileBytes) + " bytes");
  }
  auto credentials = std::make_shared<Credentials>();
  std::vector<Principal>& principals = credentials->principals_;
  std::unordered_map<std::string, size_t> name_lines, hash_lines;  // -> line number
  Where where{source, 0};
  while (!text.empty()) {
    ++where.line;
    const size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    if (line.ends_with('\r')) line.remove_suffix(1);
    const std::vector<std::string_view> fields = Fields(line);
    if (fields.empty()) continue;
    if (principals.size() == kMaxPrincipals) {
      return where.Error("more than " + std::to_string(kMaxPrincipals) + " principals");
    }
    Result<Principal> principal = ParsePrincipal(fields, where);
    if (!principal.ok()) return principal.status();
    const auto [same_name, new_name] = name_lines.emplace(principal->name, where.line);
    if (!new_name) {
      return where.Error("duplicate principal " + Quote(principal->name) + " (first on line " +
                         std::to_string(same_name->second) + ")");
    }
    const auto [same_hash, new_hash] = hash_lines.emplace(principal->secret_hash, where.line);
    if (!new_hash) {
      return where.Error("principal " + Quote(principal->name) +
                         " has the same secret hash as line " + std::to_string(same_hash->second) +
                         ": each principal needs its own secret (idemctl auth token)");
    }
    principals.push_back(std::move(*principal));
  }
  if (principals.empty()) {
    return Status::InvalidArgument(std::string(source) +
                                   ": no principal, so every client would be refused (" +
                                   std::string(kLineFormat) + ")");
  }
  return std::shared_ptr<const Credentials>(std::move(credentials));
}

const Principal* Credentials::Authenticate(std::string_view token) const {
  if (token.size() > kMaxTokenBytes || token.size() < kMinSecretBytes) return nullptr;
  const Principal* found = nullptr;
  for (const Principal& p : principals_) {
    // Every hash is computed and compared, whatever matched before: the time taken depends on
    // the number of principals and the token's length, not on which one (if any) it is.
    const bool match = SecretMatches(token, p.secret_hash);
    if (match && found == nullptr) found = &p;
  }
  return found;
}

const Principal* Credentials::Find(std::string_view name) const {
  for (const Principal& p : principals_) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

Result<std::string> HashSecret(std::string_view secret) {
  if (secret.size() < kMinSecretBytes) {
    return Status::InvalidArgument(
        "the secret is " + std::to_string(secret.size()) + " bytes; a secret has at least " +
        std::to_string(kMinSecretBytes) + " (idemctl auth token makes a random one)");
  }
  if (secret.size() > Credentials::kMaxTokenBytes) {
    return Status::InvalidArgument("the secret is " + std::to_string(secret.size()) +
                                   " bytes; a secret has at most " +
                                   std::to_string(Credentials::kMaxTokenBytes));
  }
  Salt salt;
  if (RAND_bytes(salt.data(), static_cast<int>(salt.size())) != 1) {
    return Status::IOError("no random bytes for the salt (OpenSSL RAND_bytes failed)");
  }
  Digest digest;
  if (!ComputeDigest(salt, secret, &digest)) {
    return Status::IOError("SHA-256 failed (OpenSSL EVP_Digest)");
  }
  return std::string(kHashScheme) + Hex(salt.data(), salt.size()) + "$" +
         Hex(digest.data(), digest.size());
}

bool SecretMatches(std::string_view secret, std::string_view hash) {
  Salt salt;
  Digest expected, actual;
  if (!ParseHash(hash, &salt, &expected)) return false;
  if (!ComputeDigest(salt, secret, &actual)) return false;
  return CRYPTO_memcmp(actual.data(), expected.data(), actual.size()) == 0;
}

std::string NewSecret() {
  std::array<unsigned char, kNewSecretBytes> bytes;
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1) return std::string();
  // Standard base64 (44 characters, one '=' of padding), then made URL-safe without padding.
  std::array<unsigned char, 4 * ((kNewSecretBytes + 2) / 3) + 1> encoded;
  const int n = EVP_EncodeBlock(encoded.data(), bytes.data(), static_cast<int>(bytes.size()));
  std::string secret(reinterpret_cast<const char*>(encoded.data()), static_cast<size_t>(n));
  while (secret.ends_with('=')) secret.pop_back();
  std::replace(secret.begin(), secret.end(), '+', '-');
  std::replace(secret.begin(), secret.end(), '/', '_');
  OPENSSL_cleanse(bytes.data(), bytes.size());
  return secret;
}

}  // namespace idem
