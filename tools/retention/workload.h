// Workload: the arrivals one study replays against every policy, in time order.
//
// A generated workload has first requests arriving as a Poisson process at `rate_per_s` for
// `duration_ms`, each assigned to a namespace by the mix weights, and each followed by the
// duplicates its namespace's delay model draws. Duplicates of late first requests still
// arrive after `duration_ms` (up to the model's longest delay).
//
// Memory: events are held in one vector (24 bytes each); keys are not stored for generated
// workloads (KeyName derives them from the id), only for traces.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "delay_models.h"
#include "idem/result.h"

namespace idem::retention {

struct Event {
  int64_t t_ms = 0;        // since the start of the workload
  uint64_t key_id = 0;     // the request's identity (shared by a first request and its duplicates)
  uint32_t ns = 0;         // index into Workload::namespaces
  bool duplicate = false;  // not the first arrival of this (namespace, key)
};

enum class KeyOrder : uint8_t {
  kRandom,  // UUIDv4-like: keys are spread over the whole key space (the common case)
  kTime,    // ULID/UUIDv7-like: keys sort by creation time
};

struct Workload {
  std::vector<std::string> namespaces;
  std::vector<Event> events;           // sorted by t_ms (stable: ties keep generation order)
  std::vector<std::string> key_names;  // traces only: key_id -> key; empty when generated
  KeyOrder key_order = KeyOrder::kRandom;
  int64_t first_requests_end_ms = 0;  // no first request at or after this time

  // The store key of an event's request: key_names[id] for traces; otherwise 32 hex digits
  // derived from the id, random or time-ordered per key_order.
  std::string KeyName(uint64_t key_id) const;
  int64_t EndMs() const { return events.empty() ? 0 : events.back().t_ms; }
  uint64_t Duplicates() const;
};

// One namespace of a --mix: its name, the delay model of its duplicates, its share of the
// first requests.
struct MixEntry {
  std::string ns;
  DelayModel model = DelayModel::kRetry;
  double weight = 0;
};

// "payments:callbacks:0.5,orders:retry:0.5" (weights need not sum to 1; they are normalized).
Result<std::vector<MixEntry>> ParseMix(std::string_view text);

struct WorkloadSpec {
  uint64_t seed = 1;
  double rate_per_s = 10;
  int64_t duration_ms = 0;
  std::vector<MixEntry> mix;
  ModelParamSet params;
  KeyOrder key_order = KeyOrder::kRandom;
};

// Deterministic: the same spec (seed included) gives the same events on every platform.
Result<Workload> GenerateWorkload(const WorkloadSpec& spec);

// Namespaces are 1..64 characters of [A-Za-z0-9_.:-] (the engine's rule).
Status ValidateNamespace(std::string_view ns);

}  // namespace idem::retention
