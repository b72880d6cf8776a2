#include <string>

#include "idem/options.h"

namespace idem {

bool StateGraph::Allows(std::string_view from, std::string_view to) const {
  auto it = next.find(from);
  return it != next.end() && it->second.find(to) != it->second.end();
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
