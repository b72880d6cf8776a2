#include "wire_client.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "idem/status.h"
#include "json_writer.h"
#include "protocol_codec.h"
#include "protocol_generated.h"
#include "tls_context.h"

namespace idem::bench {
namespace {

namespace fb = flatbuffers;

// A bijection of the 64-bit integers (SplitMix64's finalizer: each step is invertible), so distinct
// key numbers stay distinct keys while consecutive numbers land far apart.
uint64_t Scatter(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Reads one whole frame from a link whose socket still blocks (the handshake only).
bool ReadFrameBlocking(BenchLink& link, std::vector<uint64_t>* body, uint32_t* size) {
  auto read_exact = [&link](void* p, size_t n) {
    auto* c = static_cast<char*>(p);
    while (n > 0) {
      ssize_t r = link.Read(c, n);
      if (r <= 0) {
        if (r < 0 && errno == EINTR) continue;
        return false;
      }
      c += r;
      n -= static_cast<size_t>(r);
    }
    return true;
  };
  uint8_t prefix[4];
  if (!read_exact(prefix, 4)) return false;
  *size = DecodeFrameLength(prefix);
  if (*size == 0 || *size > kMaxResponseBytes) return false;
  body->resize((*size + 7) / 8);
  return read_exact(body->data(), *size);
}

// The TLS handshake on the connected, still blocking `fd`: the session, or IOError with OpenSSL's
// reason (and the certificate check's, when that is what failed).
Result<SSL*> HandshakeTls(int fd, SSL_CTX* tls, const BenchConfig& config) {
  const std::string where = config.host + ":" + std::to_string(config.port);
  SSL* ssl = SSL_new(tls);
  if (ssl == nullptr || SSL_set_fd(ssl, fd) != 1) {
    SSL_free(ssl);
    return Status::IOError("TLS with " + where + ": cannot make a session");
  }
  // The worker retries a write that would block with more bytes appended, perhaps from a moved
  // buffer; each record written counts, as write(2) would.
  SSL_set_mode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  const std::string& name = config.tls->server_name.empty() ? config.host : config.tls->server_name;
  if (Status s = ConfigureClientTls(ssl, name); !s.ok()) {
    SSL_free(ssl);
    return s;
  }
  ERR_clear_error();
  if (SSL_connect(ssl) != 1) {
    const char* reason = ERR_reason_error_string(ERR_peek_error());
    std::string why = reason != nullptr ? reason : "the server closed the connection";
    if (const long verify = SSL_get_verify_result(ssl); verify != X509_V_OK) {
      why += std::string(" (") + X509_verify_cert_error_string(verify) + ")";
    }
    ERR_clear_error();
    SSL_free(ssl);
    return Status::IOError("TLS handshake with " + where + " failed: " + why);
  }
  return ssl;
}

}  // namespace

uint32_t DecodeFrameLength(const uint8_t* p) {
  return p[0] | p[1] << 8 | p[2] << 16 | static_cast<uint32_t>(p[3]) << 24;
}

Result<std::unique_ptr<BenchLink>> Connect(const BenchConfig& config, SSL_CTX* tls) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(config.port);
  if (inet_pton(AF_INET, config.host.c_str(), &addr.sin_addr) != 1) {
    return Status::InvalidArgument("--server: \"" + config.host + "\" is not an IPv4 address");
  }
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::IOError(std::string("socket: ") + std::strerror(errno));
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    Status s = Status::IOError("connect " + config.host + ":" + std::to_string(config.port) + ": " +
                               std::strerror(errno));
    ::close(fd);
    return s;
  }
  SSL* ssl = nullptr;
  if (tls != nullptr) {
    Result<SSL*> session = HandshakeTls(fd, tls, config);
    if (!session.ok()) {
      ::close(fd);
      return session.status();
    }
    ssl = *session;
  }
  auto link = std::make_unique<BenchLink>(fd, ssl);
  if (config.http) {  // nothing to exchange first
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return link;
  }
  const std::string hello = RequestEncoder::Hello(config.token);
  std::vector<uint64_t> body;
  uint32_t size = 0;
  const wire::Frame* frame = nullptr;
  if (link->Write(hello.data(), hello.size()) == static_cast<ssize_t>(hello.size()) &&
      ReadFrameBlocking(*link, &body, &size)) {
    fb::Verifier verifier(reinterpret_cast<const uint8_t*>(body.data()), size);
    if (wire::VerifyFrameBuffer(verifier)) frame = wire::GetFrame(body.data());
  }
  if (frame == nullptr || frame->body_type() != wire::Body::HelloReply) {
    std::string why = frame && frame->error() && frame->error()->message()
                          ? frame->error()->message()->str()
                          : "no HelloReply";
    return Status::IOError("handshake with " + config.host + ":" + std::to_string(config.port) +
                           " failed: " + why);
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return link;
}

void RequestEncoder::Append(std::string* out, uint64_t id, OpKind kind,
                            std::span<const uint64_t> keys, std::span<const uint64_t> fences) {
  // Every op of the request borrows its key and payload from here until it is encoded.
  keys_.resize(keys.size());
  payloads_.resize(keys.size());
  const bool has_payload = kind == OpKind::kInsert || kind == OpKind::kPreload ||
                           kind == OpKind::kComplete || kind == OpKind::kCas;
  for (size_t i = 0; i < keys.size(); ++i) {
    WriteKey(keys[i], &keys_[i]);
    if (has_payload) WritePayload(keys[i], &payloads_[i]);
  }
  ops_.clear();
  for (size_t i = 0; i < keys.size(); ++i) {
    ops_.push_back(MakeOp(kind, keys_[i], payloads_[i], i < fences.size() ? fences[i] : 0));
  }
  AppendApplyRequest(b_, id, ops_, out);
}

void RequestEncoder::AppendHttp(std::string* out, OpKind kind, std::span<const uint64_t> keys) {
  std::string body = "{\"ops\":[";
  std::string key, payload;
  for (size_t i = 0; i < keys.size(); ++i) {
    WriteKey(keys[i], &key);
    WritePayload(keys[i], &payload);
    if (i > 0) body += ',';
    body += "{\"op\":\"" +
            std::string(OpTypeName(kind == OpKind::kInsert ? OpType::kInsert : OpType::kGet)) +
            "\",\"namespace\":" + JsonQuote(config_.ns) + ",\"key\":" + JsonQuote(key);
    if (kind == OpKind::kInsert) {
      body += ",\"status\":\"PROCESSING\",\"payload\":" + JsonQuote(payload) +
              ",\"ttl_ms\":" + std::to_string(config_.ttl_ms);
    }
    body += '}';
  }
  body += "]}";
  *out +=
      "POST /v1/apply HTTP/1.1\r\nHost: idem-bench\r\nContent-Type: application/json\r\n" +
      (config_.token.empty() ? std::string() : "Authorization: Bearer " + config_.token + "\r\n") +
      "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

size_t ParseHttpResponse(std::string_view in, int* status, std::string_view* body) {
  const size_t end = in.find("\r\n\r\n");
  if (end == std::string_view::npos) {
    *status = in.size() > 65536 ? -1 : 0;
    return 0;
  }
  if (!in.starts_with("HTTP/1.1 ") || in.size() < 12) {
    *status = -1;
    return 0;
  }
  *status = std::atoi(std::string(in.substr(9, 3)).c_str());
  size_t length = 0;
  const std::string_view head = in.substr(0, end);
  for (std::string_view name : {"Content-Length: ", "content-length: "}) {
    if (size_t at = head.find(name); at != std::string_view::npos) {
      length = std::strtoull(head.data() + at + name.size(), nullptr, 10);
    }
  }
  if (in.size() < end + 4 + length) return 0;
  *body = in.substr(end + 4, length);
  return end + 4 + length;
}

std::string RequestEncoder::Hello(std::string_view token) {
  FrameBytes frame = EncodeHello(1, "idem-bench", token);
  return std::string(reinterpret_cast<const char*>(frame.data()), frame.size());
}

void RequestEncoder::WriteKey(uint64_t index, std::string* out) const {
  char buf[24];
  std::snprintf(buf, sizeof buf, ":%016" PRIx64, config_.sequential_keys ? index : Scatter(index));
  out->assign(prefix_).append(buf);
}

// A response-like payload that names its key, so it is not one constant repeated (which
// RocksDB's block compression would make unrealistically cheap to store).
void RequestEncoder::WritePayload(uint64_t index, std::string* out) const {
  out->clear();
  char buf[96];
  std::snprintf(buf, sizeof buf,
                "{\"ref\":\"%016" PRIx64 "\",\"code\":201,\"txn\":\"%016" PRIx64 "\",\"body\":\"",
                index, static_cast<uint64_t>(index * 0x9e3779b97f4a7c15ULL));
  while (out->size() < config_.payload_bytes) out->append(buf);
  out->resize(config_.payload_bytes);
}

Op RequestEncoder::MakeOp(OpKind kind, std::string_view key, std::string_view payload,
                          uint64_t fence) const {
  switch (kind) {
    case OpKind::kInsert:
    case OpKind::kPreload:
      return Op::Insert({.ns = config_.ns,
                         .key = key,
                         .status = "PROCESSING",
                         .payload = payload,
                         .ttl = std::chrono::milliseconds(config_.ttl_ms)});
    case OpKind::kBegin: {
      Op op = Op::Begin({.ns = config_.ns, .key = key, .owner = "idem-bench"});
      op.ttl = std::chrono::milliseconds(config_.ttl_ms);
      return op;
    }
    case OpKind::kComplete:
      return Op::Complete({.ns = config_.ns,
                           .key = key,
                           .fence = fence,
                           .response = payload,
                           .ttl = std::chrono::milliseconds(config_.ttl_ms)});
    case OpKind::kCas:
      return Op::CompareAndSet({.ns = config_.ns,
                                .key = key,
                                .condition = Condition{{"PROCESSING"}, {}, {}},
                                .update = Update{"SUCCEEDED", payload, {}}});
    case OpKind::kGet:
      break;
  }
  return Op::Get({.ns = config_.ns, .key = key});
}

}  // namespace idem::bench
