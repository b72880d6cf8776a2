// Starts a test's helper binary as a child process that the kernel kills with its parent (so a
// failed test never leaves one behind): for the tests that SIGKILL a process mid-write and check
// what it left.
#pragma once

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace idem::testing {

// fork + exec of args[0] with `args`; the child's pid, or -1. File descriptors without
// FD_CLOEXEC (a report pipe) are inherited.
inline pid_t StartChildProcess(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {  // only async-signal-safe calls until exec
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

}  // namespace idem::testing
