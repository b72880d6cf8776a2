// Worker: one event-loop thread of idem-bench and the connections it owns (epoll, non-blocking
// sockets). No thread hand-off and no std::function on the request path: the worker builds each
// request into its connection's output buffer (all requests ready at one moment leave in one
// write) and reads responses in bulk.
//
// Closed loop (config.rate == 0): every connection keeps `pipeline` requests in flight; each
// response releases the next request. Open loop (rate > 0): requests are due at fixed intervals;
// one that finds no free slot waits, and its latency is measured from when it was DUE, so a
// stalled server shows up as latency instead of as fewer, faster samples (coordinated omission).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "bench_config.h"
#include "bench_link.h"
#include "bench_report.h"
#include "histogram.h"
#include "key_distribution.h"
#include "wire_client.h"

namespace idem::bench {

// The steady clock the workers and RunBenchmark share, in nanoseconds.
int64_t NowNs();

// What workers hand to the progress printer.
struct Progress {
  std::mutex mu;
  LatencyHistogram latency;  // guarded by mu
  uint64_t ops = 0;          // guarded by mu
  uint64_t errors = 0;       // guarded by mu
};

enum class Phase { kPreload, kMeasure };

class Worker {
 public:
  // Takes ownership of the connected, non-blocking `links`. The preload hands out key
  // numbers from *preload_next, shared by all workers; progress (may be null) receives the
  // measurement's figures every 200 ms.
  Worker(const BenchConfig& config, int index, std::vector<std::unique_ptr<BenchLink>> links,
         std::string key_prefix, uint64_t seed, std::atomic<uint64_t>* preload_next,
         Progress* progress);
  ~Worker();

  // Runs one phase: the preload (until the shared key counter is exhausted) or the measurement
  // (until end_ns or request_limit, then drains what is in flight).
  void Run(Phase phase, int64_t start_ns, int64_t end_ns, uint64_t request_limit);

  // The last phase's figures.
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
    std::unique_ptr<BenchLink> link;
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
  void BeginStop(int64_t now);
  size_t FindFreeConn();
  OpKind PickKind();
  uint64_t NewKey();
  // Chooses and queues the next request on connection c. False when there is nothing to send.
  bool IssueNext(size_t c, int64_t intended_ns);
  // Queues keys_ as one request of `kind` on connection c (a free slot is required).
  void Send(size_t c, OpKind kind, int64_t intended_ns, std::span<const uint64_t> fences);
  void FlushDirty();
  void Flush(size_t c);
  void SetWantOut(size_t c, bool want);
  // The connection failed: its requests in flight count as IO_ERROR.
  void Kill(size_t c);
  void ReadAll(size_t c);
  // A response to `slot` arrived at `now`: its latency, when measuring (returns whether).
  bool RecordAnswered(const Slot& slot, int64_t now);
  // config_.http: one HTTP response (status, body) for the connection's one slot.
  void OnHttpResponse(size_t c, int status, std::string_view body);
  void OnFrame(size_t c, const uint8_t* data, uint32_t size);
  void Publish();

  const BenchConfig& config_;
  const int index_;
  RequestEncoder encoder_;
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

}  // namespace idem::bench
