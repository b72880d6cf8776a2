// FastUpstream: the service behind the gateway in idem_gateway_bench. An HTTP/1.1 server on
// 127.0.0.1 (an ephemeral port), keep-alive, that answers every request 201 Created with a small
// JSON body and a Location header, after a delay the benchmark sets (a timer: a slow answer
// holds no thread), and counts the requests it executed. As cheap as an upstream can be, so that
// what the benchmark measures on top of it is the gateway's cost.
#pragma once

#include <cstdint>
#include <memory>

namespace idem::bench {

class FastUpstream {
 public:
  // Binds and starts serving on a thread of its own. Aborts the process if it cannot bind.
  FastUpstream();
  ~FastUpstream();  // closes every connection and joins the thread
  FastUpstream(const FastUpstream&) = delete;
  FastUpstream& operator=(const FastUpstream&) = delete;

  uint16_t port() const;
  // Requests read from now on are answered this long after they were read. Thread-safe.
  void set_delay_ms(int64_t ms);
  // Requests answered so far. Thread-safe.
  uint64_t executions() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace idem::bench
