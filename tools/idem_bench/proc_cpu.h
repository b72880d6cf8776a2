// CPU time of another process, read from /proc: what idem-bench reports about the server it
// drives (--server-pid), so a run shows how the server's CPU divided between its event loop and
// RocksDB's flush and compaction threads.
#pragma once

#include <map>
#include <string>

namespace idem::bench {

// User + system CPU seconds of process `pid`, all its threads (exited ones included); -1 when it
// cannot be read.
double ProcessCpuSeconds(int pid);

// The same per thread name (/proc/PID/task/*/comm), summed over the threads that share a name
// (a pool's threads). Threads that have exited are not counted. Empty when it cannot be read.
std::map<std::string, double> ThreadCpuSecondsByName(int pid);

}  // namespace idem::bench
