// A fixture that owns a temp directory, a ManualClock and an Engine on them (opened for serving,
// so that the serving methods of idem/serving.h can be tested too), with helpers that
// turn results into short strings so tests read like a specification:
//   EXPECT_EQ("INSERTED", Insert("pay", "k1"));
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "idem/serving.h"
#include "support/outcome_name.h"
#include "support/temp_dir.h"
#include "support/ttl_ms.h"

namespace idem::testing {

// The journal layout with its smallest segments (64 KiB), so that a test's few hundred records
// fill several; the payload limit lowered to what such a segment holds.
// A layout's name in a parameterized test's name: "Leveled", "Windows" or "Journal".
inline std::string LayoutName(EngineOptions::Layout layout) {
  switch (layout) {
    case EngineOptions::Layout::kLeveled:
      return "Leveled";
    case EngineOptions::Layout::kExpiryWindows:
      return "Windows";
    case EngineOptions::Layout::kJournal:
      return "Journal";
  }
  return "?";
}

inline void UseSmallJournal(EngineOptions* options) {
  options->layout = EngineOptions::Layout::kJournal;
  options->limits.max_payload_bytes = 16 << 10;
  options->journal_segment_bytes = EngineOptions::kMinJournalSegmentBytes;
}

class EngineTest : public ::testing::Test {
 protected:
  static constexpr int64_t kHour = 3600 * 1000;

  EngineTest() : clock_(std::make_shared<ManualClock>()) {
    options_.clock = clock_;
    options_.reclaim_interval_ms = 0;  // tests reclaim explicitly
    // Physical removal at expiry exactly; the grace has its own tests (engine_clock_test.cc).
    options_.expiry_grace_ms = 0;
    options_.retention["forever"] = RetentionPolicy{kHour, 24 * kHour, /*allow_forever=*/true};
    options_.retention["short"] = RetentionPolicy{1000, 10'000, false};
  }
  void SetUp() override { Open(); }

  void Open() {
    auto engine = ServingEngine::Open(dir_.Sub("db"), options_);
    ASSERT_OK(engine);
    engine_ = std::move(*engine);
  }
  void Reopen() {
    engine_.reset();
    Open();
  }

  ServingEngine& engine() { return *engine_; }
  std::string Insert(std::string_view ns, std::string_view key, std::string_view status = "PENDING",
                     std::string_view payload = {}, std::string_view fingerprint = {},
                     std::optional<int64_t> ttl_ms = std::nullopt) {
    return Name(engine_->Insert({.ns = ns,
                                 .key = key,
                                 .status = status,
                                 .payload = payload,
                                 .fingerprint = fingerprint,
                                 .ttl = TtlMs(ttl_ms)}));
  }
  std::string Get(std::string_view ns, std::string_view key) {
    return Name(engine_->Get({.ns = ns, .key = key}));
  }
  Record GetRecord(std::string_view ns, std::string_view key) {
    auto r = engine_->Get({.ns = ns, .key = key});
    EXPECT_TRUE(r.ok() && r->record) << Name(r);
    return r.ok() && r->record ? *r->record : Record{};
  }

  TempDir dir_;
  std::shared_ptr<ManualClock> clock_;
  EngineOptions options_;
  std::unique_ptr<ServingEngine> engine_;
};

}  // namespace idem::testing

namespace idem::testing {
// Names parameterized tests "Sync" / "Async".
inline std::string DurabilityName(const ::testing::TestParamInfo<Durability>& param) {
  return param.param == Durability::kSync ? "Sync" : "Async";
}
}  // namespace idem::testing
