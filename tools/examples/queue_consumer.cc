// A queue consumer with at-least-once delivery made effectively-once (docs/recipes.md §6): each
// batch pulled from the queue is claimed with ONE Apply of Begins and completed with ONE Apply
// of Completes. Redeliveries are skipped; a consumer that crashes mid-batch has its messages
// taken over after the lease, and every message's effect is committed exactly once.
#include <chrono>
#include <map>
#include <random>
#include <vector>

#include "example_main.h"

namespace idem::examples {
namespace {

using namespace std::chrono_literals;

struct Consumer {
  Store& store;
  std::map<std::string, int>& committed;  // message id -> times its effect was committed
  std::chrono::milliseconds lease;

  // Returns how many messages of the batch were processed (the rest were duplicates).
  int HandleBatch(const std::vector<std::string>& ids, bool crash_before_complete = false) {
    std::vector<Op> claims;
    for (const auto& id : ids)
      claims.push_back(Op::Begin({.ns = "queue", .key = id, .lease = lease}));
    std::vector<Result<OpResult>> claimed;
    if (!store.Apply(claims, &claimed).ok()) return -1;
    std::vector<Op> completes;
    std::vector<std::string> done_ids;
    for (size_t i = 0; i < ids.size(); ++i) {
      if (!claimed[i].ok() || claimed[i]->outcome != Outcome::kStarted) continue;  // dup or busy
      completes.push_back(Op::Complete({.ns = "queue",
                                        .key = ids[i],
                                        .fence = claimed[i]->record->fence,
                                        .response = "processed"}));
      done_ids.push_back(ids[i]);
    }
    if (crash_before_complete) return 0;  // the process dies: nothing committed
    std::vector<Result<OpResult>> completed;
    if (!store.Apply(completes, &completed).ok()) return -1;
    int processed = 0;
    for (size_t i = 0; i < completes.size(); ++i) {
      if (completed[i].ok() && completed[i]->outcome == Outcome::kApplied) {
        ++committed[done_ids[i]];  // commit the effect together with the completion
        ++processed;
      }
    }
    return processed;
  }
};

int Main(int argc, char** argv) {
  Example ex = Start(argc, argv, "Consumes 10 batches of 32 messages with ~30% redeliveries.\n");
  std::map<std::string, int> committed;
  Consumer consumer{*ex.store, committed, 5s};
  std::mt19937 rng(7);
  std::vector<std::string> seen;
  int processed = 0, duplicates = 0;
  for (int batch = 0; batch < 10; ++batch) {
    std::vector<std::string> ids;
    for (int i = 0; i < 32; ++i) {
      if (!seen.empty() && rng() % 10 < 3) {
        ids.push_back(seen[rng() % seen.size()]);  // a redelivery
      } else {
        ids.push_back(ex.run_id + "-msg-" + std::to_string(seen.size()));
        seen.push_back(ids.back());
      }
    }
    int n = consumer.HandleBatch(ids);
    processed += n;
    duplicates += static_cast<int>(ids.size()) - n;
  }
  std::printf("processed %d messages, skipped %d redeliveries, in 20 round trips\n", processed,
              duplicates);

  std::printf("a consumer crashes after claiming a batch; the queue redelivers it\n");
  std::vector<std::string> fresh;
  for (int i = 0; i < 8; ++i) fresh.push_back(ex.run_id + "-late-" + std::to_string(i));
  Consumer crashing{*ex.store, committed, 1s};  // its lease: 1 s
  crashing.HandleBatch(fresh, /*crash_before_complete=*/true);
  Consumer impatient{*ex.store, committed, 5s};
  ex.Check(impatient.HandleBatch(fresh) == 0,
           "redelivered at once: still in progress, not reprocessed");
  std::vector<Op> waits;  // a consumer may also wait for the lease instead of skipping
  for (const auto& id : fresh)
    waits.push_back(Op::Begin({.ns = "queue", .key = id, .lease = 5s, .wait = 3s}));
  std::vector<Result<OpResult>> taken;
  ex.Check(ex.store->Apply(waits, &taken).ok(), "waited for the crashed consumer's lease");
  int takeovers = 0;
  for (size_t i = 0; i < fresh.size(); ++i) {
    if (taken[i].ok() && taken[i]->outcome == Outcome::kStarted &&
        ex.store->Execute(Op::Complete({.ns = "queue",
                                        .key = fresh[i],
                                        .fence = taken[i]->record->fence,
                                        .response = "processed"}))
                ->outcome == Outcome::kApplied) {
      ++committed[fresh[i]];
      ++takeovers;
    }
  }
  ex.Check(takeovers == 8, "after the lease, all 8 were taken over and processed");

  bool once = committed.size() == seen.size() + fresh.size();
  for (const auto& [id, n] : committed) once &= n == 1;
  ex.Check(once,
           std::to_string(committed.size()) + " distinct messages, each committed exactly once");
  return ex.Finish("queue_consumer");
}

}  // namespace
}  // namespace idem::examples

int main(int argc, char** argv) { return idem::examples::Main(argc, argv); }
