#include "worker.h"

#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include <flatbuffers/flatbuffers.h>

#include "idem/status.h"
#include "protocol_generated.h"

namespace idem::bench {
namespace {

namespace fb = flatbuffers;

constexpr int64_t kPublishEveryNs = 200'000'000;     // workers hand progress to the printer
constexpr uint64_t kNewKeyBase = uint64_t{1} << 48;  // new keys never collide with [0, keys)
constexpr size_t kPreloadBatch = 256;

}  // namespace

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Worker::Worker(const BenchConfig& config, int index, std::vector<std::unique_ptr<BenchLink>> links,
               std::string key_prefix, uint64_t seed, std::atomic<uint64_t>* preload_next,
               Progress* progress)
    : config_(config),
      index_(index),
      encoder_(config, std::move(key_prefix)),
      rng_(seed),
      preload_next_(preload_next),
      progress_(progress) {
  chooser_ = MakeKeyChooser(config.distribution, config.keys, config.zipf_theta);
  for (const MixEntry& e : config.mix) mix_total_ += e.weight;
  epoll_ = epoll_create1(EPOLL_CLOEXEC);
  for (auto& link : links) {
    auto c = std::make_unique<Conn>();
    c->link = std::move(link);
    c->in.resize(64 * 1024);
    conns_.push_back(std::move(c));
  }
  for (size_t i = 0; i < conns_.size(); ++i) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = i;
    epoll_ctl(epoll_, EPOLL_CTL_ADD, conns_[i]->link->fd(), &ev);
  }
}
Worker::~Worker() { ::close(epoll_); }

// Runs one phase: the preload (until the shared key counter is exhausted) or the measurement
// (until end_ns or request_limit, then drains what is in flight).
void Worker::Run(Phase phase, int64_t start_ns, int64_t end_ns, uint64_t request_limit) {
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

void Worker::BeginStop(int64_t now) {
  if (stopping_) return;
  stopping_ = true;
  drain_deadline_ = now + config_.drain_timeout_ms * 1'000'000;
}

size_t Worker::FindFreeConn() {
  for (size_t n = 0; n < conns_.size(); ++n) {
    size_t c = (rr_ + n) % conns_.size();
    if (!conns_[c]->dead && !conns_[c]->free.empty()) {
      rr_ = c + 1;
      return c;
    }
  }
  return SIZE_MAX;
}

OpKind Worker::PickKind() {
  if (config_.mix.size() == 1) return config_.mix[0].kind;
  uint64_t r = rng_.Below(mix_total_);
  for (const MixEntry& e : config_.mix) {
    if (r < e.weight) return e.kind;
    r -= e.weight;
  }
  return config_.mix.back().kind;
}

uint64_t Worker::NewKey() { return kNewKeyBase + index_ + config_.threads * new_count_++; }

bool Worker::IssueNext(size_t c, int64_t intended_ns) {
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

void Worker::Send(size_t c, OpKind kind, int64_t intended_ns, std::span<const uint64_t> fences) {
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
  if (config_.http) {
    encoder_.AppendHttp(&conn.out, kind, slot.keys);
  } else {
    encoder_.Append(&conn.out, id, kind, slot.keys, fences);
  }
  ++outstanding_;
  ++report_.requests_by_kind[static_cast<size_t>(kind)];
  if (!conn.dirty) {
    conn.dirty = true;
    dirty_.push_back(c);
  }
}

void Worker::FlushDirty() {
  for (size_t c : dirty_) {
    conns_[c]->dirty = false;
    Flush(c);
  }
  dirty_.clear();
}

void Worker::Flush(size_t c) {
  Conn& conn = *conns_[c];
  while (!conn.dead && conn.out_off < conn.out.size()) {
    ssize_t n = conn.link->Write(conn.out.data() + conn.out_off, conn.out.size() - conn.out_off);
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

void Worker::SetWantOut(size_t c, bool want) {
  Conn& conn = *conns_[c];
  if (conn.want_out == want || conn.dead) return;
  conn.want_out = want;
  epoll_event ev{};
  ev.events = want ? (EPOLLIN | EPOLLOUT) : EPOLLIN;
  ev.data.u64 = c;
  epoll_ctl(epoll_, EPOLL_CTL_MOD, conn.link->fd(), &ev);
}

void Worker::Kill(size_t c) {
  Conn& conn = *conns_[c];
  if (conn.dead) return;
  conn.dead = true;
  ++dead_count_;
  epoll_ctl(epoll_, EPOLL_CTL_DEL, conn.link->fd(), nullptr);
  for (Slot& slot : conn.slots) {
    if (!slot.busy) continue;
    slot.busy = false;
    --outstanding_;
    report_.errors[static_cast<size_t>(Status::Code::kIOError)] += 1;
  }
}

void Worker::ReadAll(size_t c) {
  Conn& conn = *conns_[c];
  while (!conn.dead) {
    if (conn.in_len == conn.in.size()) conn.in.resize(conn.in.size() * 2);
    ssize_t n = conn.link->Read(conn.in.data() + conn.in_len, conn.in.size() - conn.in_len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n <= 0) {
      Kill(c);
      return;
    }
    conn.in_len += static_cast<size_t>(n);
    size_t pos = 0;
    while (config_.http) {  // responses in order: each answers the connection's one slot
      int status = 0;
      std::string_view body;
      const size_t used = ParseHttpResponse(
          std::string_view(reinterpret_cast<const char*>(conn.in.data()) + pos, conn.in_len - pos),
          &status, &body);
      if (status < 0 || (used > 0 && !conn.slots[0].busy)) {
        Kill(c);
        return;
      }
      if (used == 0) break;
      pos += used;
      OnHttpResponse(c, status, body);
      if (conn.dead) return;
    }
    while (!config_.http && conn.in_len - pos >= 4) {
      const uint8_t* p = conn.in.data() + pos;
      const uint32_t size = DecodeFrameLength(p);
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

void Worker::OnFrame(size_t c, const uint8_t* data, uint32_t size) {
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
  const bool measured = RecordAnswered(slot, now);
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

bool Worker::RecordAnswered(const Slot& slot, int64_t now) {
  last_response_ns_ = now;
  if (phase_ != Phase::kMeasure) return false;
  const uint64_t micros =
      static_cast<uint64_t>(std::max<int64_t>(0, now - slot.intended_ns)) / 1000;
  report_.latency.Record(micros);
  interval_.Record(micros);
  ++report_.requests;
  return true;
}

void Worker::OnHttpResponse(size_t c, int status, std::string_view body) {
  Conn& conn = *conns_[c];
  Slot& slot = conn.slots[0];
  const int64_t now = NowNs();
  const bool measured = RecordAnswered(slot, now);
  if (status != 200) {
    const Status::Code code = status == 503   ? Status::Code::kBusy
                              : status >= 500 ? Status::Code::kIOError
                                              : Status::Code::kInvalidArgument;
    report_.errors[static_cast<size_t>(code)] += 1;
    ++interval_errors_;
  } else {
    // {"results":[{"outcome":"INSERTED",...},{"error":{...}},...]}: one outcome or error each.
    constexpr std::string_view kOutcome = "\"outcome\":\"";
    for (size_t at = body.find(kOutcome); at != std::string_view::npos;
         at = body.find(kOutcome, at + 1)) {
      const std::string_view rest = body.substr(at + kOutcome.size());
      const std::string_view name = rest.substr(0, rest.find('"'));
      for (size_t o = 1; o < 32; ++o) {
        if (OutcomeName(static_cast<Outcome>(o)) == name) report_.outcomes[o] += 1;
      }
      if (measured) {
        ++report_.ops;
        ++interval_ops_;
      }
    }
    for (size_t at = body.find("\"error\":{"); at != std::string_view::npos;
         at = body.find("\"error\":{", at + 1)) {
      report_.errors[static_cast<size_t>(Status::Code::kInvalidArgument)] += 1;
      ++interval_errors_;
    }
  }
  slot.busy = false;
  --outstanding_;
  conn.free.push_back(0);
  if (phase_ == Phase::kPreload || config_.rate <= 0) IssueNext(c, now);
}

void Worker::Publish() {
  if (progress_ == nullptr || phase_ != Phase::kMeasure) return;
  std::lock_guard<std::mutex> lock(progress_->mu);
  progress_->latency.Merge(interval_);
  progress_->ops += interval_ops_;
  progress_->errors += interval_errors_;
  interval_.Reset();
  interval_ops_ = 0;
  interval_errors_ = 0;
}

}  // namespace idem::bench
