// The wire-protocol side of idem-bench (docs/protocol.md), spoken directly instead of through
// idem::Client so that the generator's own cost per request stays a small fraction of the
// server's: one reused FlatBufferBuilder per event-loop thread, frames appended into a
// connection's output buffer, no allocation per request once warm.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <flatbuffers/flatbuffers.h>

#include "bench_config.h"
#include "bench_link.h"
#include "idem/operation.h"
#include "idem/result.h"

namespace idem::bench {

// A response frame longer than this is treated as a broken connection.
constexpr uint32_t kMaxResponseBytes = 16u << 20;

// One HTTP/1.1 response at the front of `in`: its status and body, and how many bytes of `in`
// it takes (0: incomplete). -1 in *status for bytes that are not an HTTP response.
size_t ParseHttpResponse(std::string_view in, int* status, std::string_view* body);

// The little-endian length prefix of a frame (the 4 bytes at p).
uint32_t DecodeFrameLength(const uint8_t* p);

// Opens a blocking TCP connection to config.host:config.port, does the TLS handshake with `tls`
// (null: plain TCP; config.tls names the server), exchanges Hello/HelloReply (not for
// config.http), then makes the socket non-blocking and returns the link. InvalidArgument when
// the host is not an IPv4 address; IOError when the server is unreachable or a handshake fails.
Result<std::unique_ptr<BenchLink>> Connect(const BenchConfig& config, SSL_CTX* tls);

// Builds request frames into a connection's output buffer. One per worker; never shrinks. The
// ops are idem::Ops encoded by the protocol codec (one reused builder), like the client's.
// Keys are key_prefix + ":" + 16 hex digits of the key number (scattered unless
// config.sequential_keys); payloads are config.payload_bytes long.
class RequestEncoder {
 public:
  RequestEncoder(const BenchConfig& config, std::string key_prefix)
      : config_(config), prefix_(std::move(key_prefix)) {}

  // Appends one Apply request with id `id`: one op of `kind` per key number in `keys`; a
  // Complete's fence is fences[i] (0 past the end of fences).
  void Append(std::string* out, uint64_t id, OpKind kind, std::span<const uint64_t> keys,
              std::span<const uint64_t> fences);

  // The same request as POST /v1/apply (config.http): the ops as JSON (docs/http-api.md).
  void AppendHttp(std::string* out, OpKind kind, std::span<const uint64_t> keys);

  // The Hello frame that opens every connection, with `token` ("": none; BenchConfig::token).
  static std::string Hello(std::string_view token);

 private:
  void WriteKey(uint64_t index, std::string* out) const;
  void WritePayload(uint64_t index, std::string* out) const;
  Op MakeOp(OpKind kind, std::string_view key, std::string_view payload, uint64_t fence) const;

  const BenchConfig& config_;
  const std::string prefix_;
  flatbuffers::FlatBufferBuilder b_{1024};
  std::vector<std::string> keys_, payloads_;
  std::vector<Op> ops_;
};

}  // namespace idem::bench
