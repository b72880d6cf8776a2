// Study: everything one run of idem-retention measured, as the report writers see it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "simulator.h"

namespace idem::retention {

struct Study {
  // The settings that produced it (flag name -> value), echoed by every report.
  std::vector<std::pair<std::string, std::string>> settings;
  std::vector<std::string> namespaces;
  uint64_t events = 0;
  uint64_t first_requests = 0;
  uint64_t duplicates = 0;
  int64_t first_requests_end_ms = 0;  // first requests stop here
  int64_t last_arrival_ms = 0;        // the last duplicate arrives here
  SimOptions sim;
  std::vector<PolicyResult> results;  // one per policy, in the order they ran
};

}  // namespace idem::retention
