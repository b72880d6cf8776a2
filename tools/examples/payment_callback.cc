// A payment-callback handler on a state machine (docs/recipes.md §4): the provider calls back
// three times and a stale "closed" event arrives late. Every duplicate is answered 200 (ALREADY),
// the illegal event changes nothing, and fulfilment is triggered exactly once.
//
// The graph must be declared where the store lives: embedded, this program does it; a server
// must be started with --state-graph 'payments=WAIT_PAY>PAYING>PAID>SHIPPED>DONE,WAIT_PAY>CLOSED'.
#include <atomic>
#include <future>
#include <vector>

#include "example_main.h"

namespace idem::examples {
namespace {

constexpr const char* kGraph = "WAIT_PAY>PAYING>PAID>SHIPPED>DONE,WAIT_PAY>CLOSED";

struct Callback {
  int http_status;
  std::string note;
};

class PaymentWebhook {
 public:
  explicit PaymentWebhook(Store& store) : store_(store) {}

  // POST /webhooks/payment {order, event}: the provider retries until it gets a 2xx.
  Callback OnEvent(const std::string& order, const std::string& to_status) {
    Result<OpResult> r =
        store_.Execute(Op::Transition({.ns = "payments", .key = order, .to_status = to_status}));
    if (!r.ok()) return {503, r.status().ToString()};  // a real outage: let the provider retry
    switch (r->outcome) {
      case Outcome::kApplied:
        if (to_status == "PAID") ++fulfilments_;  // the side effect runs on the first PAID only
        return {200, "moved to " + to_status};
      case Outcome::kAlready:
        return {200, "duplicate, already " + to_status};
      case Outcome::kIllegal:
        // Acknowledge (so it is not retried forever) but change nothing; log for humans.
        return {200, "ignored: " + r->record->status + " -> " + to_status + " is not allowed"};
      case Outcome::kNotFound:
        return {404, "unknown order"};
      default:
        return {500, std::string(OutcomeName(r->outcome))};
    }
  }
  int fulfilments() const { return fulfilments_.load(); }

 private:
  Store& store_;
  std::atomic<int> fulfilments_{0};
};

int Main(int argc, char** argv) {
  EngineOptions embedded;
  embedded.state_graphs["payments"] = *StateGraph::Parse(kGraph);
  Example ex =
      Start(argc, argv,
            "A server must run with --state-graph 'payments=WAIT_PAY>PAYING>PAID>SHIPPED>DONE,"
            "WAIT_PAY>CLOSED'.\n",
            embedded);
  PaymentWebhook webhook(*ex.store);
  const std::string order = ex.run_id + "-order";

  Result<OpResult> created =
      ex.store->Insert({.ns = "payments", .key = order, .status = "WAIT_PAY"});
  ex.Check(created.ok() && created->outcome == Outcome::kInserted, "order created in WAIT_PAY");
  ex.Check(webhook.OnEvent(order, "PAYING").http_status == 200, "customer started paying");

  std::printf("the provider delivers PAID three times, two of them at once\n");
  std::vector<std::future<Callback>> deliveries;
  for (int i = 0; i < 3; ++i) {
    deliveries.push_back(
        std::async(std::launch::async, [&] { return webhook.OnEvent(order, "PAID"); }));
  }
  for (auto& d : deliveries) {
    Callback c = d.get();
    ex.Check(c.http_status == 200, "answered 200: " + c.note);
  }

  std::printf("a stale CLOSED event arrives after payment\n");
  Callback stale = webhook.OnEvent(order, "CLOSED");
  ex.Check(stale.http_status == 200 && stale.note.starts_with("ignored"),
           "answered 200: " + stale.note);

  Result<OpResult> now = ex.store->Get({.ns = "payments", .key = order});
  ex.Check(now.ok() && now->record && now->record->status == "PAID", "the order is still PAID");
  // Shipping with an optimistic version check: the version read is the version changed.
  Result<OpResult> ship =
      ex.store->Execute(Op::Transition({.ns = "payments",
                                        .key = order,
                                        .to_status = "SHIPPED",
                                        .expect_version = now->record->version}));
  ex.Check(ship.ok() && ship->outcome == Outcome::kApplied, "shipped (version checked)");
  ex.Check(webhook.fulfilments() == 1,
           "fulfilment triggered " + std::to_string(webhook.fulfilments()) + " time(s)");
  return ex.Finish("payment_callback");
}

}  // namespace
}  // namespace idem::examples

int main(int argc, char** argv) { return idem::examples::Main(argc, argv); }
