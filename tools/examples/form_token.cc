// One-shot form tokens (docs/recipes.md §2): a double-clicked submit places one order, a
// replayed or forged token is refused with a distinct answer.
#include <atomic>
#include <chrono>
#include <future>
#include <vector>

#include "example_main.h"

namespace idem::examples {
namespace {

using namespace std::chrono_literals;

int Main(int argc, char** argv) {
  Example ex = Start(argc, argv, "Renders a form, then submits it eight times at once.\n");
  std::atomic<int> orders{0};
  auto submit = [&](const std::string& token) -> std::string {
    Result<OpResult> r =
        ex.store->Execute(Op::ConsumeToken({.ns = "checkout-form", .token = token}));
    if (!r.ok()) return "503 " + r.status().ToString();
    switch (r->outcome) {
      case Outcome::kConsumed:
        ++orders;
        return "201 order placed";
      case Outcome::kAlreadyConsumed:
        return "409 already submitted";
      case Outcome::kNotFound:
        return "410 form expired, please reload";
      default:
        return "500";
    }
  };

  Result<OpResult> issued =
      ex.store->Execute(Op::IssueToken({.ns = "checkout-form", .ttl = 10min}));
  ex.Check(issued.ok() && issued->outcome == Outcome::kIssued && issued->token.size() == 22,
           "form rendered with a 128-bit token");
  const std::string token = issued.ok() ? issued->token : "";

  std::vector<std::future<std::string>> clicks;
  for (int i = 0; i < 8; ++i) clicks.push_back(std::async(std::launch::async, submit, token));
  int placed = 0, refused = 0;
  for (auto& c : clicks) {
    std::string answer = c.get();
    placed += answer.starts_with("201");
    refused += answer.starts_with("409");
  }
  ex.Check(placed == 1 && refused == 7, "8 simultaneous submits: 1 placed, 7 'already submitted'");
  ex.Check(submit("forged-" + ex.run_id).starts_with("410"), "a forged token: 'form expired'");
  ex.Check(orders.load() == 1, "orders placed: " + std::to_string(orders.load()));
  return ex.Finish("form_token");
}

}  // namespace
}  // namespace idem::examples

int main(int argc, char** argv) { return idem::examples::Main(argc, argv); }
