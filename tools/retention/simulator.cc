#include "simulator.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "duration.h"
#include "idem/engine.h"
#include "live_tracker.h"
#include "random.h"

namespace idem::retention {
namespace {

// The ManualClock's origin; simulated time t is kOrigin + t on the engine's clock.
constexpr int64_t kOriginMs = 1'700'000'000'000;
// Disk at or below this counts as empty for the reclaim lag.
constexpr uint64_t kEmptyDiskBytes = 4096;

// ~100-byte payloads that compress like a real response body rather than to nothing: slices of
// a fixed random base64 text, a different slice per key.
class PayloadSource {
 public:
  explicit PayloadSource(size_t payload_bytes) : size_(payload_bytes) {
    static constexpr char kAlphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    Random random(42);
    text_.resize(kPool + size_);
    for (char& c : text_) c = kAlphabet[random.NextU64() % 64];
  }
  std::string_view For(uint64_t key_id) const {
    return std::string_view(text_).substr(Mix64(key_id) % kPool, size_);
  }

 private:
  static constexpr size_t kPool = 1 << 16;
  size_t size_;
  std::string text_;
};

class Run {
 public:
  Run(const Workload& workload, const Policy& policy, const SimOptions& options,
      const ProgressFn& progress)
      : workload_(workload),
        policy_(policy),
        options_(options),
        progress_(progress),
        clock_(std::make_shared<ManualClock>(kOriginMs)),
        tracker_(workload.namespaces.size()),
        payloads_(options.payload_bytes) {
    result_.policy = policy;
    if (policy.strategy == Strategy::kWindows && policy.window_ms == 0) {
      result_.policy.window_ms = DefaultWindowMs(policy);
    }
    result_.per_namespace.resize(workload.namespaces.size());
    for (const std::string& ns : workload.namespaces) ttl_ms_.push_back(policy.TtlFor(ns));
  }

  Result<PolicyResult> Go(const std::string& db_dir) {
    const auto wall_start = std::chrono::steady_clock::now();
    if (Status s = Open(db_dir); !s.ok()) return s;
    end_ms_ = workload_.EndMs() + options_.drain_ms;
    next_reclaim_ms_ = options_.reclaim_every_ms;
    next_sample_ms_ = options_.sample_every_ms;
    if (Status s = Tick(0, /*reclaim=*/false, /*sample=*/true); !s.ok()) return s;

    for (const Event& e : workload_.events) {
      if (Status s = TicksUntil(e.t_ms); !s.ok()) return s;
      if (Status s = Arrive(e); !s.ok()) return s;
      if (++events_done_ % 4096 == 0) Report(e.t_ms);
    }
    if (Status s = TicksUntil(end_ms_); !s.ok()) return s;
    if (result_.samples.back().t_ms != end_ms_) {
      if (Status s = Tick(end_ms_, false, true); !s.ok()) return s;
    }
    if (Status s = Finish(); !s.ok()) return s;
    engine_.reset();
    result_.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    return std::move(result_);
  }

 private:
  Status Open(const std::string& db_dir) {
    EngineOptions options;
    options.clock = clock_;
    // The WAL still reaches the OS on every write; skipping fsync only buys speed, and disk
    // figures here are table files, which durability does not change.
    options.durability = Durability::kAsync;
    options.reclaim_interval_ms = 0;  // reclaim runs on the simulated schedule instead
    options.reclaim_min_expired_fraction = options_.reclaim_min_expired_fraction;
    options.write_buffer_bytes = options_.write_buffer_bytes;
    options.block_cache_bytes = 16u << 20;
    options.background_jobs = 2;
    options.rocksdb_options = options_.rocksdb_options;
    if (policy_.strategy == Strategy::kWindows) {
      options.layout = EngineOptions::Layout::kExpiryWindows;
      options.expiry_window_ms = result_.policy.window_ms;
      options.expiry_window_merge_files = options_.window_merge_files;
    }
    if (policy_.strategy == Strategy::kJournal ||
        policy_.strategy == Strategy::kJournalCompressed) {
      options.layout = EngineOptions::Layout::kJournal;
      // As large as a memtable: the data a layout holds before it is in a file it can drop.
      options.journal_segment_bytes =
          std::clamp<uint64_t>(options_.write_buffer_bytes, EngineOptions::kMinJournalSegmentBytes,
                               EngineOptions::kMaxJournalSegmentBytes);
      if (policy_.strategy == Strategy::kJournalCompressed) {
        options.journal_dictionary_bytes = EngineOptions::kDefaultJournalDictionaryBytes;
      }
    }
    const int64_t max_ttl = std::max(policy_.MaxTtl(), options.default_retention.max_ttl_ms);
    options.default_retention =
        RetentionPolicy{policy_.default_ttl_ms, max_ttl, false, policy_.remember_ms};
    for (size_t i = 0; i < workload_.namespaces.size(); ++i) {
      options.retention[workload_.namespaces[i]] =
          RetentionPolicy{ttl_ms_[i], max_ttl, false, policy_.remember_ms};
    }
    auto engine = Engine::Open(db_dir, options);
    if (!engine.ok()) return engine.status();
    engine_ = std::move(*engine);
    return Status::Ok();
  }

  Status Arrive(const Event& e) {
    clock_->Set(kOriginMs + e.t_ms);
    tracker_.ExpireUntil(e.t_ms);
    const std::string key = workload_.KeyName(e.key_id);
    char fingerprint[17];
    std::snprintf(fingerprint, sizeof fingerprint, "%016llx",
                  static_cast<unsigned long long>(Mix64(e.key_id + 1)));
    auto r = engine_->Insert({.ns = workload_.namespaces[e.ns],
                              .key = key,
                              .status = "DONE",
                              .payload = payloads_.For(e.key_id),
                              .fingerprint = std::string_view(fingerprint, 16)});
    if (!r.ok()) return Failed("insert", r.status(), e.t_ms);
    NamespaceCounts& ns = result_.per_namespace[e.ns];
    if (r->outcome == Outcome::kInserted) {
      tracker_.Insert(e.ns, e.t_ms + ttl_ms_[e.ns]);
      last_expiry_ms_ = std::max(last_expiry_ms_, e.t_ms + ttl_ms_[e.ns]);
      result_.peak_live_records = std::max(result_.peak_live_records, tracker_.live());
      if (e.duplicate) {
        ++result_.duplicates_missed;
        ++ns.missed;
      } else {
        ++result_.first_requests;
        ++ns.first_requests;
      }
    } else if (r->outcome == Outcome::kExists && e.duplicate) {
      ++result_.duplicates_caught;
      ++ns.caught;
    } else if (r->outcome == Outcome::kExpired && e.duplicate) {
      ++result_.duplicates_expired;
      ++ns.expired;
    } else {
      // A first arrival can only find a record if two key ids collided: the study is broken.
      return Status::Corruption("first arrival of key '" + key + "' found " +
                                std::string(OutcomeName(r->outcome)));
    }
    return Status::Ok();
  }

  int64_t NextTick() const { return std::min(next_reclaim_ms_, next_sample_ms_); }

  Status TicksUntil(int64_t t_ms) {
    while (NextTick() <= t_ms) {
      const int64_t at = NextTick();
      const bool reclaim = at == next_reclaim_ms_;
      const bool sample = at == next_sample_ms_;
      if (reclaim) next_reclaim_ms_ += options_.reclaim_every_ms;
      if (sample) next_sample_ms_ += options_.sample_every_ms;
      if (Status s = Tick(at, reclaim, sample); !s.ok()) return s;
    }
    return Status::Ok();
  }

  Status Tick(int64_t t_ms, bool reclaim, bool sample) {
    // Flushes and compactions run in real time while simulated time races ahead; letting them
    // finish at every tick makes the disk figures the same from run to run and machine to machine.
    if (Status s = engine_->WaitForBackgroundWork(120'000); !s.ok()) {
      return Failed("WaitForBackgroundWork", s, t_ms);
    }
    clock_->Set(kOriginMs + t_ms);
    tracker_.ExpireUntil(t_ms);
    if (reclaim && policy_.strategy != Strategy::kCompactionOnly) {
      auto report = engine_->ReclaimExpired();
      if (!report.ok()) return Failed("ReclaimExpired", report.status(), t_ms);
      ++result_.reclaim_passes;
      result_.reclaim_files_compacted += report->files_compacted;
      result_.windows_dropped += report->windows_dropped;
      result_.window_files_peak = std::max(result_.window_files_peak, report->window_files_max);
    }
    if (sample) {
      if (options_.flush_at_samples) {
        if (Status s = engine_->Flush(); !s.ok()) return Failed("Flush", s, t_ms);
      }
      auto stats = engine_->Stats();
      if (!stats.ok()) return Failed("Stats", stats.status(), t_ms);
      Sample s;
      s.t_ms = t_ms;
      s.live_records = tracker_.live();
      s.estimated_records = stats->estimated_live_records;
      s.sst_bytes = stats->sst_bytes;
      s.live_sst_bytes = stats->live_sst_bytes;
      s.memtable_bytes = stats->memtable_bytes;
      result_.samples.push_back(s);
      result_.disk_bytes_peak = std::max(result_.disk_bytes_peak, s.sst_bytes);
      result_.expiry_windows_peak = std::max(result_.expiry_windows_peak, stats->expiry_windows);
      const uint64_t expired =
          s.estimated_records > s.live_records ? s.estimated_records - s.live_records : 0;
      result_.expired_on_disk_peak = std::max(result_.expired_on_disk_peak, expired);
      if (t_ms <= workload_.EndMs()) result_.estimated_records_end_of_traffic = s.estimated_records;
    }
    Report(t_ms);
    return Status::Ok();
  }

  Status Finish() {
    auto stats = engine_->Stats();
    if (!stats.ok()) return Failed("Stats", stats.status(), end_ms_);
    const Sample& last = result_.samples.back();
    result_.final_live_records = last.live_records;
    result_.estimated_records_final = last.estimated_records;
    result_.expired_on_disk_final =
        last.estimated_records > last.live_records ? last.estimated_records - last.live_records : 0;
    result_.disk_bytes_final = last.sst_bytes;
    result_.live_sst_bytes_final = last.live_sst_bytes;
    result_.user_bytes_written = stats->user_bytes_written;
    result_.flush_bytes_written = stats->flush_bytes_written;
    result_.compaction_bytes_read = stats->compaction_bytes_read;
    result_.compaction_bytes_written = stats->compaction_bytes_written;
    result_.compactions = stats->compactions;
    result_.records_dropped_by_compaction = stats->records_dropped_by_compaction;
    // Reclaim lag: from the moment nothing was live any more to the first sample at <= 5% of the
    // peak disk, or 4 KiB for tiny studies (a table file holding only the engine's fence
    // reservation key is ~1.2 KiB). Only defined when everything expired before the run ended.
    if (result_.final_live_records == 0) {
      const uint64_t floor = std::max<uint64_t>(result_.disk_bytes_peak / 20, kEmptyDiskBytes);
      for (const Sample& s : result_.samples) {
        if (s.t_ms >= last_expiry_ms_ && s.live_records == 0 && s.sst_bytes <= floor) {
          result_.reclaim_lag_ms = s.t_ms - last_expiry_ms_;
          break;
        }
      }
    }
    return Status::Ok();
  }

  void Report(int64_t t_ms) {
    if (!progress_) return;
    Progress p;
    p.policy = &policy_;
    p.sim_now_ms = t_ms;
    p.sim_end_ms = end_ms_;
    p.events_done = events_done_;
    p.events_total = workload_.events.size();
    p.caught = result_.duplicates_caught;
    p.missed = result_.duplicates_missed;
    progress_(p);
  }

  Status Failed(std::string_view what, const Status& s, int64_t t_ms) const {
    return Status::IOError("policy " + policy_.name + ": " + std::string(what) + " at simulated " +
                           FormatDurationMs(t_ms) + ": " + s.ToString());
  }

  const Workload& workload_;
  const Policy& policy_;
  const SimOptions& options_;
  const ProgressFn& progress_;
  std::shared_ptr<ManualClock> clock_;
  std::unique_ptr<Engine> engine_;
  LiveTracker tracker_;
  PayloadSource payloads_;
  std::vector<int64_t> ttl_ms_;  // per namespace index
  PolicyResult result_;
  uint64_t events_done_ = 0;
  int64_t end_ms_ = 0;
  int64_t last_expiry_ms_ = 0;
  int64_t next_reclaim_ms_ = 0;
  int64_t next_sample_ms_ = 0;
};

}  // namespace

Result<PolicyResult> RunPolicy(const Workload& workload, const Policy& policy,
                               const SimOptions& options, const std::string& db_dir,
                               const ProgressFn& progress) {
  if (options.reclaim_every_ms <= 0 || options.sample_every_ms <= 0 || options.drain_ms < 0) {
    return Status::InvalidArgument("reclaim and sample intervals must be positive");
  }
  Run run(workload, policy, options, progress);
  return run.Go(db_dir);
}

}  // namespace idem::retention
