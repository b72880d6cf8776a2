// The conformance fixture: one specification, two implementations. Every TEST_P runs against
// the embedded Engine and against a Client talking to a real server (in-process, 127.0.0.1,
// ephemeral port) over the same kind of engine. Both share a ManualClock, so expiry and leases
// are tested without sleeping.
#pragma once

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "credentials.h"
#include "idem/client.h"
#include "idem/engine.h"
#include "support/outcome_name.h"
#include "support/temp_dir.h"
#include "support/test_certs.h"
#include "support/ttl_ms.h"
#include "test_server.h"

namespace idem::testing {

inline constexpr int64_t kHour = 3'600'000;

inline EngineOptions ConformanceEngineOptions(const std::shared_ptr<ManualClock>& clock) {
  EngineOptions options = TestEngineOptions(clock);
  options.limits.max_batch_ops = 64;
  options.default_retention = {
      .default_ttl_ms = 24 * kHour, .max_ttl_ms = 48 * kHour, .allow_forever = false};
  options.retention["forever"] = {
      .default_ttl_ms = kHour, .max_ttl_ms = kHour, .allow_forever = true};
  // Keeps records 1 h and remembers their keys 24 h more (store_conformance_remember_test.cc).
  options.retention["remember"] = {.default_ttl_ms = kHour,
                                   .max_ttl_ms = 48 * kHour,
                                   .allow_forever = false,
                                   .remember_ms = 24 * kHour};
  options.state_graphs["order"] = *StateGraph::Parse("WAIT_PAY>PAYING>PAID,WAIT_PAY>CLOSED");
  options.state_graphs["post"] = *StateGraph::Parse("draft>published,*>moderated");
  options.key_formats["keyed"] = *KeyFormat::Parse("min=16,max=64,chars=[A-Za-z0-9_-]");
  options.key_formats["uuids"] = *KeyFormat::Parse("uuid");
  // Responses and checkpoints of at most 8 bytes (store_conformance_checkpoint_test.cc).
  options.lifecycle["capped"].max_response_bytes = 8;
  return options;
}

// kClient: the server applies on an engine thread (engine_threads = 1); kClientOnLoop: its event
// loop applies (engine_threads = 0, the default); kClientOnLoopSync: the same under
// Durability::kSync, where a sync thread fsyncs and answers wait for it; kClientTlsAuth: as
// kClientOnLoop over TLS, with authentication on and a token whose grant is "*:read,write,admin".
// The journal modes run kEngine, kClient and kClientOnLoopSync under the journal layout
// (EngineOptions::Layout::kJournal), with small segments so that tests roll them;
// kEngineSyncJournal runs kEngine under Durability::kSync, where each batch's own write fsyncs the
// journal (the server's modes defer that to their sync thread).
enum class Mode {
  kEngine,
  kClient,
  kClientOnLoop,
  kClientOnLoopSync,
  kClientTlsAuth,
  kEngineJournal,
  kEngineSyncJournal,
  kClientJournal,
  kClientOnLoopSyncJournal
};
inline const char* ModeName(Mode mode) {
  switch (mode) {
    case Mode::kEngine:
      return "Engine";
    case Mode::kClient:
      return "Client";
    case Mode::kClientOnLoop:
      return "ClientOnLoop";
    case Mode::kClientOnLoopSync:
      return "ClientOnLoopSync";
    case Mode::kClientTlsAuth:
      return "ClientTlsAuth";
    case Mode::kEngineJournal:
      return "EngineJournal";
    case Mode::kEngineSyncJournal:
      return "EngineSyncJournal";
    case Mode::kClientJournal:
      return "ClientJournal";
    case Mode::kClientOnLoopSyncJournal:
      return "ClientOnLoopSyncJournal";
  }
  return "?";
}
inline bool InProcess(Mode mode) {
  return mode == Mode::kEngine || mode == Mode::kEngineJournal || mode == Mode::kEngineSyncJournal;
}
inline bool Synced(Mode mode) {
  return mode == Mode::kClientOnLoopSync || mode == Mode::kEngineSyncJournal ||
         mode == Mode::kClientOnLoopSyncJournal;
}
inline bool Journaled(Mode mode) {
  return mode == Mode::kEngineJournal || mode == Mode::kEngineSyncJournal ||
         mode == Mode::kClientJournal || mode == Mode::kClientOnLoopSyncJournal;
}
// Whether the server applies on an engine thread rather than on its event loop.
inline bool OnEngineThread(Mode mode) {
  return mode == Mode::kClient || mode == Mode::kClientJournal;
}
// The mode's durability and layout over `options`.
inline EngineOptions ForMode(Mode mode, EngineOptions options) {
  if (Synced(mode)) options.durability = Durability::kSync;
  if (Journaled(mode)) {
    options.layout = EngineOptions::Layout::kJournal;
    options.journal_segment_bytes = 2 * options.limits.max_payload_bytes;
  }
  return options;
}
inline void PrintTo(Mode mode, std::ostream* os) { *os << ModeName(mode); }
inline std::string ModeTestName(const ::testing::TestParamInfo<Mode>& info) {
  return ModeName(info.param);
}
inline auto AllModes() {
  return ::testing::Values(Mode::kEngine, Mode::kClient, Mode::kClientOnLoop,
                           Mode::kClientOnLoopSync, Mode::kClientTlsAuth, Mode::kEngineJournal,
                           Mode::kEngineSyncJournal, Mode::kClientJournal,
                           Mode::kClientOnLoopSyncJournal);
}
// The modes whose layout has Scan and Purge (not the journal's yet).
inline auto ModesWithScan() {
  return ::testing::Values(Mode::kEngine, Mode::kClient, Mode::kClientOnLoop,
                           Mode::kClientOnLoopSync, Mode::kClientTlsAuth);
}

// kClientTlsAuth's files, made once per test binary (an EC key pair per certificate): a CA, the
// server's certificate for 127.0.0.1 and its key, and an auth file with one principal allowed
// everything, whose secret is `token`.
struct SecureServerFiles {
  TlsFiles tls;
  std::string auth_file;
  std::string token;
};
inline const SecureServerFiles& SecureFiles() {
  static const SecureServerFiles files = [] {
    static const TempDir dir;  // until the test binary exits
    const TestCa ca("conformance CA");
    SecureServerFiles f;
    f.tls = WriteTlsFiles(dir.path(), "server", ca, ca.Issue({.ips = {"127.0.0.1"}}));
    f.token = NewSecret();
    Result<std::string> hash = HashSecret(f.token);
    if (!hash.ok()) std::abort();
    f.auth_file = dir.Sub("auth");
    WriteTestFile(f.auth_file, "conformance " + *hash + " *:read,write,admin\n");
    return f;
  }();
  return files;
}

inline ServerOptions ServerOptionsFor(Mode mode) {
  ServerOptions options;
  options.engine_threads = OnEngineThread(mode) ? 1 : 0;
  if (mode == Mode::kClientTlsAuth) {
    const SecureServerFiles& files = SecureFiles();
    options.tls = TlsOptions{files.tls.cert_file, files.tls.key_file, ""};
    options.auth_file = files.auth_file;
  }
  return options;
}
inline ClientOptions ClientOptionsFor(Mode mode) {
  ClientOptions options;
  if (mode == Mode::kClientTlsAuth) {
    options.tls = ClientTlsOptions{.ca_file = SecureFiles().tls.ca_file};
    options.token = SecureFiles().token;
  }
  return options;
}

class StoreConformanceTest : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override {
    EngineOptions options = ForMode(GetParam(), ConformanceEngineOptions(clock_));
    if (InProcess(GetParam())) {
      Result<std::unique_ptr<Engine>> engine = Engine::Open(dir_.Sub("db"), options);
      ASSERT_OK(engine);
      engine_ = std::move(*engine);
      store_ = engine_.get();
    } else {
      server_ = std::make_unique<TestServer>(ServerOptionsFor(GetParam()), clock_, options, false);
      auto client = server_->Connect(ClientOptionsFor(GetParam()));
      ASSERT_OK(client);
      client_ = std::move(*client);
      store_ = client_.get();
    }
  }
  void TearDown() override {
    client_.reset();
    server_.reset();
  }

  Store& store() { return *store_; }
  int64_t now() const { return clock_->NowMillis(); }

  std::string Insert(std::string_view key, std::string_view status = "PENDING",
                     std::string_view fingerprint = {},
                     std::optional<int64_t> ttl_ms = std::nullopt) {
    return Name(store().Insert({.ns = "pay",
                                .key = key,
                                .status = status,
                                .payload = "body",
                                .fingerprint = fingerprint,
                                .ttl = TtlMs(ttl_ms)}));
  }
  std::string Get(std::string_view key, std::string_view ns = "pay") {
    return Name(store().Get({.ns = ns, .key = key}));
  }

  TempDir dir_;
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<TestServer> server_;
  std::unique_ptr<Client> client_;
  Store* store_ = nullptr;
};

}  // namespace idem::testing
