#include "key_watchers.h"

#include <algorithm>

namespace idem {

uint64_t KeyWatchers::Add(std::string rocks_key, std::function<void()> on_change) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t id = next_id_++;
  key_of_.emplace(id, rocks_key);
  by_key_[std::move(rocks_key)].push_back(Watcher{id, std::move(on_change)});
  count_.fetch_add(1, std::memory_order_release);
  return id;
}

void KeyWatchers::Remove(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto key = key_of_.find(id);
  if (key == key_of_.end()) return;  // already fired
  auto list = by_key_.find(key->second);
  if (list != by_key_.end()) {
    auto& v = list->second;
    v.erase(std::remove_if(v.begin(), v.end(), [id](const Watcher& w) { return w.id == id; }),
            v.end());
    if (v.empty()) by_key_.erase(list);
  }
  key_of_.erase(key);
  count_.fetch_sub(1, std::memory_order_release);
}

void KeyWatchers::Fire(const std::vector<std::string_view>& keys) {
  if (Empty()) return;
  std::vector<std::function<void()>> to_run;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (std::string_view k : keys) {
      auto list = by_key_.find(std::string(k));
      if (list == by_key_.end()) continue;
      for (auto& w : list->second) {
        key_of_.erase(w.id);
        to_run.push_back(std::move(w.on_change));
      }
      count_.fetch_sub(list->second.size(), std::memory_order_release);
      by_key_.erase(list);
    }
  }
  for (auto& f : to_run) f();
}

}  // namespace idem
