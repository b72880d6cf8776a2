#include "server_metrics.h"

#include <limits>
#include <string>

namespace idem {
namespace {

using std::chrono::nanoseconds;

// Request latency, in nanoseconds: 50 us (a loopback round trip's share of the server) to 10 s
// (a waiting Begin).
constexpr std::array<uint64_t, 17> kLatencyBoundsNs = {
    50'000,      100'000,      250'000,      500'000,      1'000'000,    2'500'000,
    5'000'000,   10'000'000,   25'000'000,   50'000'000,   100'000'000,  250'000'000,
    500'000'000, 1000'000'000, 2500'000'000, 5000'000'000, 10000'000'000};
// Group-commit batch sizes: powers of two up to the default max_batch_ops.
constexpr std::array<uint64_t, 11> kBatchSizeBounds = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
// WAL fsync, in nanoseconds: 50 us (a write cache) to 2.5 s (a disk in trouble).
constexpr std::array<uint64_t, 15> kSyncBoundsNs = {
    50'000,      100'000,     250'000,     500'000,      1'000'000,
    2'500'000,   5'000'000,   10'000'000,  25'000'000,   50'000'000,
    100'000'000, 250'000'000, 500'000'000, 1000'000'000, 2500'000'000};

uint64_t Nanos(nanoseconds d) { return d.count() > 0 ? static_cast<uint64_t>(d.count()) : 0; }

MetricFamily Family(std::string name, std::string help, MetricType type) {
  MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = type;
  return f;
}

void AddSample(MetricFamily* f, std::vector<std::pair<std::string, std::string>> labels,
               double value) {
  MetricSample s;
  s.labels = std::move(labels);
  s.value = value;
  f->samples.push_back(std::move(s));
}

template <size_t B>
void AddHistogram(MetricFamily* f, std::vector<std::pair<std::string, std::string>> labels,
                  const std::array<uint64_t, B>& bounds, const HistogramCounts<B>& counts,
                  double unit) {
  MetricSample s;
  s.labels = std::move(labels);
  s.buckets.reserve(B + 1);
  for (size_t b = 0; b < B; ++b) {
    s.buckets.emplace_back(static_cast<double>(bounds[b]) / unit, counts.cumulative[b]);
  }
  s.buckets.emplace_back(std::numeric_limits<double>::infinity(), counts.count);
  s.sum = static_cast<double>(counts.sum) / unit;
  s.count = counts.count;
  f->samples.push_back(std::move(s));
}

// A family of one unlabelled series.
struct Scalar {
  const char* name;
  const char* help;
  MetricType type;
  double value;
};

void AppendScalars(std::span<const Scalar> scalars, std::vector<MetricFamily>* out) {
  for (const Scalar& s : scalars) {
    MetricFamily family = Family(s.name, s.help, s.type);
    AddSample(&family, {}, s.value);
    out->push_back(std::move(family));
  }
}

std::string OpName(size_t slot) { return std::string(OpTypeName(static_cast<OpType>(slot))); }
std::string CodeLabel(size_t slot) {
  return std::string(CodeName(static_cast<Status::Code>(slot)));
}

}  // namespace

ServerMetrics::ServerMetrics()
    : latency_(kLatencyBoundsNs),
      batches_(kBatchSizeBounds),
      wal_sync_(kSyncBoundsNs),
      gateway_upstream_(kLatencyBoundsNs) {}

void ServerMetrics::GatewayUpstream(nanoseconds latency) {
  gateway_upstream_.Observe(0, Nanos(latency));
}

void ServerMetrics::CountOp(Transport transport, OpType op, const Result<OpResult>& result,
                            nanoseconds latency) {
  const size_t o = OpSlot(op);
  if (result.ok()) {
    const size_t outcome = static_cast<size_t>(result->outcome);
    ops_.Add(o * kOutcomeSlots + (outcome < kOutcomeSlots ? outcome : 0));
  } else {
    op_errors_.Add(o * kCodeSlots + CodeSlot(result.status().code()));
  }
  latency_.Observe(static_cast<size_t>(transport) * kOpSlots + o, Nanos(latency));
}

void ServerMetrics::CountResults(Transport transport, std::span<const OpType> ops,
                                 std::span<const Result<OpResult>> results, nanoseconds latency) {
  for (size_t i = 0; i < ops.size() && i < results.size(); ++i) {
    CountOp(transport, ops[i], results[i], latency);
  }
}

void ServerMetrics::CountRequestError(Transport transport, Status::Code code) {
  request_errors_.Add(static_cast<size_t>(transport) * kCodeSlots + CodeSlot(code));
}

void ServerMetrics::CountBatch(size_t requests, size_t ops) {
  batches_.Observe(0, requests);
  batches_.Observe(1, ops);
}

void ServerMetrics::CountWalSync(nanoseconds latency, bool ok) {
  wal_sync_.Observe(0, Nanos(latency));
  if (!ok) wal_sync_failures_.Add(0);
}

std::vector<MetricFamily> ServerMetrics::Families() const {
  std::vector<MetricFamily> out;

  MetricFamily ops = Family("idem_ops_total",
                            "Operations answered, by op and outcome (a Begin answered COMPLETED "
                            "is a replay; STARTED a first execution)",
                            MetricType::kCounter);
  for (size_t o = 0; o < kOpSlots; ++o) {
    for (size_t r = 0; r < kOutcomeSlots; ++r) {
      const uint64_t v = ops_.Value(o * kOutcomeSlots + r);
      if (v == 0) continue;
      AddSample(&ops,
                {{"op", OpName(o)}, {"outcome", std::string(OutcomeName(static_cast<Outcome>(r)))}},
                static_cast<double>(v));
    }
  }
  out.push_back(std::move(ops));

  MetricFamily errors = Family("idem_op_errors_total",
                               "Operations answered with an error instead of an outcome, by op "
                               "and error code",
                               MetricType::kCounter);
  for (size_t o = 0; o < kOpSlots; ++o) {
    for (size_t c = 0; c < kCodeSlots; ++c) {
      const uint64_t v = op_errors_.Value(o * kCodeSlots + c);
      if (v != 0) AddSample(&errors, {{"op", OpName(o)}, {"code", CodeLabel(c)}}, double(v));
    }
  }
  out.push_back(std::move(errors));

  MetricFamily failed = Family("idem_request_errors_total",
                               "Requests answered with an error for the whole request, by "
                               "transport and error code",
                               MetricType::kCounter);
  for (size_t t = 0; t < kTransports; ++t) {
    for (size_t c = 0; c < kCodeSlots; ++c) {
      const uint64_t v = request_errors_.Value(t * kCodeSlots + c);
      if (v == 0) continue;
      AddSample(&failed, {{"transport", std::string(kTransportNames[t])}, {"code", CodeLabel(c)}},
                double(v));
    }
  }
  out.push_back(std::move(failed));

  MetricFamily latency = Family("idem_request_duration_seconds",
                                "Time from a request read to its answer, per operation of the "
                                "request, by transport and op",
                                MetricType::kHistogram);
  for (size_t t = 0; t < kTransports; ++t) {
    for (size_t o = 0; o < kOpSlots; ++o) {
      HistogramCounts<kLatencyBounds> c = latency_.Read(t * kOpSlots + o);
      if (c.count == 0) continue;
      AddHistogram(&latency, {{"transport", std::string(kTransportNames[t])}, {"op", OpName(o)}},
                   latency_.bounds(), c, 1e9);
    }
  }
  out.push_back(std::move(latency));

  MetricFamily batch_requests =
      Family("idem_commit_batch_requests", "Requests per group commit (one Store::Apply)",
             MetricType::kHistogram);
  AddHistogram(&batch_requests, {}, batches_.bounds(), batches_.Read(0), 1);
  out.push_back(std::move(batch_requests));
  MetricFamily batch_ops =
      Family("idem_commit_batch_ops", "Operations per group commit (one Store::Apply)",
             MetricType::kHistogram);
  AddHistogram(&batch_ops, {}, batches_.bounds(), batches_.Read(1), 1);
  out.push_back(std::move(batch_ops));

  MetricFamily sync = Family("idem_wal_sync_seconds",
                             "WAL fsyncs of batches applied on the event loop under "
                             "durability sync, by duration",
                             MetricType::kHistogram);
  AddHistogram(&sync, {}, wal_sync_.bounds(), wal_sync_.Read(0), 1e9);
  out.push_back(std::move(sync));
  MetricFamily sync_failed =
      Family("idem_wal_sync_failures_total",
             "WAL fsyncs that failed (their batches answered IO_ERROR)", MetricType::kCounter);
  AddSample(&sync_failed, {}, double(wal_sync_failures_.Value(0)));
  out.push_back(std::move(sync_failed));

  const uint64_t accepted = conns_.Value(kAccepted);
  const uint64_t refused = conns_.Value(kRefused);
  const uint64_t closed = conns_.Value(kClosed);
  const Scalar connections[] = {
      {"idem_connections_open", "Connections being served (refused ones not counted)",
       MetricType::kGauge, double(accepted >= refused + closed ? accepted - refused - closed : 0)},
      {"idem_connections_accepted_total", "Connections accepted, refused ones included",
       MetricType::kCounter, double(accepted)},
      {"idem_connections_refused_total",
       "Connections refused with BUSY: max_connections were open, or the database was opening",
       MetricType::kCounter, double(refused)},
      {"idem_connections_timed_out_total",
       "Connections closed after idle_timeout_ms, or auth_timeout_ms before being greeted",
       MetricType::kCounter, double(conns_.Value(kTimedOut))},
      {"idem_accept_errors_total",
       "Failed accept() calls (EMFILE and the like; the acceptor backs off)", MetricType::kCounter,
       double(conns_.Value(kAcceptErrors))},
      {"idem_tls_handshake_failures_total",
       "Connections closed because their TLS handshake failed (either listener)",
       MetricType::kCounter, double(conns_.Value(kTlsHandshakeFailures))},
  };
  AppendScalars(connections, &out);

  MetricFamily protocol = Family("idem_protocol_errors_total",
                                 "Protocol errors that closed a connection (bad frame length, "
                                 "unverifiable frame, no Hello, unsupported version), by code",
                                 MetricType::kCounter);
  for (size_t c = 0; c < kCodeSlots; ++c) {
    const uint64_t v = protocol_errors_.Value(c);
    if (v != 0) AddSample(&protocol, {{"code", CodeLabel(c)}}, double(v));
  }
  out.push_back(std::move(protocol));

  // Every reason, 0 included: an alert on a rate needs the series before the first failure.
  MetricFamily auth = Family("idem_auth_failures_total",
                             "Failed authentications (either listener), by reason: no_token, "
                             "bad_token, rate_limited (the peer's --auth-failure-limit was "
                             "reached), revoked (a reload removed the connection's principal)",
                             MetricType::kCounter);
  for (size_t r = 0; r < kAuthFailureNames.size(); ++r) {
    AddSample(&auth, {{"reason", std::string(kAuthFailureNames[r])}},
              double(auth_failures_.Value(r)));
  }
  out.push_back(std::move(auth));
  MetricFamily denied = Family("idem_permission_denied_total",
                               "Requests refused PERMISSION_DENIED: an apply with an op its "
                               "principal may not do (nothing of it applied), or an admin request",
                               MetricType::kCounter);
  AddSample(&denied, {}, double(permission_denied_.Value(0)));
  out.push_back(std::move(denied));

  MetricFamily received = Family("idem_received_bytes_total",
                                 "Bytes read from clients, by transport", MetricType::kCounter);
  MetricFamily sent = Family("idem_sent_bytes_total", "Bytes written to clients, by transport",
                             MetricType::kCounter);
  for (size_t t = 0; t < kTransports; ++t) {
    const uint64_t in = bytes_.Value(2 * t), out_bytes = bytes_.Value(2 * t + 1);
    if (in == 0 && out_bytes == 0) continue;
    AddSample(&received, {{"transport", std::string(kTransportNames[t])}}, double(in));
    AddSample(&sent, {{"transport", std::string(kTransportNames[t])}}, double(out_bytes));
  }
  out.push_back(std::move(received));
  out.push_back(std::move(sent));

  MetricFamily gateway = Family("idem_gateway_requests_total",
                                "Requests the Idempotency-Key gateway answered, by outcome "
                                "(docs/gateway.md)",
                                MetricType::kCounter);
  for (size_t o = 0; o < kGatewayOutcomeNames.size(); ++o) {
    const uint64_t v = gateway_requests_.Value(o);
    if (v != 0) AddSample(&gateway, {{"outcome", std::string(kGatewayOutcomeNames[o])}}, double(v));
  }
  out.push_back(std::move(gateway));
  MetricFamily upstream = Family("idem_gateway_upstream_seconds",
                                 "Gateway upstream exchanges (request sent to response read, or "
                                 "failed), by duration",
                                 MetricType::kHistogram);
  AddHistogram(&upstream, {}, gateway_upstream_.bounds(), gateway_upstream_.Read(0), 1e9);
  out.push_back(std::move(upstream));
  const uint64_t opened = gateway_connections_.Value(0), closed_g = gateway_connections_.Value(1);
  const Scalar gateway_connections[] = {
      {"idem_gateway_connections", "Gateway client connections open", MetricType::kGauge,
       double(opened >= closed_g ? opened - closed_g : 0)},
  };
  AppendScalars(gateway_connections, &out);
  return out;
}

std::vector<MetricFamily> StoreStatsFamilies(const StoreStats& s) {
  const Scalar figures[] = {
      {"idem_store_records_estimated",
       "RocksDB's estimate of the records stored (expired ones not yet reclaimed included)",
       MetricType::kGauge, double(s.estimated_live_records)},
      {"idem_store_sst_bytes", "Bytes of table files on disk", MetricType::kGauge,
       double(s.sst_bytes)},
      {"idem_store_live_sst_bytes", "Bytes of the table files the current version references",
       MetricType::kGauge, double(s.live_sst_bytes)},
      {"idem_store_memtable_bytes", "Bytes of the memtables", MetricType::kGauge,
       double(s.memtable_bytes)},
      {"idem_store_wal_bytes", "Bytes of write-ahead log files", MetricType::kGauge,
       double(s.wal_bytes)},
      {"idem_store_block_cache_bytes", "Block cache in use", MetricType::kGauge,
       double(s.block_cache_bytes)},
      {"idem_store_block_cache_capacity_bytes", "Block cache capacity", MetricType::kGauge,
       double(s.block_cache_capacity_bytes)},
      {"idem_store_table_readers_bytes", "Table-file metadata held outside the block cache",
       MetricType::kGauge, double(s.table_readers_bytes)},
      {"idem_store_pending_compaction_bytes", "RocksDB's estimate of bytes compaction must rewrite",
       MetricType::kGauge, double(s.pending_compaction_bytes)},
      {"idem_store_ops_total", "Operations the store applied since it opened", MetricType::kCounter,
       double(s.ops)},
      {"idem_store_writes_total", "RocksDB write batches committed since the store opened",
       MetricType::kCounter, double(s.writes)},
      {"idem_store_wal_syncs_total", "WAL fsyncs since the store opened (0 under durability async)",
       MetricType::kCounter, double(s.wal_syncs)},
      {"idem_store_user_written_bytes_total", "Bytes of the write batches committed",
       MetricType::kCounter, double(s.user_bytes_written)},
      {"idem_store_flush_written_bytes_total", "Bytes of table files written by memtable flushes",
       MetricType::kCounter, double(s.flush_bytes_written)},
      {"idem_store_compaction_read_bytes_total", "Bytes compactions read", MetricType::kCounter,
       double(s.compaction_bytes_read)},
      {"idem_store_compaction_written_bytes_total", "Bytes compactions wrote", MetricType::kCounter,
       double(s.compaction_bytes_written)},
      {"idem_store_compactions_total", "Compactions completed", MetricType::kCounter,
       double(s.compactions)},
      {"idem_store_write_stalls_total", "Times RocksDB started slowing or stopping writes",
       MetricType::kCounter, double(s.write_stalls)},
      {"idem_store_write_stalled", "1 while RocksDB slows or stops writes, else 0",
       MetricType::kGauge, s.write_stalled ? 1.0 : 0.0},
      {"idem_store_background_errors_total", "RocksDB background (flush, compaction) errors",
       MetricType::kCounter, double(s.background_errors)},
      {"idem_expiry_reclaimed_records_total",
       "Record versions compaction removed: expired records, and overwritten or deleted versions",
       MetricType::kCounter, double(s.records_dropped_by_compaction)},
      {"idem_expiry_unreclaimed_records",
       "Estimated records expired past the grace that compaction has not removed yet (reclaim lag)",
       MetricType::kGauge, double(s.expired_unreclaimed_records)},
      {"idem_store_expiry_windows",
       "Expiry-window column families on disk (--layout windows; each is dropped whole once "
       "it has ended)",
       MetricType::kGauge, double(s.expiry_windows)},
      {"idem_reclaim_failures_total",
       "Background reclaim passes that failed (each retried at the next interval; expired "
       "records and ended windows stay on disk until one succeeds)",
       MetricType::kCounter, double(s.reclaim_failures)},
      {"idem_store_expiry_window_filter_bytes",
       "Bytes of the expiry windows' in-memory key filters (--layout windows)", MetricType::kGauge,
       double(s.expiry_window_filter_bytes)},
      {"idem_store_journal_segments",
       "Journal segment files on disk (--layout journal; each is deleted once every record in it "
       "is dead)",
       MetricType::kGauge, double(s.journal_segments)},
      {"idem_store_journal_bytes", "Bytes of the journal's segment files up to their last entry",
       MetricType::kGauge, double(s.journal_bytes)},
      {"idem_store_journal_index_bytes",
       "Bytes of the journal's in-memory index (--layout journal): 10-20 per record",
       MetricType::kGauge, double(s.journal_index_bytes)},
      {"idem_clock_steps_total",
       "Wall-clock steps the engine clock detected and did not follow (it slews instead)",
       MetricType::kCounter, double(s.clock_steps)},
      {"idem_store_next_fence", "Every fence handed out so far is below this", MetricType::kGauge,
       double(s.next_fence)},
      {"idem_store_admin_overrides_total",
       "Deletes that removed an attempt, token, lock or state-machine record (administrative "
       "overrides of that scheme's rules)",
       MetricType::kCounter, double(s.admin_overrides)},
  };
  std::vector<MetricFamily> out;
  AppendScalars(figures, &out);
  return out;
}

}  // namespace idem
