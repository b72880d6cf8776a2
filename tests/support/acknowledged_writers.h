// Test support: writers that insert distinct keys until stopped, each counting the inserts its
// store acknowledged, so that a test can take "everything acknowledged before now" and later
// check that all of it survived (a backup, a restart).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "idem/store.h"

namespace idem::testing {

class AcknowledgedWriters {
 public:
  // Starts `writers` threads inserting into `ns`; writer w writes through store_for(w), called
  // on its own thread (the same embedded engine for all, or a connection each).
  AcknowledgedWriters(int writers, std::string ns,
                      std::function<std::shared_ptr<Store>(int writer)> store_for)
      : ns_(std::move(ns)), acknowledged_(writers) {
    for (int w = 0; w < writers; ++w) {
      threads_.emplace_back([this, w, store_for] {
        std::shared_ptr<Store> store = store_for(w);
        if (!store) return;
        for (int i = 0; !stop_.load(); ++i) {
          auto r = store->Insert({.ns = ns_, .key = Key(w, i), .status = "PENDING"});
          if (!r.ok() || r->outcome != Outcome::kInserted) {
            ADD_FAILURE() << Key(w, i) << ": " << (r.ok() ? "not INSERTED" : r.status().ToString());
            return;
          }
          acknowledged_[w].store(i + 1);
        }
      });
    }
  }
  ~AcknowledgedWriters() { Stop(); }

  static std::string Key(int writer, int i) {
    return "w" + std::to_string(writer) + "-" + std::to_string(i);
  }
  // Inserts acknowledged so far, over all writers.
  int Total() const {
    int n = 0;
    for (const auto& a : acknowledged_) n += a.load();
    return n;
  }
  // Returns once at least `n` inserts were acknowledged (or a writer gave up).
  void WaitForTotal(int n) const {
    while (Total() < n && !HasFailure()) std::this_thread::yield();
  }
  // Per writer: its inserts 0 .. count-1 are acknowledged.
  std::vector<int> Acknowledged() const {
    std::vector<int> counts;
    for (const auto& a : acknowledged_) counts.push_back(a.load());
    return counts;
  }
  void Stop() {
    stop_ = true;
    for (auto& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  static bool HasFailure() { return ::testing::Test::HasFailure(); }

  const std::string ns_;
  std::atomic<bool> stop_{false};
  std::vector<std::atomic<int>> acknowledged_;
  std::vector<std::thread> threads_;
};

}  // namespace idem::testing
