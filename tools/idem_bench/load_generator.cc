#include "load_generator.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include <flatbuffers/flatbuffers.h>

#include "idem/operation.h"
#include "idem/status.h"
#include "json_writer.h"
#include "proc_cpu.h"
#include "protocol_codec.h"
#include "protocol_generated.h"

namespace idem::bench {
namespace {

namespace fb = flatbuffers;

constexpr uint32_t kMaxResponseBytes = 16u << 20;
constexpr int64_t kPublishEveryNs = 200'000'000;     // workers hand progress to the printer
constexpr uint64_t kNewKeyBase = uint64_t{1} << 48;  // new keys never collide with [0, keys)
constexpr size_t kPreloadBatch = 256;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// A bijection of the 64-bit integers (SplitMix64's finalizer: each step is invertible), so distinct
// key numbers stay distinct keys while consecutive numbers land far apart.
uint64_t Scatter(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Builds request frames into a connection's output buffer. One per worker; never shrinks. The
// ops are idem::Ops encoded by the protocol codec (one reused builder), like the client's.
class Encoder {
 public:
  Encoder(const BenchConfig& config, std::string key_prefix)
      : config_(config), prefix_(std::move(key_prefix)) {}

  void Append(std::string* out, uint64_t id, OpKind kind, std::span<const uint64_t> keys,
              std::span<const uint64_t> fences) {
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

  static std::string Hello() {
    FrameBytes frame = EncodeHello(1, "idem-bench");
    return std::string(reinterpret_cast<const char*>(frame.data()), frame.size());
  }

 private:
  void WriteKey(uint64_t index, std::string* out) const {
    char buf[24];
    std::snprintf(buf, sizeof buf, ":%016" PRIx64,
                  config_.sequential_keys ? index : Scatter(index));
    out->assign(prefix_).append(buf);
  }

  // A response-like payload that names its key, so it is not one constant repeated (which
  // RocksDB's block compression would make unrealistically cheap to store).
  void WritePayload(uint64_t index, std::string* out) const {
    out->clear();
    char buf[96];
    std::snprintf(buf, sizeof buf,
                  "{\"ref\":\"%016" PRIx64 "\",\"code\":201,\"txn\":\"%016" PRIx64 "\",\"body\":\"",
                  index, static_cast<uint64_t>(index * 0x9e3779b97f4a7c15ULL));
    while (out->size() < config_.payload_bytes) out->append(buf);
    out->resize(config_.payload_bytes);
  }

  Op MakeOp(OpKind kind, std::string_view key, std::string_view payload, uint64_t fence) const {
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

  const BenchConfig& config_;
  const std::string prefix_;
  fb::FlatBufferBuilder b_{1024};
  std::vector<std::string> keys_, payloads_;
  std::vector<Op> ops_;
};

// Reads one whole frame with a blocking socket (the handshake only).
bool ReadFrameBlocking(int fd, std::vector<uint64_t>* body, uint32_t* size) {
  auto read_exact = [fd](void* p, size_t n) {
    auto* c = static_cast<char*>(p);
    while (n > 0) {
      ssize_t r = ::read(fd, c, n);
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
  *size = prefix[0] | prefix[1] << 8 | prefix[2] << 16 | static_cast<uint32_t>(prefix[3]) << 24;
  if (*size == 0 || *size > kMaxResponseBytes) return false;
  body->resize((*size + 7) / 8);
  return read_exact(body->data(), *size);
}

Result<int> Connect(const BenchConfig& config) {
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
  const std::string hello = Encoder::Hello();
  std::vector<uint64_t> body;
  uint32_t size = 0;
  const wire::Frame* frame = nullptr;
  if (::write(fd, hello.data(), hello.size()) == static_cast<ssize_t>(hello.size()) &&
      ReadFrameBlocking(fd, &body, &size)) {
    fb::Verifier verifier(reinterpret_cast<const uint8_t*>(body.data()), size);
    if (wire::VerifyFrameBuffer(verifier)) frame = wire::GetFrame(body.data());
  }
  if (frame == nullptr || frame->body_type() != wire::Body::HelloReply) {
    ::close(fd);
    std::string why = frame && frame->error() && frame->error()->message()
                          ? frame->error()->message()->str()
                          : "no HelloReply";
    return Status::IOError("handshake with " + config.host + ":" + std::to_string(config.port) +
                           " failed: " + why);
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

// What workers hand to the progress printer.
struct Progress {
  std::mutex mu;
  LatencyHistogram latency;  // guarded by mu
  uint64_t ops = 0;          // guarded by mu
  uint64_t errors = 0;       // guarded by mu
};

enum class Phase { kPreload, kMeasure };

// One event-loop thread and its connections.
class Worker {
 public:
  Worker(const BenchConfig& config, int index, std::vector<int> fds, std::string key_prefix,
         uint64_t seed, std::atomic<uint64_t>* preload_next, Progress* progress)
      : config_(config),
        index_(index),
        encoder_(config, std::move(key_prefix)),
        rng_(seed),
        preload_next_(preload_next),
        progress_(progress) {
    chooser_ = MakeKeyChooser(config.distribution, config.keys, config.zipf_theta);
    for (const MixEntry& e : config.mix) mix_total_ += e.weight;
    epoll_ = epoll_create1(EPOLL_CLOEXEC);
    for (int fd : fds) {
      auto c = std::make_unique<Conn>();
      c->fd = fd;
      c->in.resize(64 * 1024);
      conns_.push_back(std::move(c));
    }
    for (size_t i = 0; i < conns_.size(); ++i) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = i;
      epoll_ctl(epoll_, EPOLL_CTL_ADD, conns_[i]->fd, &ev);
    }
  }
  ~Worker() {
    ::close(epoll_);
    for (auto& c : conns_) ::close(c->fd);
  }

  // Runs one phase: the preload (until the shared key counter is exhausted) or the measurement
  // (until end_ns or request_limit, then drains what is in flight).
  void Run(Phase phase, int64_t start_ns, int64_t end_ns, uint64_t request_limit) {
    phase_ = phase;
    end_ns_ = end_ns;
    limit_ = request_limit;
    report_ = BenchReport();
    issued_ = 0;
    stopping_ = false;
    const int depth = phase == Phase::kPreload ? std::max(config_.pipeline, 4) : config_.pipeline;
    for (auto& c : conns_) {
      c->slots.assign(static_cast<size_t>(depth), Slot());
      c->free.clear();
      for (int s = depth - 1; s >= 0; --s) c->free.push_back(static_cast<uint32_t>(s));
    }
    const bool open_loop = phase == Phase::kMeasure && config_.rate > 0;
    const int64_t interval_ns =
        open_loop ? static_cast<int64_t>(1e9 * config_.threads / config_.rate) : 0;
    int64_t next_due = start_ns;
    int64_t last_publish = start_ns;
    drain_deadline_ = INT64_MAX;
    last_response_ns_ = start_ns;

    if (!open_loop) {
      for (size_t i = 0; i < conns_.size(); ++i) {
        while (!conns_[i]->free.empty() && IssueNext(i, start_ns)) {
        }
      }
    }
    std::vector<epoll_event> events(conns_.size() + 1);
    while (true) {
      const int64_t now = NowNs();
      if (!stopping_ && (now >= end_ns_ || (limit_ && issued_ >= limit_) || dead_all())) {
        BeginStop(now);
      }
      if (open_loop && !stopping_) {
        while (next_due <= now && !(limit_ && issued_ >= limit_)) {
          size_t c = FindFreeConn();
          if (c == SIZE_MAX || !IssueNext(c, next_due)) break;  // backlog: latency keeps counting
          next_due += interval_ns;
        }
      }
      FlushDirty();
      if (stopping_ && (outstanding_ == 0 || now >= drain_deadline_)) break;
      if (now - last_publish >= kPublishEveryNs) {
        Publish();
        last_publish = now;
      }
      int64_t wait_ns = kPublishEveryNs;
      if (!stopping_) wait_ns = std::min(wait_ns, end_ns_ - now);
      if (open_loop && !stopping_) wait_ns = std::min(wait_ns, next_due - now);
      wait_ns = std::max<int64_t>(wait_ns, 0);
      timespec ts{static_cast<time_t>(wait_ns / 1'000'000'000),
                  static_cast<long>(wait_ns % 1'000'000'000)};
      int n = epoll_pwait2(epoll_, events.data(), static_cast<int>(events.size()), &ts, nullptr);
      if (n < 0 && errno != EINTR) break;
      for (int i = 0; i < n; ++i) {
        const size_t c = events[i].data.u64;
        if (events[i].events & EPOLLOUT) Flush(c);
        if (events[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) ReadAll(c);
      }
    }
    report_.errors[0] += outstanding_;  // never answered
    outstanding_ = 0;
    Publish();
  }

  BenchReport& report() { return report_; }
  int64_t last_response_ns() const { return last_response_ns_; }

 private:
  struct Slot {
    bool busy = false;
    uint32_t gen = 0;
    OpKind kind = OpKind::kInsert;
    int64_t intended_ns = 0;
    std::vector<uint64_t> keys;
  };
  struct Conn {
    int fd = -1;
    bool dead = false;
    bool dirty = false;
    bool want_out = false;
    std::string out;
    size_t out_off = 0;
    std::vector<uint8_t> in;
    size_t in_len = 0;
    std::vector<Slot> slots;
    std::vector<uint32_t> free;
  };

  bool dead_all() const { return dead_count_ == conns_.size(); }

  // No new requests from now on; what is in flight gets drain_timeout_ms to be answered.
  void BeginStop(int64_t now) {
    if (stopping_) return;
    stopping_ = true;
    drain_deadline_ = now + config_.drain_timeout_ms * 1'000'000;
  }

  size_t FindFreeConn() {
    for (size_t n = 0; n < conns_.size(); ++n) {
      size_t c = (rr_ + n) % conns_.size();
      if (!conns_[c]->dead && !conns_[c]->free.empty()) {
        rr_ = c + 1;
        return c;
      }
    }
    return SIZE_MAX;
  }

  OpKind PickKind() {
    if (config_.mix.size() == 1) return config_.mix[0].kind;
    uint64_t r = rng_.Below(mix_total_);
    for (const MixEntry& e : config_.mix) {
      if (r < e.weight) return e.kind;
      r -= e.weight;
    }
    return config_.mix.back().kind;
  }

  uint64_t NewKey() { return kNewKeyBase + index_ + config_.threads * new_count_++; }

  // Chooses and queues the next request on connection c. False when there is nothing to send.
  bool IssueNext(size_t c, int64_t intended_ns) {
    if (stopping_ || conns_[c]->dead || (limit_ && issued_ >= limit_)) return false;
    OpKind kind = phase_ == Phase::kPreload ? OpKind::kPreload : PickKind();
    keys_.clear();
    if (kind == OpKind::kPreload) {
      const uint64_t first = preload_next_->fetch_add(kPreloadBatch);
      for (uint64_t k = first; k < std::min(first + kPreloadBatch, config_.keys); ++k) {
        keys_.push_back(k);
      }
      if (keys_.empty()) {  // the whole key space is handed out: drain and stop
        BeginStop(NowNs());
        return false;
      }
    } else {
      for (int i = 0; i < config_.batch; ++i) {
        switch (kind) {
          case OpKind::kInsert:
            if (config_.dup_ratio > 0 && new_count_ > 0 && rng_.NextDouble() < config_.dup_ratio) {
              keys_.push_back(kNewKeyBase + index_ + config_.threads * rng_.Below(new_count_));
            } else {
              keys_.push_back(NewKey());
            }
            break;
          case OpKind::kBegin:
            keys_.push_back(NewKey());
            break;
          default:
            keys_.push_back(chooser_->Next(rng_));
        }
      }
    }
    Send(c, kind, intended_ns, {});
    ++issued_;
    return true;
  }

  // Queues keys_ as one request of `kind` on connection c (a free slot is required).
  void Send(size_t c, OpKind kind, int64_t intended_ns, std::span<const uint64_t> fences) {
    Conn& conn = *conns_[c];
    const uint32_t s = conn.free.back();
    conn.free.pop_back();
    Slot& slot = conn.slots[s];
    slot.busy = true;
    ++slot.gen;
    slot.kind = kind;
    slot.intended_ns = intended_ns;
    slot.keys.assign(keys_.begin(), keys_.end());
    const uint64_t id = (static_cast<uint64_t>(slot.gen) << 16) | s;
    encoder_.Append(&conn.out, id, kind, slot.keys, fences);
    ++outstanding_;
    ++report_.requests_by_kind[static_cast<size_t>(kind)];
    if (!conn.dirty) {
      conn.dirty = true;
      dirty_.push_back(c);
    }
  }

  void FlushDirty() {
    for (size_t c : dirty_) {
      conns_[c]->dirty = false;
      Flush(c);
    }
    dirty_.clear();
  }

  void Flush(size_t c) {
    Conn& conn = *conns_[c];
    while (!conn.dead && conn.out_off < conn.out.size()) {
      ssize_t n = ::write(conn.fd, conn.out.data() + conn.out_off, conn.out.size() - conn.out_off);
      if (n > 0) {
        conn.out_off += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        SetWantOut(c, true);
        return;
      }
      Kill(c);
      return;
    }
    conn.out.clear();
    conn.out_off = 0;
    SetWantOut(c, false);
  }

  void SetWantOut(size_t c, bool want) {
    Conn& conn = *conns_[c];
    if (conn.want_out == want || conn.dead) return;
    conn.want_out = want;
    epoll_event ev{};
    ev.events = want ? (EPOLLIN | EPOLLOUT) : EPOLLIN;
    ev.data.u64 = c;
    epoll_ctl(epoll_, EPOLL_CTL_MOD, conn.fd, &ev);
  }

  // The connection failed: its requests in flight count as IO_ERROR.
  void Kill(size_t c) {
    Conn& conn = *conns_[c];
    if (conn.dead) return;
    conn.dead = true;
    ++dead_count_;
    epoll_ctl(epoll_, EPOLL_CTL_DEL, conn.fd, nullptr);
    for (Slot& slot : conn.slots) {
      if (!slot.busy) continue;
      slot.busy = false;
      --outstanding_;
      report_.errors[static_cast<size_t>(Status::Code::kIOError)] += 1;
    }
  }

  void ReadAll(size_t c) {
    Conn& conn = *conns_[c];
    while (!conn.dead) {
      if (conn.in_len == conn.in.size()) conn.in.resize(conn.in.size() * 2);
      ssize_t n = ::read(conn.fd, conn.in.data() + conn.in_len, conn.in.size() - conn.in_len);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n <= 0) {
        Kill(c);
        return;
      }
      conn.in_len += static_cast<size_t>(n);
      size_t pos = 0;
      while (conn.in_len - pos >= 4) {
        const uint8_t* p = conn.in.data() + pos;
        const uint32_t size = p[0] | p[1] << 8 | p[2] << 16 | static_cast<uint32_t>(p[3]) << 24;
        if (size == 0 || size > kMaxResponseBytes) {
          Kill(c);
          return;
        }
        if (conn.in_len - pos - 4 < size) break;
        // The body is copied to 8-byte-aligned memory before it is verified and read.
        aligned_.resize((size + 7) / 8);
        std::memcpy(aligned_.data(), p + 4, size);
        pos += 4 + size;
        OnFrame(c, reinterpret_cast<const uint8_t*>(aligned_.data()), size);
        if (conn.dead) return;
      }
      if (pos > 0) {
        std::memmove(conn.in.data(), conn.in.data() + pos, conn.in_len - pos);
        conn.in_len -= pos;
      }
      if (static_cast<size_t>(n) < conn.in.size() / 2) break;  // drained the socket, most likely
    }
  }

  void OnFrame(size_t c, const uint8_t* data, uint32_t size) {
    Conn& conn = *conns_[c];
    fb::Verifier verifier(data, size, 16, 1'000'000);
    if (!wire::VerifyFrameBuffer(verifier)) {
      report_.errors[static_cast<size_t>(Status::Code::kCorruption)] += 1;
      Kill(c);
      return;
    }
    const wire::Frame* frame = wire::GetFrame(data);
    const uint64_t id = frame->id();
    const uint32_t s = static_cast<uint32_t>(id & 0xffff);
    if (id == 0 || s >= conn.slots.size() || !conn.slots[s].busy ||
        conn.slots[s].gen != static_cast<uint32_t>(id >> 16)) {
      // id 0: a connection-level error; the server closes next.
      if (frame->error()) report_.errors[std::min<size_t>(frame->error()->code(), 15)] += 1;
      Kill(c);
      return;
    }
    Slot& slot = conn.slots[s];
    const int64_t now = NowNs();
    last_response_ns_ = now;
    const uint64_t micros =
        static_cast<uint64_t>(std::max<int64_t>(0, now - slot.intended_ns)) / 1000;
    const bool measured = phase_ == Phase::kMeasure;
    if (measured) {
      report_.latency.Record(micros);
      interval_.Record(micros);
      ++report_.requests;
    }
    keys_.clear();
    fences_.clear();
    if (const wire::Error* error = frame->error()) {
      report_.errors[std::min<size_t>(error->code(), 15)] += 1;
      ++interval_errors_;
    } else if (const wire::ApplyResponse* response = frame->body_as_ApplyResponse()) {
      const auto* results = response->results();
      const size_t n = results ? results->size() : 0;
      if (measured) {
        report_.ops += n;
        interval_ops_ += n;
      }
      for (size_t i = 0; i < n; ++i) {
        const wire::OpResult* r = results->Get(static_cast<fb::uoffset_t>(i));
        if (r->error()) {
          report_.errors[std::min<size_t>(r->error()->code(), 15)] += 1;
          ++interval_errors_;
          continue;
        }
        report_.outcomes[std::min<size_t>(static_cast<size_t>(r->outcome()), 31)] += 1;
        if (slot.kind == OpKind::kBegin && r->outcome() == wire::Outcome::Started && r->record() &&
            i < slot.keys.size()) {
          keys_.push_back(slot.keys[i]);
          fences_.push_back(r->record()->fence());
        }
        if (slot.kind == OpKind::kComplete) ++report_.flows;
      }
    }
    slot.busy = false;
    --outstanding_;
    conn.free.push_back(s);
    if (!keys_.empty() && !conn.dead) {
      // The flow's second step goes out at once on the same slot, whatever the phase.
      std::vector<uint64_t> fences(fences_);
      Send(c, OpKind::kComplete, now, fences);
      return;
    }
    if (phase_ == Phase::kPreload || config_.rate <= 0) IssueNext(c, now);
  }

  void Publish() {
    if (progress_ == nullptr || phase_ != Phase::kMeasure) return;
    std::lock_guard<std::mutex> lock(progress_->mu);
    progress_->latency.Merge(interval_);
    progress_->ops += interval_ops_;
    progress_->errors += interval_errors_;
    interval_.Reset();
    interval_ops_ = 0;
    interval_errors_ = 0;
  }

  const BenchConfig& config_;
  const int index_;
  Encoder encoder_;
  Rng rng_;
  std::unique_ptr<KeyChooser> chooser_;
  uint64_t mix_total_ = 0;
  std::atomic<uint64_t>* preload_next_;
  Progress* progress_;
  int epoll_ = -1;
  std::vector<std::unique_ptr<Conn>> conns_;
  size_t dead_count_ = 0;
  std::vector<size_t> dirty_;
  std::vector<uint64_t> aligned_;
  std::vector<uint64_t> keys_, fences_;
  size_t rr_ = 0;

  Phase phase_ = Phase::kMeasure;
  int64_t end_ns_ = 0;
  uint64_t limit_ = 0;
  uint64_t issued_ = 0;
  uint64_t outstanding_ = 0;
  uint64_t new_count_ = 0;
  bool stopping_ = false;
  int64_t drain_deadline_ = INT64_MAX;
  int64_t last_response_ns_ = 0;
  BenchReport report_;
  LatencyHistogram interval_;
  uint64_t interval_ops_ = 0, interval_errors_ = 0;
};

std::string Ms(uint64_t micros) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", micros / 1000.0);
  return buf;
}

}  // namespace

uint64_t BenchReport::error_count() const {
  uint64_t n = 0;
  for (uint64_t e : errors) n += e;
  return n;
}

// Names come from the engine's tables (append-only, so they never drift); slot 0 of the error
// counters is idem-bench's own: requests the server never answered.
std::string_view OutcomeName(size_t outcome) {
  return idem::OutcomeName(static_cast<idem::Outcome>(outcome));
}

std::string_view ErrorName(size_t code) {
  return code == 0 ? "UNANSWERED" : idem::CodeName(static_cast<idem::Status::Code>(code));
}

Result<BenchReport> RunBenchmark(const BenchConfig& config) {
  const uint64_t seed = config.seed ? config.seed : static_cast<uint64_t>(NowNs());
  std::string prefix = config.key_prefix;
  if (prefix.empty()) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "b%06" PRIx64, Rng(seed).Next() & 0xffffff);
    prefix = buf;
  }
  std::vector<std::vector<int>> fds(static_cast<size_t>(config.threads));
  for (int i = 0; i < config.connections; ++i) {
    Result<int> fd = Connect(config);
    if (!fd.ok()) {
      for (auto& v : fds) {
        for (int f : v) ::close(f);
      }
      return fd.status();
    }
    fds[static_cast<size_t>(i % config.threads)].push_back(*fd);
  }
  Progress progress;
  std::atomic<uint64_t> preload_next{0};
  std::vector<std::unique_ptr<Worker>> workers;
  for (int t = 0; t < config.threads; ++t) {
    workers.push_back(std::make_unique<Worker>(config, t, std::move(fds[static_cast<size_t>(t)]),
                                               prefix, seed + 7919 * (t + 1), &preload_next,
                                               &progress));
  }
  auto run_all = [&](Phase phase, int64_t start, int64_t end, uint64_t limit_per_thread,
                     bool print) {
    std::atomic<int> running{config.threads};
    std::vector<std::thread> threads;
    for (auto& w : workers) {
      threads.emplace_back([&, w = w.get()] {
        w->Run(phase, start, end, limit_per_thread);
        running.fetch_sub(1);
      });
    }
    int64_t next_print = start + 1'000'000'000;
    while (running.load() > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      const int64_t now = NowNs();
      if (print && now >= next_print) {
        std::lock_guard<std::mutex> lock(progress.mu);
        std::fprintf(stderr,
                     "[%3" PRId64 "s] %9.0f ops/s  p50 %s ms  p99 %s ms  max %s ms  errors %" PRIu64
                     "\n",
                     (now - start) / 1'000'000'000,
                     progress.ops / ((now - next_print + 1'000'000'000) / 1e9),
                     Ms(progress.latency.Percentile(0.5)).c_str(),
                     Ms(progress.latency.Percentile(0.99)).c_str(),
                     Ms(progress.latency.max()).c_str(), progress.errors);
        progress.latency.Reset();
        progress.ops = progress.errors = 0;
        next_print = now + 1'000'000'000;
      }
    }
    for (auto& t : threads) t.join();
  };

  if (config.preload) {
    const int64_t start = NowNs();
    run_all(Phase::kPreload, start, INT64_MAX, 0, false);
    BenchReport preload;
    for (auto& w : workers) {
      for (size_t i = 0; i < preload.errors.size(); ++i) preload.errors[i] += w->report().errors[i];
      for (size_t i = 0; i < preload.outcomes.size(); ++i) {
        preload.outcomes[i] += w->report().outcomes[i];
      }
    }
    preload.elapsed_s = (NowNs() - start) / 1e9;
    if (config.progress) {
      std::fprintf(stderr, "preloaded %" PRIu64 " keys in %.1f s (%" PRIu64 " errors)\n",
                   config.keys, preload.elapsed_s, preload.error_count());
    }
    if (config.preload_only) {
      preload.ops = preload.requests = config.keys;  // ops counted as keys loaded
      return preload;
    }
  }

  const double server_cpu0 = config.server_pid ? ProcessCpuSeconds(config.server_pid) : -1;
  const std::map<std::string, double> server_threads0 =
      config.server_pid ? ThreadCpuSecondsByName(config.server_pid)
                        : std::map<std::string, double>{};
  const double cpu0 = CpuSeconds();
  const int64_t start = NowNs();
  const int64_t end = config.requests ? INT64_MAX : start + config.duration_ms * 1'000'000;
  const uint64_t limit =
      config.requests ? (config.requests + config.threads - 1) / config.threads : 0;
  run_all(Phase::kMeasure, start, end, limit, config.progress);

  BenchReport total;
  int64_t last = start;
  for (auto& w : workers) {
    BenchReport& r = w->report();
    total.requests += r.requests;
    total.ops += r.ops;
    total.flows += r.flows;
    total.latency.Merge(r.latency);
    for (size_t i = 0; i < total.outcomes.size(); ++i) total.outcomes[i] += r.outcomes[i];
    for (size_t i = 0; i < total.errors.size(); ++i) total.errors[i] += r.errors[i];
    for (size_t i = 0; i < total.requests_by_kind.size(); ++i) {
      total.requests_by_kind[i] += r.requests_by_kind[i];
    }
    last = std::max(last, w->last_response_ns());
  }
  total.elapsed_s = (last - start) / 1e9;
  total.client_cpu_s = CpuSeconds() - cpu0;
  if (server_cpu0 >= 0) {
    const double server_cpu1 = ProcessCpuSeconds(config.server_pid);
    if (server_cpu1 >= 0) total.server_cpu_s = server_cpu1 - server_cpu0;
    for (const auto& [name, seconds] : ThreadCpuSecondsByName(config.server_pid)) {
      auto before = server_threads0.find(name);
      total.server_cpu_s_by_thread[name] =
          seconds - (before == server_threads0.end() ? 0 : before->second);
    }
  }
  return total;
}

std::string FormatText(const BenchConfig& c, const BenchReport& r) {
  std::string out;
  char buf[512];
  std::snprintf(
      buf, sizeof buf,
      "idem-bench: workload %s%s, %d connections x pipeline %d, batch %d, %s %s keys, "
      "payload %zu B, %s\n",
      c.workload.c_str(),
      c.dup_ratio > 0
          ? (" (dup " + std::to_string(static_cast<int>(c.dup_ratio * 100 + 0.5)) + "%)").c_str()
          : "",
      c.connections, c.pipeline, c.batch, std::string(DistributionName(c.distribution)).c_str(),
      c.sequential_keys ? "sequential" : "random", c.payload_bytes,
      c.rate > 0
          ? ("open loop at " + std::to_string(static_cast<uint64_t>(c.rate)) + " req/s").c_str()
          : "closed loop");
  out += buf;
  std::snprintf(buf, sizeof buf,
                "ops:      %" PRIu64 " in %.2f s = %.0f ops/s (%" PRIu64 " requests%s)\n", r.ops,
                r.elapsed_s, r.ops_per_s(), r.requests,
                r.flows ? (", " + std::to_string(r.flows) + " begin->complete flows").c_str() : "");
  out += buf;
  std::snprintf(buf, sizeof buf,
                "latency:  p50 %s  p90 %s  p99 %s  p99.9 %s  max %s ms (mean %.3f ms)\n",
                Ms(r.latency.Percentile(0.5)).c_str(), Ms(r.latency.Percentile(0.9)).c_str(),
                Ms(r.latency.Percentile(0.99)).c_str(), Ms(r.latency.Percentile(0.999)).c_str(),
                Ms(r.latency.max()).c_str(), r.latency.mean() / 1000.0);
  out += buf;
  out += "outcomes:";
  for (size_t i = 0; i < r.outcomes.size(); ++i) {
    if (r.outcomes[i])
      out += " " + std::string(OutcomeName(i)) + " " + std::to_string(r.outcomes[i]);
  }
  out += "\nerrors:  ";
  if (r.error_count() == 0) out += " none";
  for (size_t i = 0; i < r.errors.size(); ++i) {
    if (r.errors[i]) out += " " + std::string(ErrorName(i)) + " " + std::to_string(r.errors[i]);
  }
  const double per_op = r.ops ? 1e6 / r.ops : 0;
  std::snprintf(buf, sizeof buf, "\ncpu:      client %.2f us/op", r.client_cpu_s * per_op);
  out += buf;
  if (r.server_cpu_s >= 0) {
    std::snprintf(buf, sizeof buf, ", server %.2f us/op", r.server_cpu_s * per_op);
    out += buf;
  }
  if (!r.server_cpu_s_by_thread.empty()) {
    out += "\nserver threads (CPU s):";
    for (const auto& [name, seconds] : r.server_cpu_s_by_thread) {
      std::snprintf(buf, sizeof buf, " %s %.2f", name.c_str(), seconds);
      out += buf;
    }
  }
  return out + "\n";
}

std::string FormatJson(const BenchConfig& c, const BenchReport& r) {
  JsonWriter j;
  j.BeginObject();
  j.Key("workload");
  j.String(c.workload);
  j.Key("dup_ratio");
  j.Double(c.dup_ratio);
  j.Key("connections");
  j.Uint(c.connections);
  j.Key("pipeline");
  j.Uint(c.pipeline);
  j.Key("batch");
  j.Uint(c.batch);
  j.Key("distribution");
  j.String(DistributionName(c.distribution));
  j.Key("key_order");
  j.String(c.sequential_keys ? "sequential" : "random");
  j.Key("payload_bytes");
  j.Uint(c.payload_bytes);
  j.Key("rate");
  j.Double(c.rate);
  j.Key("elapsed_s");
  j.Double(r.elapsed_s);
  j.Key("requests");
  j.Uint(r.requests);
  j.Key("ops");
  j.Uint(r.ops);
  j.Key("flows");
  j.Uint(r.flows);
  j.Key("ops_per_s");
  j.Double(r.ops_per_s());
  j.Key("latency_ms");
  j.BeginObject();
  for (const auto& [name, q] :
       {std::pair<const char*, double>{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}, {"p999", 0.999}}) {
    j.Key(name);
    j.Double(r.latency.Percentile(q) / 1000.0);
  }
  j.Key("max");
  j.Double(r.latency.max() / 1000.0);
  j.Key("mean");
  j.Double(r.latency.mean() / 1000.0);
  j.EndObject();
  j.Key("outcomes");
  j.BeginObject();
  for (size_t i = 0; i < r.outcomes.size(); ++i) {
    if (r.outcomes[i]) {
      j.Key(OutcomeName(i));
      j.Uint(r.outcomes[i]);
    }
  }
  j.EndObject();
  j.Key("errors");
  j.BeginObject();
  for (size_t i = 0; i < r.errors.size(); ++i) {
    if (r.errors[i]) {
      j.Key(ErrorName(i));
      j.Uint(r.errors[i]);
    }
  }
  j.EndObject();
  const double per_op = r.ops ? 1e6 / r.ops : 0;
  j.Key("client_cpu_us_per_op");
  j.Double(r.client_cpu_s * per_op);
  if (r.server_cpu_s >= 0) {
    j.Key("server_cpu_us_per_op");
    j.Double(r.server_cpu_s * per_op);
  }
  if (!r.server_cpu_s_by_thread.empty()) {
    j.Key("server_cpu_ms_by_thread");
    j.BeginObject();
    for (const auto& [name, seconds] : r.server_cpu_s_by_thread) {
      j.Key(name);
      j.Double(seconds * 1000.0);
    }
    j.EndObject();
  }
  j.EndObject();
  return j.Take() + "\n";
}

}  // namespace idem::bench
