// A multi-phase job with recovery points (docs/recipes.md, "Recovery points"; rocket-rides'
// atomic phases): fulfilling an order charges the card, then ships. After each phase the worker
// stores a Checkpoint (the phase reached and its result) in its attempt. Worker A charges and
// then dies; once its lease ends, worker B's Begin takes the attempt over and gets A's checkpoint,
// so B ships without charging again. A, waking up late, is refused (FENCE_MISMATCH) and stops
// before shipping a second time. Each card is charged once and each order shipped once.
#include <chrono>
#include <map>
#include <string>

#include "example_main.h"

namespace idem::examples {
namespace {

using namespace std::chrono_literals;

// Side effects outside the store, counted so the example can check them.
struct World {
  std::map<std::string, int> charges;    // order -> times its card was charged
  std::map<std::string, int> shipments;  // order -> times it was shipped
};

// The checkpoint payload: "" (nothing done yet), "charged CHARGE_ID", "shipping CHARGE_ID" (about
// to ship), "shipped CHARGE_ID".
constexpr std::string_view kCharged = "charged ";
constexpr std::string_view kShipping = "shipping ";
constexpr std::string_view kShipped = "shipped ";

class Worker {
 public:
  Worker(Store& store, World& world, std::string name)
      : store_(store), world_(world), name_(std::move(name)) {}

  // Claims the order's attempt, waiting up to `wait` for another worker's lease to end.
  // Returns the Begin's answer; on STARTED the record's payload is where to resume from.
  Result<OpResult> Claim(const std::string& order, std::chrono::milliseconds lease,
                         std::chrono::milliseconds wait = 0ms) {
    Result<OpResult> r = store_.Execute(
        Op::Begin({.ns = "jobs", .key = order, .owner = name_, .lease = lease, .wait = wait}));
    if (r.ok() && r->outcome == Outcome::kStarted) fence_ = r->record->fence;
    return r;
  }

  // Runs the phases not yet done according to `progress` (the checkpoint the claim returned).
  // `die_after_charge`: the process dies right after the charge's checkpoint. Returns the
  // outcome of the last store operation ("APPLIED" once the job is complete).
  std::string Run(const std::string& order, std::string progress, bool die_after_charge = false) {
    if (progress.empty()) {
      const std::string charge_id = "ch_" + order;  // the payment provider's answer
      ++world_.charges[order];
      progress = std::string(kCharged) + charge_id;
      if (std::string r = Save(order, progress); r != "APPLIED") return r;
      if (die_after_charge) return "DIED";
    }
    if (progress.starts_with(kCharged) || progress.starts_with(kShipping)) {
      // The checkpoint before the side effect tells a stale worker that it lost the attempt, so
      // it stops before shipping again. It narrows the window, it cannot close it (a holder can
      // stall between the checkpoint and the call): the shipping call must be idempotent on the
      // order id as well, as the charge must be on the order in a real payment API.
      const std::string charge_id = progress.substr(progress.find(' ') + 1);
      if (std::string r = Save(order, std::string(kShipping) + charge_id); r != "APPLIED") {
        return r;
      }
      ++world_.shipments[order];
      progress = std::string(kShipped) + charge_id;
      if (std::string r = Save(order, progress); r != "APPLIED") return r;
    }
    return Name(store_.Execute(Op::Complete(
        {.ns = "jobs", .key = order, .fence = fence_, .response = "fulfilled: " + progress})));
  }

 private:
  std::string Save(const std::string& order, const std::string& progress) {
    return Name(store_.Execute(
        Op::Checkpoint({.ns = "jobs", .key = order, .fence = fence_, .payload = progress})));
  }
  static std::string Name(const Result<OpResult>& r) {
    return r.ok() ? std::string(OutcomeName(r->outcome)) : r.status().ToString();
  }

  Store& store_;
  World& world_;
  const std::string name_;
  uint64_t fence_ = 0;
};

int Main(int argc, char** argv) {
  Example ex = Start(argc, argv, "Fulfils an order in two phases; a worker dies between them.\n");
  World world;
  const std::string order = ex.run_id + "-order-1";

  std::printf("worker-a claims %s, charges the card, checkpoints, and dies\n", order.c_str());
  Worker a(*ex.store, world, "worker-a");
  Result<OpResult> claimed = a.Claim(order, 500ms);
  ex.Check(claimed.ok() && claimed->outcome == Outcome::kStarted, "worker-a started the attempt");
  ex.Check(a.Run(order, claimed.ok() && claimed->record ? claimed->record->payload : "",
                 /*die_after_charge=*/true) == "DIED",
           "worker-a checkpointed 'charged' before dying");

  std::printf("worker-b waits for worker-a's lease to end and takes the attempt over\n");
  Worker b(*ex.store, world, "worker-b");
  Result<OpResult> taken = b.Claim(order, 10s, /*wait=*/5s);
  ex.Check(taken.ok() && taken->outcome == Outcome::kStarted, "worker-b took the attempt over");
  const std::string resume_from = taken.ok() && taken->record ? taken->record->payload : "";
  ex.Check(resume_from == "charged ch_" + order,
           "the takeover returned worker-a's checkpoint: '" + resume_from + "'");
  ex.Check(b.Run(order, resume_from) == "APPLIED", "worker-b shipped and completed the job");

  std::printf("worker-a comes back and carries on where it died\n");
  ex.Check(a.Run(order, "charged ch_" + order) == "FENCE_MISMATCH",
           "worker-a's checkpoint is refused: it no longer holds the attempt");

  Result<OpResult> replay = Worker(*ex.store, world, "worker-c").Claim(order, 10s);
  ex.Check(replay.ok() && replay->outcome == Outcome::kCompleted &&
               replay->record->payload == "fulfilled: shipped ch_" + order,
           "a later request for the order replays the result");
  ex.Check(world.charges[order] == 1, "the card was charged once");
  ex.Check(world.shipments[order] == 1, "the order was shipped once");
  return ex.Finish("resumable_job");
}

}  // namespace
}  // namespace idem::examples

int main(int argc, char** argv) { return idem::examples::Main(argc, argv); }
