#include "proc_cpu.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

namespace idem::bench {
namespace {

// utime + stime from a /proc/.../stat file, in seconds; -1 when unreadable.
double StatCpuSeconds(const std::string& path) {
  std::ifstream in(path);
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');  // the command name may contain spaces and parentheses
  if (paren == std::string::npos) return -1;
  std::istringstream fields(stat.substr(paren + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  // Fields after the name start at 3 (state); utime is 14, stime 15.
  int i = 3;
  for (; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  if (i <= 15) return -1;
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

}  // namespace

double ProcessCpuSeconds(int pid) {
  return StatCpuSeconds("/proc/" + std::to_string(pid) + "/stat");
}

std::map<std::string, double> ThreadCpuSecondsByName(int pid) {
  std::map<std::string, double> by_name;
  std::error_code ec;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    if (!std::getline(comm, name)) continue;  // the thread exited meanwhile
    const double seconds = StatCpuSeconds(task.path() / "stat");
    if (seconds >= 0) by_name[name] += seconds;
  }
  return by_name;
}

}  // namespace idem::bench
