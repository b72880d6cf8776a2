// What idem-bench runs: parsed from its command line. A unit of its own so the parsing is tested
// without a server.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "idem/client.h"
#include "idem/result.h"
#include "key_distribution.h"

namespace idem::bench {

// One kind of request the generator sends.
enum class OpKind : uint8_t {
  kInsert,    // insert-if-absent of a new key (or, with dup_ratio, of one already inserted)
  kBegin,     // Begin of a new key; a STARTED answer is followed by its Complete (the flow)
  kComplete,  // the second step of kBegin (never chosen directly)
  kCas,       // CompareAndSet status PROCESSING -> SUCCEEDED with the response as payload
  kGet,
  kPreload,  // loading the key space before the measurement (not measured)
};
inline constexpr int kOpKindCount = 6;
std::string_view OpKindName(OpKind kind);

struct MixEntry {
  OpKind kind;
  uint32_t weight;
};

struct BenchConfig {
  bool help = false;     // --help: print BenchUsage() and exit 0
  bool version = false;  // --version: print the version and exit 0
  std::string host = "127.0.0.1";
  uint16_t port = 7878;
  // Sent in every connection's Hello (HTTP: as "Authorization: Bearer TOKEN" on every request)
  // to a server with --auth-file. "": none.
  std::string token;
  // binary: the wire protocol (docs/protocol.md); http: POST /v1/apply with keep-alive
  // (docs/http-api.md; --server names the HTTP port then). HTTP answers in order, so it runs
  // without pipelining, the insert workload only.
  bool http = false;
  // --tls, --tls-ca, --tls-cert/--tls-key, --tls-server-name: every connection over TLS, the
  // handshake done before the measurement (the Client's policy: net/src/tls_context.h).
  std::optional<ClientTlsOptions> tls;
  int connections = 16;
  int pipeline = 1;  // requests in flight per connection
  int batch = 1;     // ops per request
  int threads = 1;   // event-loop threads; connections are split between them
  int64_t duration_ms = 10'000;
  uint64_t requests = 0;  // > 0: stop after this many requests instead of after duration_ms
  std::string workload = "insert";  // insert | begin | cas | get | mix
  std::vector<MixEntry> mix;        // the workload as weights (one entry unless "mix")
  double dup_ratio = 0.0;           // insert: share of requests that reuse an inserted key
  uint64_t keys = 100'000;          // key space of cas/get (and of the preload)
  bool preload = false;             // insert keys [0, keys) with status PROCESSING first
  bool preload_only = false;        // preload, then exit without a measurement
  Distribution distribution = Distribution::kUniform;
  // Real idempotency keys (UUIDs, hashes) arrive in no order. By default (--key-order random)
  // key number i is spelled as a fixed permutation of i, so new keys are still new but land
  // anywhere in the key space, as the peers' benchmarks draw theirs; true (--key-order
  // sequential) spells i itself: ascending keys, which LSM trees and B-trees store far more
  // cheaply.
  bool sequential_keys = false;
  double zipf_theta = 0.99;
  size_t payload_bytes = 100;
  int64_t ttl_ms = 24LL * 3600 * 1000;
  double rate = 0;  // > 0: open loop at this many requests/s (all threads)
  std::string ns = "bench";
  std::string key_prefix;  // empty: random per run, so "new keys" are new
  uint64_t seed = 0;       // 0: from the clock
  bool json = false;
  bool progress = true;
  int server_pid = 0;  // > 0: also report the server's CPU time per op
  int64_t drain_timeout_ms = 10'000;
};

// `args` excludes the program name; "--flag value" and "--flag=value" (tools/common/cli_app.h).
// InvalidArgument names the offending flag. With --help or --version nothing else is checked.
Result<BenchConfig> ParseBenchFlags(std::span<const std::string_view> args);
std::string BenchUsage();

}  // namespace idem::bench
