// Online backups (idem/backup.h): taken while writers write, restored by opening the directory,
// and fences that never go backwards across a restore.
#include "idem/backup.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include <gmock/gmock.h>

#include "support/engine_fixture.h"

namespace idem {
namespace {

using testing::EngineTest;
using ::testing::HasSubstr;
using testing::Name;

std::string WriterKey(int writer, int i) {
  return "w" + std::to_string(writer) + "-" + std::to_string(i);
}

class BackupTest : public EngineTest {
 protected:
  Result<OpResult> Do(const Op& op) { return engine().Execute(op); }
  uint64_t Started(ServingEngine& engine, std::string_view key) {
    auto r = engine.Execute(Op::Begin({.ns = "pay", .key = key, .fingerprint = "fp"}));
    EXPECT_TRUE(r.ok() && r->outcome == Outcome::kStarted) << Name(r);
    return r.ok() && r->record ? r->record->fence : 0;
  }
  std::unique_ptr<ServingEngine> OpenRestored(const std::string& dir) {
    auto restored = ServingEngine::Open(dir, options_);
    EXPECT_TRUE(restored.ok()) << restored.status().ToString();
    return restored.ok() ? std::move(*restored) : nullptr;
  }
};

class BackupUnderWritesTest : public BackupTest, public ::testing::WithParamInterface<Durability> {
 protected:
  BackupUnderWritesTest() { options_.durability = GetParam(); }
};

TEST_P(BackupUnderWritesTest, HoldsEveryRecordAcknowledgedBeforeItBegan) {
  constexpr int kWriters = 4;
  std::atomic<bool> stop{false};
  // acknowledged[w]: writer w's inserts 0 .. acknowledged[w]-1 were acknowledged INSERTED.
  std::vector<std::atomic<int>> acknowledged(kWriters);
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; !stop.load(); ++i) {
        auto r = engine().Insert({.ns = "forever", .key = WriterKey(w, i), .status = "PENDING"});
        if (!r.ok() || r->outcome != Outcome::kInserted) {
          ADD_FAILURE() << WriterKey(w, i) << ": " << Name(r);
          return;
        }
        acknowledged[w].store(i + 1);
      }
    });
  }
  auto total = [&] {
    int n = 0;
    for (auto& a : acknowledged) n += a.load();
    return n;
  };
  while (total() < 2000) std::this_thread::yield();
  std::vector<int> before(kWriters);
  for (int w = 0; w < kWriters; ++w) before[w] = acknowledged[w].load();
  auto manifest = engine().Backup(dir_.Sub("backup"));
  stop = true;
  for (auto& t : writers) t.join();
  ASSERT_OK(manifest);

  engine_.reset();  // the restored store must not depend on the source
  auto restored = OpenRestored(dir_.Sub("backup"));
  ASSERT_NE(nullptr, restored);
  for (int w = 0; w < kWriters; ++w) {
    for (int i = 0; i < before[w]; ++i) {
      auto r = restored->Get({.ns = "forever", .key = WriterKey(w, i)});
      ASSERT_TRUE(r.ok() && r->outcome == Outcome::kFound)
          << WriterKey(w, i) << " was acknowledged before the backup began: " << Name(r);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Durability, BackupUnderWritesTest,
                         ::testing::Values(Durability::kSync, Durability::kAsync),
                         testing::DurabilityName);

TEST_F(BackupTest, RestoredStoreServesTheRecordsAsTheyWere) {
  EXPECT_EQ("INSERTED", Insert("forever", "a", "PENDING", "payload-a"));
  EXPECT_EQ("INSERTED", Insert("forever", "b", "DONE"));
  ASSERT_OK(engine().Backup(dir_.Sub("backup")));
  EXPECT_EQ("INSERTED", Insert("forever", "after"));  // not in the backup

  auto restored = OpenRestored(dir_.Sub("backup"));
  ASSERT_NE(nullptr, restored);
  auto a = restored->Get({.ns = "forever", .key = "a"});
  ASSERT_TRUE(a.ok() && a->record) << Name(a);
  EXPECT_EQ("PENDING", a->record->status);
  EXPECT_EQ("payload-a", a->record->payload);
  EXPECT_EQ("FOUND", Name(restored->Get({.ns = "forever", .key = "b"})));
  EXPECT_EQ("NOT_FOUND", Name(restored->Get({.ns = "forever", .key = "after"})));
  // The restored store takes writes, and the source is untouched by them.
  EXPECT_EQ("INSERTED",
            Name(restored->Insert({.ns = "forever", .key = "new", .status = "PENDING"})));
  EXPECT_EQ("NOT_FOUND", Get("forever", "new"));
}

TEST_F(BackupTest, ManifestRecordsTheBackup) {
  clock_->Advance(365 * 24 * kHour);
  for (int i = 0; i < 10; ++i) EXPECT_EQ("INSERTED", Insert("forever", "k" + std::to_string(i)));
  Started(engine(), "job");
  const uint64_t next_fence = engine().Stats()->next_fence;
  auto returned = engine().Backup(dir_.Sub("backup"));
  ASSERT_OK(returned);
  auto manifest = ReadBackupManifest(dir_.Sub("backup"));
  ASSERT_OK(manifest);
  EXPECT_EQ(clock_->NowMillis(), manifest->created_ms);
  EXPECT_EQ(16u, manifest->created_utc.size()) << manifest->created_utc;  // YYYYMMDDTHHMMSSZ
  EXPECT_FALSE(manifest->idemstore_version.empty());
  EXPECT_EQ(next_fence, manifest->fence_high_water);
  EXPECT_EQ(next_fence + kBackupFenceMargin, manifest->fence_floor);
  EXPECT_GE(manifest->estimated_records, 11u);
  EXPECT_EQ(returned->fence_floor, manifest->fence_floor);
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("backup.incomplete")));
}

// A holder that began after the backup may still present its fence to the restored store; a
// fence handed out again there would let a stale holder pass the fencing check.
TEST_F(BackupTest, RestoredStoreNeverHandsOutAFenceTheSourceHandedOut) {
  uint64_t highest = Started(engine(), "before");
  auto manifest = engine().Backup(dir_.Sub("backup"));
  ASSERT_OK(manifest);
  EXPECT_GT(manifest->fence_high_water, highest);
  // The source goes on: more fences, and a restart (which skips the rest of its reservation).
  for (int i = 0; i < 100; ++i)
    highest = std::max(highest, Started(engine(), "after-" + std::to_string(i)));
  Reopen();
  for (int i = 0; i < 100; ++i)
    highest = std::max(highest, Started(engine(), "again-" + std::to_string(i)));
  ASSERT_LT(highest, manifest->fence_floor) << "the source went past the margin";

  auto restored = OpenRestored(dir_.Sub("backup"));
  ASSERT_NE(nullptr, restored);
  const uint64_t first = Started(*restored, "restored");
  EXPECT_GT(first, highest);
  EXPECT_GE(first, manifest->fence_floor);
  // The manifest stays in the directory; reopening does not move fences back to its floor.
  restored.reset();
  restored = OpenRestored(dir_.Sub("backup"));
  ASSERT_NE(nullptr, restored);
  EXPECT_GT(Started(*restored, "reopened"), first);
}

TEST_F(BackupTest, RefusesAnExistingDirectory) {
  std::filesystem::create_directories(dir_.Sub("taken"));
  auto r = engine().Backup(dir_.Sub("taken"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(Status::Code::kInvalidArgument, r.status().code());
  EXPECT_THAT(r.status().message(), HasSubstr("already exists"));
  std::filesystem::create_directories(dir_.Sub("half.incomplete"));
  r = engine().Backup(dir_.Sub("half"));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("did not finish"));
  EXPECT_FALSE(std::filesystem::exists(dir_.Sub("half")));
}

TEST_F(BackupTest, ADirectoryWithAnUnreadableManifestIsNotOpened) {
  ASSERT_OK(engine().Backup(dir_.Sub("backup")));
  std::ofstream(dir_.Sub("backup") + "/" + kBackupManifestFile, std::ios::trunc)
      << "idemstore-backup 1\nfence_floor twelve\n";
  auto restored = ServingEngine::Open(dir_.Sub("backup"), options_);
  ASSERT_FALSE(restored.ok());
  EXPECT_EQ(Status::Code::kCorruption, restored.status().code());
  EXPECT_THAT(restored.status().message(), HasSubstr("fence_floor"));
}

TEST(BackupManifestTest, RoundTripsAndIgnoresLinesItDoesNotKnow) {
  BackupManifest m;
  m.created_ms = 1796179500000;
  m.created_utc = "20261202T024500Z";
  m.idemstore_version = "0.1.0";
  m.fence_high_water = 131072;
  m.fence_floor = 131072 + kBackupFenceMargin;
  m.estimated_records = 5000;
  auto decoded = DecodeBackupManifest(EncodeBackupManifest(m) + "written_by_later 7\n");
  ASSERT_OK(decoded);
  EXPECT_EQ(m.created_ms, decoded->created_ms);
  EXPECT_EQ(m.created_utc, decoded->created_utc);
  EXPECT_EQ(m.idemstore_version, decoded->idemstore_version);
  EXPECT_EQ(m.fence_high_water, decoded->fence_high_water);
  EXPECT_EQ(m.fence_floor, decoded->fence_floor);
  EXPECT_EQ(m.estimated_records, decoded->estimated_records);
}

TEST(BackupManifestTest, RefusesWhatItCannotTrust) {
  EXPECT_EQ(Status::Code::kCorruption, DecodeBackupManifest("").status().code());
  EXPECT_THAT(DecodeBackupManifest("idemstore-backup 2\nfence_floor 5\n").status().message(),
              HasSubstr("format 2"));
  EXPECT_THAT(DecodeBackupManifest("fence_floor 5\n").status().message(),
              HasSubstr("idemstore-backup"));
  EXPECT_THAT(DecodeBackupManifest("idemstore-backup 1\n").status().message(),
              HasSubstr("no fence_floor"));
}

}  // namespace
}  // namespace idem
