// Credentials: who may talk to the server and what each principal may do (docs/security.md).
// Built from the file given by --auth-file and immutable once built: every connection reads the
// same one, and a reload (SIGHUP) builds a new one and swaps the pointer.
//
// The file, one principal per line; '#' starts a comment, blank lines are ignored:
//
//   # name     secret hash (idemctl auth hash)       grants
//   checkout   sha256$<32 hex salt>$<64 hex digest>  payments:read,write  refunds:read
//   ops        sha256$<32 hex salt>$<64 hex digest>  *:read,write,admin
//
//   NAME    [A-Za-z0-9._-]{1,64}, unique in the file
//   GRANT   NAMESPACES ":" PERMS, at least one per principal
//   NAMESPACES  an exact namespace ("payments"), a prefix ending in '*' ("tenant-a.*"), or "*";
//               namespaces have only the characters [A-Za-z0-9_.:-], so neither may have others
//   PERMS   a comma-separated subset of read, write, admin
//
// What each permission allows on the namespaces its grant covers:
//   read   Get
//   write  every other op of an ApplyRequest (Insert, CompareAndSet, Delete, Begin, Complete,
//          Abort, Heartbeat, tokens, locks, Transition): what an op returns (a replayed response,
//          the current record) comes with it
//   admin  Scan, Purge, Compact of that namespace; with the grant "*" also the requests that span
//          every namespace: Stats (and GET /metrics), Backup, Compact of the whole store
//
// Secrets are never stored: the file holds "sha256$SALT$DIGEST", DIGEST = SHA-256(SALT bytes ||
// secret), SALT 16 random bytes, both in lower-case hex. A fast hash is enough because secrets
// are random tokens of at least kMinSecretBytes (idemctl auth token makes them; HashSecret
// refuses shorter ones), not passwords a dictionary could guess.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "idem/result.h"
#include "idem/status.h"

namespace idem {

enum class Permission : uint8_t { kRead = 1, kWrite = 2, kAdmin = 4 };

struct Grant {
  std::string pattern;      // as written: "payments", "tenant-a.*", "*"
  uint8_t permissions = 0;  // Permission bits

  // The namespace is covered: equal to the pattern, or starting with its prefix before '*'.
  bool Covers(std::string_view ns) const;
};

struct Principal {
  std::string name;
  std::string secret_hash;  // "sha256$SALT$DIGEST"
  std::vector<Grant> grants;

  // Some grant covering `ns` includes `permission`.
  bool Allows(std::string_view ns, Permission permission) const;
  // A "*" grant includes `permission`: what requests spanning every namespace need.
  bool AllowsEverywhere(Permission permission) const;
};

class Credentials {
 public:
  // Room for kMaxPrincipals lines with long names and several grants (a line is at least 114
  // bytes: kMaxPrincipals of them would not fit in 1 MiB).
  static constexpr size_t kMaxFileBytes = 4u << 20;
  static constexpr size_t kMaxPrincipals = 10'000;
  static constexpr size_t kMaxTokenBytes = 1024;  // longer presented tokens are refused unhashed

  // Reads and parses `path`. IOError when it cannot be read; InvalidArgument naming
  // "PATH:LINE: ..." for the first bad line (unknown permission, malformed hash, duplicate name,
  // no grant, ...), or when the file is larger than kMaxFileBytes (checked before reading it),
  // lists more than kMaxPrincipals, or none.
  static Result<std::shared_ptr<const Credentials>> Load(const std::string& path);
  // The same from text already read; `source` names it in errors.
  static Result<std::shared_ptr<const Credentials>> Parse(std::string_view text,
                                                          std::string_view source);

  // The principal whose secret `token` is, or null. Every principal's hash is checked, each in
  // constant time, whether or not an earlier one matched; a token longer than kMaxTokenBytes
  // or shorter than kMinSecretBytes matches none.
  const Principal* Authenticate(std::string_view token) const;
  // By name (a reload re-checks a connection's principal by name and hash); null when absent.
  const Principal* Find(std::string_view name) const;

  const std::vector<Principal>& principals() const { return principals_; }

 private:
  std::vector<Principal> principals_;
};

// Secrets (idemctl auth hash / auth token).
inline constexpr size_t kMinSecretBytes = 16;
// "sha256$SALT$DIGEST" with a fresh random salt. InvalidArgument for a secret shorter than
// kMinSecretBytes or longer than Credentials::kMaxTokenBytes.
Result<std::string> HashSecret(std::string_view secret);
// `secret` hashes to `hash` (constant time in the secret's content); false for a malformed hash.
bool SecretMatches(std::string_view secret, std::string_view hash);
// A new random secret: 32 random bytes, base64url without padding (43 characters); "" in the
// (practically impossible) case that OpenSSL's random generator fails, which callers refuse.
std::string NewSecret();

}  // namespace idem
