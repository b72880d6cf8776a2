// The network path over loopback: the Client, the wire protocol, the server's I/O threads and
// its group commit, in front of the same engine the other benchmarks measure directly. Quote
// these against BM_Insert_New: the difference is the cost of the network layer.
//   BM_Loopback_RoundTrip       one request in flight: latency of an Insert of a new key
//   BM_Loopback_Pipelined/N     N requests in flight on one connection (ApplyAsync): items/s
// The engine runs with Durability::kAsync, as in the other benchmarks: fsync cost is the disk's.
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>

#include <benchmark/benchmark.h>

#include "idem/client.h"
#include "idem/server.h"
#include "idem/serving.h"

namespace idem {
namespace {

[[noreturn]] void Die(const std::string& why) {
  std::fprintf(stderr, "idem_microbench (loopback): %s\n", why.c_str());
  std::abort();
}

// An engine in a temp dir served on 127.0.0.1:0, and one connected Client.
class Loopback {
 public:
  Loopback() {
    dir_ = (std::filesystem::temp_directory_path() /
            ("idem_loopback_bench_" + std::to_string(getpid())))
               .string();
    std::filesystem::remove_all(dir_);
    EngineOptions engine_options;
    engine_options.durability = Durability::kAsync;
    engine_options.reclaim_interval_ms = 0;
    auto engine = ServingEngine::Open(dir_, engine_options);
    if (!engine.ok()) Die(engine.status().ToString());
    engine_ = std::move(*engine);
    ServerOptions server_options;
    server_options.host = "127.0.0.1";
    server_options.port = 0;
    server_options.limits = engine_->options().limits;
    server_options.log = [](const LogRecord&) {};
    auto server = Server::Start(engine_.get(), server_options);
    if (!server.ok()) Die(server.status().ToString());
    server_ = std::move(*server);
    ClientOptions client_options;
    client_options.address = server_->address();
    auto client = Client::Connect(client_options);
    if (!client.ok()) Die(client.status().ToString());
    client_ = std::move(*client);
  }
  ~Loopback() {
    client_.reset();
    server_->Stop();
    server_.reset();
    engine_.reset();
    std::filesystem::remove_all(dir_);
  }

  Client& client() { return *client_; }

 private:
  std::string dir_;
  std::unique_ptr<ServingEngine> engine_;
  std::unique_ptr<Server> server_;
  std::unique_ptr<Client> client_;
};

std::string KeyOf(uint64_t i) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "order-%016llx-request-key", static_cast<unsigned long long>(i));
  return buf;
}

const std::string kPayload(100, 'p');

void BM_Loopback_RoundTrip(benchmark::State& state) {
  Loopback loopback;
  uint64_t next = 0;
  for (auto _ : state) {
    const std::string key = KeyOf(next++);
    Result<OpResult> r = loopback.client().Insert(
        {.ns = "bench", .key = key, .status = "DONE", .payload = kPayload});
    if (!r.ok() || r->outcome != Outcome::kInserted) {
      state.SkipWithError("insert failed");
      break;
    }
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_Loopback_Pipelined(benchmark::State& state) {
  const int64_t depth = state.range(0);
  Loopback loopback;
  std::mutex mu;
  std::condition_variable cv;
  int64_t in_flight = 0;  // guarded by mu
  std::atomic<bool> failed{false};
  uint64_t next = 0;
  for (auto _ : state) {
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return in_flight < depth; });
      ++in_flight;
    }
    const std::string key = KeyOf(next++);
    const Op op = Op::Insert({.ns = "bench", .key = key, .status = "DONE", .payload = kPayload});
    loopback.client().ApplyAsync(std::span<const Op>(&op, 1),
                                 [&](Status s, std::vector<Result<OpResult>> results) {
                                   if (!s.ok() || !results[0].ok()) failed = true;
                                   std::lock_guard<std::mutex> lock(mu);
                                   --in_flight;
                                   cv.notify_one();
                                 });
  }
  std::unique_lock<std::mutex> lock(mu);
  cv.wait(lock, [&] { return in_flight == 0; });
  if (failed) state.SkipWithError("a pipelined insert failed");
  state.SetItemsProcessed(state.iterations());
}

BENCHMARK(BM_Loopback_RoundTrip)->UseRealTime();
BENCHMARK(BM_Loopback_Pipelined)->Arg(16)->Arg(128)->UseRealTime();

}  // namespace
}  // namespace idem
