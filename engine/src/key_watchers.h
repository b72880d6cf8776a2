// One-shot change notifications per key, for Begin and Lock calls that wait for the key's holder.
//
// The engine calls Fire(keys) after committing a batch; each watcher of a written key is removed
// and its callback run (outside the registry's lock). A waiter registers BEFORE it reads the
// record, so a change committed after its read always fires its callback: no lost wake-up.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace idem {

class KeyWatchers {
 public:
  uint64_t Add(std::string rocks_key, std::function<void()> on_change);
  void Remove(uint64_t id);
  // Runs and removes the watchers of `keys`. Cheap when nobody watches (one atomic load).
  void Fire(const std::vector<std::string_view>& keys);
  bool Empty() const { return count_.load(std::memory_order_acquire) == 0; }

 private:
  struct Watcher {
    uint64_t id;
    std::function<void()> on_change;
  };
  std::mutex mu_;
  std::unordered_map<std::string, std::vector<Watcher>> by_key_;  // guarded by mu_
  std::unordered_map<uint64_t, std::string> key_of_;              // guarded by mu_
  uint64_t next_id_ = 1;                                          // guarded by mu_
  std::atomic<size_t> count_{0};
};

}  // namespace idem
