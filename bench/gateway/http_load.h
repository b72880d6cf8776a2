// HttpLoad: closed-loop HTTP/1.1 load for idem_gateway_bench. `connections` workers, each with
// one keep-alive connection per port it is sent to (kept across runs), send a request, wait for
// its answer, send the next, until the run's time is up; every latency goes into a histogram.
//
// Every request is the same payment, POST /v1/payments with a JSON body, Content-Type and
// Authorization; only its Idempotency-Key header differs (KeyUse). A worker's body is a function
// of its key, so a replay is the same request as its first and never a 422.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "histogram.h"
#include "idem/result.h"

namespace idem::bench {

enum class KeyUse {
  kNone,       // no Idempotency-Key: passed through (or the upstream called directly)
  kNew,        // a key never sent before: a first request
  kCompleted,  // a key this worker's earlier kNew requests completed: a replay
};

// What one run sends and what it must get back.
struct LoadSide {
  std::string name;
  uint16_t port = 0;  // on 127.0.0.1
  KeyUse keys = KeyUse::kNone;
  bool expect_replayed = false;  // whether the answer must have Idempotent-Replayed: true
};

struct LoadResult {
  LatencyHistogram latency;  // microseconds, every request (expected answers or not)
  uint64_t requests = 0;
  uint64_t unexpected = 0;  // not 201, or Idempotent-Replayed other than expected, or an error
  std::string first_unexpected;
  double seconds = 0;  // the runs' total duration
};

class HttpLoad {
 public:
  // `run_id` makes this run's keys unique (several runs share one database).
  HttpLoad(int connections, std::string run_id);
  ~HttpLoad();

  // Runs `side` for `duration` and adds what it measured to `into`. A worker whose connection
  // fails counts an unexpected answer and connects again. IOError if a worker cannot connect.
  Status Run(const LoadSide& side, std::chrono::milliseconds duration, LoadResult* into);

 private:
  struct Worker;
  const std::string run_id_;
  std::vector<std::unique_ptr<Worker>> workers_;
};

}  // namespace idem::bench
