// TestServer: a ServingEngine in a temp dir on a ManualClock, served in-process on 127.0.0.1 port
// 0. What the network tests talk to, through idem::Client or a RawSocket.
#pragma once

#include <memory>
#include <string>

#include "idem/client.h"
#include "idem/server.h"
#include "idem/serving.h"
#include "support/temp_dir.h"

namespace idem::testing {

inline EngineOptions TestEngineOptions(const std::shared_ptr<ManualClock>& clock) {
  EngineOptions options;
  options.clock = clock;
  options.durability = Durability::kAsync;  // process-crash durable; tests need no fsync
  options.reclaim_interval_ms = 0;
  options.block_cache_bytes = 8u << 20;
  options.write_buffer_bytes = 4u << 20;
  return options;
}

class TestServer {
 public:
  explicit TestServer(ServerOptions server_options = {},
                      std::shared_ptr<ManualClock> clock = std::make_shared<ManualClock>(),
                      EngineOptions engine_options = {}, bool default_engine_options = true)
      : clock_(std::move(clock)) {
    if (default_engine_options) engine_options = TestEngineOptions(clock_);
    if (!engine_options.clock) engine_options.clock = clock_;  // a test may bring its own clock
    auto engine = ServingEngine::Open(dir_.Sub("db"), engine_options);
    EXPECT_TRUE(engine.ok()) << engine.status().ToString();
    engine_ = std::move(*engine);
    server_options.host = "127.0.0.1";
    server_options.port = 0;
    server_options.limits = engine_->options().limits;
    if (!server_options.log) server_options.log = [](const LogRecord&) {};
    server_options_ = std::move(server_options);
    StartServer();
    server_options_.port = server_->port();  // a restart comes back on the same port
  }
  ~TestServer() {
    if (server_) server_->Stop();
  }

  // A server restart as a connected client sees it: the same engine and port, new connections.
  void StopServer() {
    server_->Stop();
    server_.reset();
  }
  void StartServer() {
    auto server = Server::Start(engine_.get(), server_options_);
    EXPECT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
  }

  ServingEngine& engine() { return *engine_; }
  Server& server() { return *server_; }
  ManualClock& clock() { return *clock_; }
  uint16_t port() const { return server_options_.port; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port()); }

  Result<std::unique_ptr<Client>> Connect(ClientOptions options = {}) const {
    options.address = address();
    return Client::Connect(options);
  }

 private:
  TempDir dir_;
  ServerOptions server_options_;
  std::shared_ptr<ManualClock> clock_;
  std::unique_ptr<ServingEngine> engine_;
  std::unique_ptr<Server> server_;
};

}  // namespace idem::testing
