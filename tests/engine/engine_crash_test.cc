// Crash durability: a child process writes (from several threads) and reports each acknowledged
// insert through a pipe; the parent SIGKILLs it mid-stream, reopens the database and checks that
// every acknowledged record is there and that fences never go backwards. Under each durability,
// and under the journal layout with segments small enough that the writers roll them.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <ostream>
#include <string>
#include <thread>

#include "idem/engine.h"
#include "support/engine_fixture.h"

namespace idem {
namespace {

struct Ack {
  uint32_t life;
  uint32_t thread;
  uint32_t seq;
  uint64_t fence;
};
static_assert(sizeof(Ack) <= PIPE_BUF, "pipe writes of one Ack must be atomic");

std::string AckKey(const Ack& a) {
  return "l" + std::to_string(a.life) + "-t" + std::to_string(a.thread) + "-" +
         std::to_string(a.seq);
}

struct CrashCase {
  Durability durability;
  EngineOptions::Layout layout;
};

std::string CaseName(const CrashCase& c) {
  return std::string(c.durability == Durability::kSync ? "sync" : "async") +
         (c.layout == EngineOptions::Layout::kJournal ? "Journal" : "");
}
void PrintTo(const CrashCase& c, std::ostream* os) { *os << CaseName(c); }

EngineOptions OptionsFor(const CrashCase& c) {
  EngineOptions options;
  options.durability = c.durability;
  options.reclaim_interval_ms = 0;
  if (c.layout == EngineOptions::Layout::kJournal) testing::UseSmallJournal(&options);
  return options;
}

[[noreturn]] void RunWriter(const std::string& path, const CrashCase& c, uint32_t life, int fd) {
  auto engine = Engine::Open(path, OptionsFor(c));
  if (!engine.ok()) _exit(2);
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (uint32_t seq = 0;; ++seq) {
        Ack ack{life, t, seq, 0};
        auto r = (*engine)->Insert({.ns = "crash",
                                    .key = AckKey(ack),
                                    .status = "DONE",
                                    .payload = "payload-" + std::to_string(seq)});
        if (!r.ok() || r->outcome != Outcome::kInserted) _exit(3);
        ack.fence = r->record->fence;
        if (write(fd, &ack, sizeof ack) != sizeof ack) _exit(4);
      }
    });
  }
  for (auto& th : threads) th.join();
  _exit(0);
}

class EngineCrashTest : public ::testing::TestWithParam<CrashCase> {};

TEST_P(EngineCrashTest, KilledWriterLosesNoAcknowledgedInsert) {
  testing::TempDir dir;
  const std::string path = dir.Sub("db");
  std::vector<Ack> acks;
  for (int life = 0; life < 2; ++life) {  // crash twice on the same directory
    int fds[2];
    ASSERT_EQ(0, pipe(fds));
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      RunWriter(path, GetParam(), static_cast<uint32_t>(life), fds[1]);
    }
    close(fds[1]);
    const size_t target = acks.size() + 400;
    Ack ack;
    while (acks.size() < target && read(fds[0], &ack, sizeof ack) == sizeof ack)
      acks.push_back(ack);
    ASSERT_EQ(0, kill(pid, SIGKILL));
    // Acks written before the kill are acknowledged too: drain them.
    while (read(fds[0], &ack, sizeof ack) == sizeof ack) acks.push_back(ack);
    close(fds[0]);
    int wstatus = 0;
    ASSERT_EQ(pid, waitpid(pid, &wstatus, 0));
    ASSERT_TRUE(WIFSIGNALED(wstatus)) << "writer exited early with " << WEXITSTATUS(wstatus);
  }
  ASSERT_GE(acks.size(), 800u);

  auto engine = Engine::Open(path, OptionsFor(GetParam()));
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  if (GetParam().layout == EngineOptions::Layout::kJournal) {
    auto stats = (*engine)->Stats();
    ASSERT_TRUE(stats.ok());
    ASSERT_GE(stats->journal_segments, 2u) << "the writers never rolled a segment";
  }
  uint64_t max_fence = 0;
  for (const Ack& a : acks) {
    auto r = (*engine)->Get({.ns = "crash", .key = AckKey(a)});
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(Outcome::kFound, r->outcome) << AckKey(a) << " was acknowledged";
    EXPECT_EQ(a.fence, r->record->fence);
    max_fence = std::max(max_fence, a.fence);
  }
  auto next = (*engine)->Insert({.ns = "crash", .key = "after", .status = "S"});
  ASSERT_TRUE(next.ok());
  EXPECT_GT(next->record->fence, max_fence);
}

INSTANTIATE_TEST_SUITE_P(
    Durability, EngineCrashTest,
    ::testing::Values(CrashCase{Durability::kSync, EngineOptions::Layout::kLeveled},
                      CrashCase{Durability::kAsync, EngineOptions::Layout::kLeveled},
                      CrashCase{Durability::kSync, EngineOptions::Layout::kJournal},
                      CrashCase{Durability::kAsync, EngineOptions::Layout::kJournal}),
    [](const ::testing::TestParamInfo<CrashCase>& p) { return CaseName(p.param); });

}  // namespace
}  // namespace idem
