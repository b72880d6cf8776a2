// Test support: the real idemstored binary as a child process on an ephemeral loopback port.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace idem::testing {

using namespace std::chrono_literals;

// idemstored (at `binary`) as a child process, its output captured. The child dies with the
// test process (PR_SET_PDEATHSIG), so no server outlives its test.
class ServerProcess {
 public:
  explicit ServerProcess(std::string binary) : binary_(std::move(binary)) {}
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;
  ~ServerProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (drain_.joinable()) drain_.join();
    if (fd_ >= 0) ::close(fd_);
  }

  // The child's open-files limit (soft and hard, as `ulimit -n` sets it), e.g. 1024 as systemd
  // gives services by default. 0 (the default): inherit the test process's.
  void set_open_files_limit(rlim_t limit) { open_files_limit_ = limit; }

  // Starts idemstored with `args` and returns once its start line names the bound address, or
  // returns false (with the output so far in output()) if it exits or 20 s pass.
  bool Start(std::vector<std::string> args) {
    if (!Launch(std::move(args))) return false;
    // Poll the output until the start line appears (process start cannot be awaited otherwise).
    // The port ends at a space (text log) or at the message's closing quote (JSON log).
    const std::string start_line = "listening on 127.0.0.1:";
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    size_t at;
    while ((at = output_.find(start_line)) == std::string::npos ||
           output_.find_first_of(" \"", at + start_line.size()) == std::string::npos) {
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

  // Starts idemstored with `args` and returns at once (false if it cannot be started). Read its
  // output with WaitForOutput; it must write little (nothing drains the pipe meanwhile).
  bool Launch(std::vector<std::string> args) {
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return false;
    args.insert(args.begin(), binary_);
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      // Child (only async-signal-safe calls until exec): die with the test process, even if it
      // crashes, so that no server outlives its test.
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (open_files_limit_ > 0) {
        const rlimit limit{open_files_limit_, open_files_limit_};
        if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) ::_exit(126);
      }
      ::dup2(pipe_fds[1], 1);
      ::dup2(pipe_fds[1], 2);
      ::execv(binary_.c_str(), argv.data());
      ::_exit(127);
    }
    ::close(pipe_fds[1]);
    fd_ = pipe_fds[0];
    return pid_ > 0;
  }

  // After Launch: reads the output until it holds `text` (true), or until the child closes it
  // (it exited: then all of its output is read) or `timeout` passes (false).
  bool WaitForOutput(const std::string& text, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (output().find(text) == std::string::npos) {
      if (!ReadSome(deadline)) return false;
    }
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
  pid_t pid() const { return pid_; }
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

  const std::string binary_;
  rlim_t open_files_limit_ = 0;
  pid_t pid_ = -1;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::mutex mu_;
  std::string output_;  // guarded by mu_ once drain_ runs
  std::thread drain_;
};

}  // namespace idem::testing
