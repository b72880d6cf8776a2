// idem-bench's reading of another process's CPU time from /proc, tried on this process.
#include "proc_cpu.h"

#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

namespace idem::bench {
namespace {

// Spins on the CPU for `cpu` of this thread's own CPU time (not wall time: the machine may be
// busy).
void Burn(std::chrono::milliseconds cpu) {
  const auto start = std::chrono::steady_clock::now();
  timespec ts{};
  volatile uint64_t sink = 0;
  while (true) {
    for (int i = 0; i < 100'000; ++i) sink = sink + i;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    if (ts.tv_sec * 1000 + ts.tv_nsec / 1'000'000 >= cpu.count()) break;
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(30)) break;
  }
}

TEST(ProcCpuTest, ThreadsAreCountedByNameAndAddUpToTheProcess) {
  std::thread burner([] {
    pthread_setname_np(pthread_self(), "proc-cpu-burn");
    Burn(std::chrono::milliseconds(300));
  });
  burner.join();
  // The burner has exited: the process total still has its CPU, the per-thread view not.
  std::thread second([] {
    pthread_setname_np(pthread_self(), "proc-cpu-live");
    Burn(std::chrono::milliseconds(300));
    std::map<std::string, double> by_name = ThreadCpuSecondsByName(getpid());
    ASSERT_EQ(1u, by_name.count("proc-cpu-live"));
    EXPECT_GE(by_name["proc-cpu-live"], 0.25);  // clock ticks: 10 ms resolution
    EXPECT_EQ(0u, by_name.count("proc-cpu-burn"));
  });
  second.join();
  EXPECT_GE(ProcessCpuSeconds(getpid()), 0.55);
}

TEST(ProcCpuTest, AProcessThatDoesNotExistReadsAsUnknown) {
  // Above the kernel's pid_max (at most 2^22), so no process has it.
  EXPECT_EQ(-1, ProcessCpuSeconds(1 << 23));
  EXPECT_TRUE(ThreadCpuSecondsByName(1 << 23).empty());
}

}  // namespace
}  // namespace idem::bench
