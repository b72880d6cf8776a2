// The real idemstored binary as a child process: flags, start line, SIGTERM, and crash safety:
// SIGKILL in the middle of a write stream loses no acknowledged write, in sync and in async mode.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "idem/client.h"
#include "support/temp_dir.h"

namespace idem {
namespace {

using namespace std::chrono_literals;

// idemstored as a child process, its stderr captured.
class ServerProcess {
 public:
  ~ServerProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (drain_.joinable()) drain_.join();
    if (fd_ >= 0) ::close(fd_);
  }

  // Starts idemstored with `args` and returns once its start line names the bound address, or
  // returns false (with the output so far in output()) if it exits or 20 s pass.
  bool Start(std::vector<std::string> args) {
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return false;
    args.insert(args.begin(), IDEMSTORED_PATH);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      // Child (only async-signal-safe calls until exec): die with the test process, even if it
      // crashes, so that no server outlives its test.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      ::dup2(pipe_fds[1], 1);
      ::dup2(pipe_fds[1], 2);
      ::execv(IDEMSTORED_PATH, argv.data());
      ::_exit(127);
    }
    ::close(pipe_fds[1]);
    fd_ = pipe_fds[0];
    if (pid_ < 0) return false;

    // Poll the output until the start line appears (process start cannot be awaited otherwise).
    const std::string start_line = "listening on 127.0.0.1:";
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    size_t at;
    while ((at = output_.find(start_line)) == std::string::npos ||
           output_.find(' ', at + start_line.size()) == std::string::npos) {
      if (std::chrono::steady_clock::now() > deadline || !ReadSome(deadline)) return false;
    }
    port_ = static_cast<uint16_t>(std::stoi(output_.substr(at + start_line.size())));
    // Keep draining so the child never blocks on a full pipe.
    drain_ = std::thread([this] {
      while (ReadSome(std::chrono::steady_clock::now() + 3600s)) {
      }
    });
    return true;
  }

  // Returns the exit status, or nullopt if it has not exited within `timeout`.
  std::optional<int> WaitExit(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(10ms);  // polling a child's exit with a deadline
    }
    return std::nullopt;
  }
  void Signal(int sig) { ::kill(pid_, sig); }
  uint16_t port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string output() {
    std::lock_guard<std::mutex> lock(mu_);
    return output_;
  }

 private:
  bool ReadSome(std::chrono::steady_clock::time_point deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd pfd{fd_, POLLIN, 0};
    if (::poll(&pfd, 1, static_cast<int>(std::max<int64_t>(left.count(), 0))) <= 0) return false;
    char buf[4096];
    ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n <= 0) return false;
    std::lock_guard<std::mutex> lock(mu_);
    output_.append(buf, static_cast<size_t>(n));
    return true;
  }

  pid_t pid_ = -1;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::mutex mu_;
  std::string output_;  // guarded by mu_ once drain_ runs
  std::thread drain_;
};

std::unique_ptr<Client> ConnectTo(const ServerProcess& server) {
  ClientOptions options;
  options.address = server.address();
  options.request_timeout_ms = 20'000;
  auto client = Client::Connect(options);
  EXPECT_TRUE(client.ok()) << client.status().ToString();
  return client.ok() ? std::move(*client) : nullptr;
}

int RunToExit(std::vector<std::string> args, std::string* output) {
  ServerProcess process;
  if (process.Start(args)) return -1;  // it was expected to exit without serving
  *output = process.output();
  return process.WaitExit(20s).value_or(-2);
}

TEST(IdemstoredTest, HelpAndBadFlags) {
  std::string out;
  EXPECT_EQ(0, RunToExit({"--help"}, &out));
  EXPECT_NE(std::string::npos, out.find("--durability")) << out;
  EXPECT_EQ(2, RunToExit({"--no-such-flag"}, &out));
  EXPECT_NE(std::string::npos, out.find("--no-such-flag")) << out;
  testing::TempDir dir;
  EXPECT_EQ(1, RunToExit({"--listen", "0.0.0.0:0", "--data", dir.Sub("db")}, &out));
  EXPECT_NE(std::string::npos, out.find("--allow-remote")) << out;
}

TEST(IdemstoredTest, SigtermStopsCleanlyAndDataSurvives) {
  testing::TempDir dir;
  ServerProcess server;
  ASSERT_TRUE(server.Start({"--listen", "127.0.0.1:0", "--data", dir.Sub("db")}))
      << server.output();
  EXPECT_NE(std::string::npos, server.output().find("durability=sync"));
  {
    auto client = ConnectTo(server);
    ASSERT_TRUE(client);
    ASSERT_OK(client->Insert("ns", "kept", "DONE"));
  }
  server.Signal(SIGTERM);
  EXPECT_EQ(std::optional<int>(0), server.WaitExit(15s));
  EXPECT_NE(std::string::npos, server.output().find("stopped")) << server.output();

  ServerProcess again;
  ASSERT_TRUE(again.Start({"--listen", "127.0.0.1:0", "--data", dir.Sub("db")})) << again.output();
  auto client = ConnectTo(again);
  ASSERT_TRUE(client);
  Result<OpResult> r = client->Get("ns", "kept");
  ASSERT_OK(r);
  EXPECT_EQ(Outcome::kFound, r->outcome);
}

// Several writers insert distinct keys and remember every acknowledged one; the server is
// SIGKILLed mid-stream, restarted on the same directory, and every acknowledged key must be
// there.
void KillMidStreamLosesNothing(const std::string& durability) {
  testing::TempDir dir;
  const std::vector<std::string> args = {"--listen", "127.0.0.1:0", "--data", dir.Sub("db"),
                                         "--durability", durability};
  ServerProcess server;
  ASSERT_TRUE(server.Start(args)) << server.output();

  constexpr int kWriters = 4;
  constexpr int kAcksBeforeKill = 2000;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> acknowledged;  // guarded by mu
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      auto client = ConnectTo(server);
      if (!client) return;
      for (int i = 0;; ++i) {
        const std::string key = "w" + std::to_string(w) + "-" + std::to_string(i);
        const std::string pair = key + "-pair";  // Ops borrow their strings
        // A batch of two, so the atomicity of a request is exercised too.
        std::vector<Op> ops = {Op::Insert("crash", key, "DONE", "payload"),
                               Op::Insert("crash", pair, "DONE")};
        std::vector<Result<OpResult>> results;
        if (!client->Apply(ops, &results).ok()) return;  // the server is gone
        for (const auto& r : results) {
          if (!r.ok() || r->outcome != Outcome::kInserted) {
            ADD_FAILURE() << key << ": " << (r.ok() ? OutcomeName(r->outcome) : r.status().ToString());
            return;
          }
        }
        std::lock_guard<std::mutex> lock(mu);
        acknowledged.push_back(key);
        cv.notify_all();
      }
    });
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 60s, [&] { return acknowledged.size() >= kAcksBeforeKill; }));
  }
  server.Signal(SIGKILL);
  for (auto& t : writers) t.join();
  ASSERT_TRUE(server.WaitExit(10s).has_value());

  ServerProcess restarted;
  ASSERT_TRUE(restarted.Start(args)) << restarted.output();
  auto client = ConnectTo(restarted);
  ASSERT_TRUE(client);
  std::vector<Op> ops;
  std::vector<std::string> keys;
  for (const std::string& key : acknowledged) {
    keys.push_back(key);
    keys.push_back(key + "-pair");
  }
  for (const std::string& key : keys) ops.push_back(Op::Get("crash", key));
  size_t missing = 0;
  for (size_t begin = 0; begin < ops.size(); begin += 1000) {
    std::span<const Op> chunk(ops.data() + begin, std::min<size_t>(1000, ops.size() - begin));
    std::vector<Result<OpResult>> results;
    ASSERT_OK(client->Apply(chunk, &results));
    for (size_t i = 0; i < results.size(); ++i) {
      if (!results[i].ok() || results[i]->outcome != Outcome::kFound) {
        ++missing;
        ADD_FAILURE() << "acknowledged but lost: " << keys[begin + i];
      }
    }
  }
  std::printf("%s: %zu acknowledged requests (%zu keys) before SIGKILL, %zu lost\n",
              durability.c_str(), acknowledged.size(), keys.size(), missing);
  EXPECT_EQ(0u, missing);
}

TEST(IdemstoredTest, KillMidStreamLosesNoAcknowledgedWriteSync) { KillMidStreamLosesNothing("sync"); }
TEST(IdemstoredTest, KillMidStreamLosesNoAcknowledgedWriteAsync) {
  KillMidStreamLosesNothing("async");
}

}  // namespace
}  // namespace idem
