// Simulator: replays a Workload against one Policy on its own real Engine, in simulated time.
//
// Every policy gets a fresh Engine in its own directory, driven by a ManualClock. Arrivals are
// applied in time order: the clock is set to the arrival, then Insert(ns, key) under the
// namespace's TTL (configured as the engine's per-namespace RetentionPolicy, so the engine's
// own default-TTL path is what is measured). For a duplicate, EXISTS means caught and INSERTED
// means missed (its first record had expired: a double execution in production); EXPIRED
// (a policy that remembers keys) means refused: not executed again, its response gone.
//
// Between arrivals, ticks happen at fixed simulated instants (multiples of the interval since
// the workload's start; at equal times reclaim before sample, and ticks before an arrival):
//   - every reclaim_every_ms, the reclaim and windows strategies call Engine::ReclaimExpired()
//     (the background reclaimer is off: its wall-clock timer means nothing in simulated time;
//     under the windows layout the pass is what drops ended windows);
//   - every sample_every_ms, a sample of the disk: the memtable is flushed first when
//     flush_at_samples (so sst_bytes counts every record written so far, and expired records
//     can reach the compaction filter), then Engine::Stats().
// After the last arrival the clock keeps ticking for drain_ms with no traffic, which shows
// whether expired data leaves the disk when writes stop.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "idem/options.h"
#include "idem/result.h"
#include "policy.h"
#include "workload.h"

namespace idem::retention {

struct SimOptions {
  int64_t reclaim_every_ms = 10 * 60 * 1000;
  int64_t sample_every_ms = 60 * 60 * 1000;
  int64_t drain_ms = 0;  // simulated time after the last arrival
  bool flush_at_samples = true;
  size_t write_buffer_bytes = 4u << 20;  // scaled down from the engine's 64 MiB, see docs
  size_t payload_bytes = 100;
  double reclaim_min_expired_fraction = 0.5;  // the engine's default
  std::string rocksdb_options;                // EngineOptions::rocksdb_options, every policy
  // Windows policies: EngineOptions::expiry_window_merge_files.
  int window_merge_files = EngineOptions().expiry_window_merge_files;
};

// One point of the disk timeline.
struct Sample {
  int64_t t_ms = 0;                // since the workload's start
  uint64_t live_records = 0;       // exact, from the simulation's bookkeeping
  uint64_t estimated_records = 0;  // RocksDB's estimate-num-keys (includes expired records)
  uint64_t sst_bytes = 0;          // all table files on disk
  uint64_t live_sst_bytes = 0;     // table files of the current version
  uint64_t memtable_bytes = 0;
};

struct NamespaceCounts {
  uint64_t first_requests = 0, caught = 0, expired = 0, missed = 0;
};

struct PolicyResult {
  Policy policy;
  uint64_t first_requests = 0;
  uint64_t duplicates_caught = 0;
  uint64_t duplicates_missed = 0;
  // Policies that remember keys: duplicates answered EXPIRED (not executed again; the response
  // was gone). Neither caught (replayed) nor missed (executed twice).
  uint64_t duplicates_expired = 0;
  std::vector<NamespaceCounts> per_namespace;     // indexed like Workload::namespaces
  uint64_t peak_live_records = 0;                 // exact, at any instant
  uint64_t final_live_records = 0;                // exact, at the end of the drain
  uint64_t estimated_records_end_of_traffic = 0;  // RocksDB, at the last sample with traffic
  uint64_t estimated_records_final = 0;
  // Expired records still on disk = RocksDB's record estimate - exact live records (>= 0).
  uint64_t expired_on_disk_peak = 0;
  uint64_t expired_on_disk_final = 0;
  // Disk (sst_bytes) at samples.
  uint64_t disk_bytes_peak = 0;
  uint64_t disk_bytes_final = 0;
  uint64_t live_sst_bytes_final = 0;
  // After the last record expired: how long until the disk was at most 5% of its peak or
  // 4 KiB (-1: not within the run). Resolution: the sample interval.
  int64_t reclaim_lag_ms = -1;
  // I/O since open (engine StoreStats).
  uint64_t user_bytes_written = 0;
  uint64_t flush_bytes_written = 0;
  uint64_t compaction_bytes_read = 0;
  uint64_t compaction_bytes_written = 0;
  uint64_t compactions = 0;
  uint64_t records_dropped_by_compaction = 0;
  uint64_t reclaim_passes = 0;
  uint64_t reclaim_files_compacted = 0;
  // The windows strategy: window column families dropped by the reclaim passes, and the most
  // on disk at any sample (StoreStats::expiry_windows).
  uint64_t windows_dropped = 0;
  uint64_t expiry_windows_peak = 0;
  uint64_t window_files_peak = 0;
  double wall_seconds = 0;
  std::vector<Sample> samples;

  double WriteAmplification() const {
    return user_bytes_written == 0
               ? 0.0
               : static_cast<double>(flush_bytes_written + compaction_bytes_written) /
                     static_cast<double>(user_bytes_written);
  }
};

// Where a run is, for a progress line. Reported every few thousand arrivals and ticks.
struct Progress {
  const Policy* policy = nullptr;
  int64_t sim_now_ms = 0;
  int64_t sim_end_ms = 0;
  uint64_t events_done = 0;
  uint64_t events_total = 0;
  uint64_t caught = 0, missed = 0;
};
using ProgressFn = std::function<void(const Progress&)>;

// Runs one policy in a fresh database at `db_dir` (created; must not hold a database). The
// caller removes the directory. A non-ok Status is an engine failure, with the simulated time.
Result<PolicyResult> RunPolicy(const Workload& workload, const Policy& policy,
                               const SimOptions& options, const std::string& db_dir,
                               const ProgressFn& progress = {});

}  // namespace idem::retention
