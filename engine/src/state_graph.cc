#include <string>

#include "idem/options.h"
#include "validation.h"

namespace idem {
namespace {

constexpr char kNameRule[] =
    "state names are 1..max_status_bytes characters of [A-Za-z0-9_.:-], or '*' (from any state) "
    "first in a chain";

Status CheckStateName(std::string_view name, bool is_source, size_t max_bytes) {
  if (name == StateGraph::kAnyState) {
    if (is_source) return Status::Ok();
    return Status::InvalidArgument(
        "state graph: '*' (from any state) is only a source, never a "
        "target; " +
        std::string(kNameRule));
  }
  bool ok = !name.empty();
  for (char c : name) ok = ok && IsNameChar(c);
  if (!ok) {
    return Status::InvalidArgument("state graph: state name '" + std::string(name) +
                                   "' is not allowed; " + kNameRule);
  }
  if (name.size() > max_bytes) {
    return Status::InvalidArgument("state graph: state name '" + std::string(name) + "' is " +
                                   std::to_string(name.size()) + " bytes; max_status_bytes is " +
                                   std::to_string(max_bytes));
  }
  return Status::Ok();
}

}  // namespace

bool StateGraph::Allows(std::string_view from, std::string_view to) const {
  for (std::string_view source : {from, kAnyState}) {
    auto it = next.find(source);
    if (it != next.end() && it->second.find(to) != it->second.end()) return true;
  }
  return false;
}

bool StateGraph::Names(std::string_view state) const {
  if (state != kAnyState && next.find(state) != next.end()) return true;
  for (const auto& [from, targets] : next) {
    if (targets.find(state) != targets.end()) return true;
  }
  return false;
}

Status StateGraph::Validate(size_t max_state_bytes) const {
  for (const auto& [from, targets] : next) {
    if (Status st = CheckStateName(from, /*is_source=*/true, max_state_bytes); !st.ok()) return st;
    for (const std::string& to : targets) {
      if (Status st = CheckStateName(to, /*is_source=*/false, max_state_bytes); !st.ok()) {
        return st;
      }
    }
  }
  return Status::Ok();
}

Result<StateGraph> StateGraph::Parse(std::string_view spec) {
  StateGraph graph;
  while (!spec.empty()) {
    size_t comma = spec.find(',');
    std::string_view chain = spec.substr(0, comma);
    spec = comma == std::string_view::npos ? std::string_view() : spec.substr(comma + 1);
    std::string_view prev;
    bool first = true;
    while (true) {
      size_t gt = chain.find('>');
      std::string_view state = chain.substr(0, gt);
      if (state.empty()) {
        return Status::InvalidArgument("state graph: empty state name in '" + std::string(chain) +
                                       "' (expected A>B>C,A>D)");
      }
      // The length is checked where the limit is known (Engine::Open calls Validate).
      if (Status st = CheckStateName(state, first, std::string_view::npos); !st.ok()) return st;
      if (!first) graph.next[std::string(prev)].emplace(state);
      first = false;
      prev = state;
      if (gt == std::string_view::npos) break;
      chain.remove_prefix(gt + 1);
    }
  }
  if (graph.next.empty()) return Status::InvalidArgument("state graph has no transition");
  return graph;
}

}  // namespace idem
