// An order-creation endpoint made idempotent with the request lifecycle (docs/recipes.md §1):
// retries are replayed, concurrent duplicates wait instead of running twice, a reused key with
// another body is refused, and a crashed worker's attempt is taken over while its late
// completion is rejected by the fence.
#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "example_main.h"

namespace idem::examples {
namespace {

using namespace std::chrono_literals;

struct HttpResponse {
  int status = 0;
  std::string body;
  bool replayed = false;  // would be sent as "Idempotent-Replayed: true"
};

class OrderEndpoint {
 public:
  explicit OrderEndpoint(Store& store) : store_(store) {}

  // POST /orders with header Idempotency-Key: key.
  HttpResponse CreateOrder(const std::string& key, const std::string& body,
                           std::chrono::milliseconds lease = 5s) {
    Result<OpResult> begin = store_.Execute(Op::Begin({.ns = "orders",
                                                       .key = key,
                                                       .fingerprint = Fingerprint(body),
                                                       .owner = "order-endpoint",
                                                       .lease = lease,
                                                       .wait = 3s}));
    if (!begin.ok()) return {503, begin.status().ToString()};
    switch (begin->outcome) {
      case Outcome::kStarted: {
        // The side effect, guarded by begin->record->fence in a real system.
        std::string response = "{\"order_id\":" + std::to_string(++orders_created_) + "}";
        Result<OpResult> done = store_.Execute(Op::Complete({.ns = "orders",
                                                             .key = key,
                                                             .fence = begin->record->fence,
                                                             .response = "201 " + response}));
        if (!done.ok() || done->outcome == Outcome::kFenceMismatch) return {409, "attempt lost"};
        return {201, response};
      }
      case Outcome::kCompleted: {
        const std::string& stored = begin->record->payload;  // "201 {...}"
        return {std::stoi(stored.substr(0, 3)), stored.substr(4), true};
      }
      case Outcome::kInProgress:
        return {409, "in progress, retry later"};
      case Outcome::kMismatch:
        return {422, "Idempotency-Key reused with a different request"};
      case Outcome::kExpired:  // only where the namespace remembers keys past their retention
        return {410, "Idempotency-Key expired: the request was done, its response is gone"};
      default:
        return {500, std::string(OutcomeName(begin->outcome))};
    }
  }
  int orders_created() const { return orders_created_.load(); }

 private:
  Store& store_;
  std::atomic<int> orders_created_{0};
};

int Main(int argc, char** argv) {
  Example ex =
      Start(argc, argv, "Simulates retries, concurrent duplicates and a crashed worker.\n");
  OrderEndpoint endpoint(*ex.store);
  const std::string key_a = ex.run_id + "-A", key_b = ex.run_id + "-B";
  const std::string body = "{\"sku\":\"book\",\"qty\":1}";

  std::printf(
      "1. a request and three duplicates at the same moment (a client retrying on timeout)\n");
  std::vector<std::future<HttpResponse>> calls;
  for (int i = 0; i < 4; ++i) {
    calls.push_back(
        std::async(std::launch::async, [&] { return endpoint.CreateOrder(key_a, body); }));
  }
  std::vector<HttpResponse> answers;
  for (auto& f : calls) answers.push_back(f.get());
  int created = 0;
  for (const HttpResponse& r : answers) created += r.status == 201 && !r.replayed;
  ex.Check(created == 1, "exactly one of the four ran the handler");
  for (const HttpResponse& r : answers) {
    ex.Check(r.status == 201 && r.body == answers[0].body,
             std::string(r.replayed ? "replayed: " : "created:  ") + r.body);
  }
  HttpResponse later = endpoint.CreateOrder(key_a, body);
  ex.Check(later.replayed && later.body == answers[0].body,
           "a retry an hour later is replayed too");

  std::printf("2. the same key with a different body\n");
  HttpResponse reused = endpoint.CreateOrder(key_a, "{\"sku\":\"car\",\"qty\":1}");
  ex.Check(reused.status == 422, "answered 422: " + reused.body);

  std::printf("3. a worker crashes mid-request; the client's retry takes over\n");
  Result<OpResult> crashed = ex.store->Execute(
      Op::Begin({.ns = "orders", .key = key_b, .fingerprint = Fingerprint(body), .lease = 300ms}));
  ex.Check(crashed.ok() && crashed->outcome == Outcome::kStarted, "worker 1 started, then crashed");
  HttpResponse retry = endpoint.CreateOrder(key_b, body);  // waits for the 300 ms lease to end
  ex.Check(retry.status == 201 && !retry.replayed,
           "retry took over and created the order: " + retry.body);
  Result<OpResult> late = ex.store->Execute(Op::Complete(
      {.ns = "orders", .key = key_b, .fence = crashed->record->fence, .response = "201 {}"}));
  ex.Check(late.ok() && late->outcome == Outcome::kFenceMismatch,
           "worker 1's late completion is rejected (FENCE_MISMATCH)");

  ex.Check(endpoint.orders_created() == 2,
           "orders created: " + std::to_string(endpoint.orders_created()) + " (one per key)");
  return ex.Finish("order_handler");
}

}  // namespace
}  // namespace idem::examples

int main(int argc, char** argv) { return idem::examples::Main(argc, argv); }
