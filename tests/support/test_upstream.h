// TestUpstream: a real HTTP/1.1 service on 127.0.0.1 (an ephemeral port) on its own thread, for
// the gateway tests to stand behind the gateway. It counts the requests it executes per path and
// behaves as each request's headers ask:
//   X-Test-Delay-Ms: N     answer after N ms (other requests are served meanwhile)
//   X-Test-Status: N       answer with status N (default 200)
//   X-Test-Die: 1          close the connection without answering (counted as executed)
//   X-Test-Body-Bytes: N   a body of N bytes instead of the JSON below
// A response carries Content-Type: application/json, Location: /executions/N, X-Execution: N and
// the body {"execution":N,"path":"PATH"}, N being the execution's number on its path (1, 2, ...),
// so that a replay is told from a second execution.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace idem::testing {

class TestUpstream {
 public:
  TestUpstream();  // listening and serving when it returns
  ~TestUpstream();
  TestUpstream(const TestUpstream&) = delete;
  TestUpstream& operator=(const TestUpstream&) = delete;

  uint16_t port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  // Requests received on `path` (the target without its query), dying ones included.
  int Executions(const std::string& path) const;
  int TotalExecutions() const;
  // Stops accepting and closes the listening socket: the gateway's next connect is refused.
  // Connections already open are served on.
  void StopAccepting();

 private:
  struct Impl;
  friend struct Impl;
  std::unique_ptr<Impl> impl_;
  uint16_t port_ = 0;
  mutable std::mutex mu_;
  std::map<std::string, int> executions_;  // guarded by mu_
};

}  // namespace idem::testing
