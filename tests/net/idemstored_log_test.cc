// The real idemstored's log on stderr, in both formats (--log-format text|json): a start line,
// a stop line, one line per error condition, nothing per request.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "idem/client.h"
#include "support/server_process.h"
#include "support/temp_dir.h"

namespace idem {
namespace {

using testing::ServerProcess;
using namespace std::chrono_literals;

// RFC 3339, UTC, milliseconds.
constexpr const char* kTimestamp = R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)";

std::vector<std::string> Lines(const std::string& output) {
  std::vector<std::string> lines;
  size_t begin = 0;
  while (begin < output.size()) {
    size_t end = output.find('\n', begin);
    if (end == std::string::npos) end = output.size();
    lines.push_back(output.substr(begin, end - begin));
    begin = end + 1;
  }
  return lines;
}

// Every line of `output` as a JSON object; a line that is not one fails the test.
std::vector<nlohmann::json> JsonLines(const std::string& output) {
  std::vector<nlohmann::json> records;
  for (const std::string& line : Lines(output)) {
    nlohmann::json record = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    EXPECT_TRUE(record.is_object()) << "not a JSON object: " << line;
    if (record.is_object()) records.push_back(std::move(record));
  }
  return records;
}

std::vector<nlohmann::json> WithEvent(const std::vector<nlohmann::json>& records,
                                      const std::string& event) {
  std::vector<nlohmann::json> out;
  for (const nlohmann::json& r : records) {
    if (r.value("event", "") == event) out.push_back(r);
  }
  return out;
}

// Waits (polling the captured output, at most 10 s) until it holds `text`.
bool WaitForOutput(ServerProcess& server, const std::string& text) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (server.output().find(text) == std::string::npos) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(10ms);  // polling a child's output
  }
  return true;
}

// A few requests, which must not be logged.
void MakeRequests(const ServerProcess& server) {
  ClientOptions options;
  options.address = server.address();
  auto client = Client::Connect(options);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  for (int i = 0; i < 10; ++i) {
    ASSERT_OK((*client)->Insert({.ns = "ns", .key = "k" + std::to_string(i), .status = "DONE"}));
  }
}

// Connects, sends a frame whose length prefix is 0 (a malformed frame), and waits until the
// server closes the connection.
void SendMalformedFrame(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(0, ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr));
  const char zero_length[4] = {0, 0, 0, 0};
  ASSERT_EQ(4, ::send(fd, zero_length, 4, MSG_NOSIGNAL));
  char buf[512];
  pollfd pfd{fd, POLLIN, 0};
  while (::poll(&pfd, 1, 5000) > 0 && ::recv(fd, buf, sizeof buf, 0) > 0) {
  }
  ::close(fd);
}

// Starts `server` on `data` with `more_args`, makes requests, stops it with SIGTERM.
void ServeRequestsAndStop(ServerProcess& server, const std::string& data,
                          std::vector<std::string> more_args) {
  std::vector<std::string> args = {"--listen", "127.0.0.1:0", "--data", data};
  args.insert(args.end(), more_args.begin(), more_args.end());
  ASSERT_TRUE(server.Start(args)) << server.output();
  MakeRequests(server);
  server.Signal(SIGTERM);
  ASSERT_EQ(std::optional<int>(0), server.WaitExit(15s)) << server.output();
}

TEST(IdemstoredLogTest, TextStartAndStopLinesAndNothingPerRequest) {
  testing::TempDir dir;
  ServerProcess server(IDEMSTORED_PATH);
  ASSERT_NO_FATAL_FAILURE(ServeRequestsAndStop(server, dir.Sub("db"), {}));

  const std::vector<std::string> lines = Lines(server.output());
  ASSERT_EQ(4u, lines.size()) << server.output();
  const std::string ts = kTimestamp;
  EXPECT_TRUE(std::regex_match(
      lines[0], std::regex(ts + " info  event=opening opening database \\S+; clients are "
                                "answered BUSY until it is open data=\\S+")))
      << lines[0];
  EXPECT_TRUE(std::regex_match(
      lines[1],
      std::regex(ts + " info  event=start idemstored \\S+: listening on " + server.address() +
                 " http=off data=\\S+ durability=sync io_threads=1 engine_threads=0 .* "
                 "open_ms=[0-9]+")))
      << lines[1];
  EXPECT_TRUE(std::regex_match(
      lines[2],
      std::regex(ts + " info  event=stop_requested received SIGTERM; stopping signal=SIGTERM")))
      << lines[2];
  EXPECT_TRUE(std::regex_match(lines[3], std::regex(ts + " info  event=stop idemstored \\S+: "
                                                         "stopped; database .* closed data=.*")))
      << lines[3];
}

// A stop asked for while the database opens ends the process there with a stop line and exit
// status 0 (or, should the open end first, stops it without serving). Before, SIGTERM's default
// action ended it, with no line and exit status 143.
TEST(IdemstoredLogTest, ASignalWhileTheDatabaseOpensStopsItOnceOpenWithoutServing) {
  testing::TempDir dir;
  ServerProcess server(IDEMSTORED_PATH);
  ASSERT_TRUE(server.Launch({"--listen", "127.0.0.1:0", "--data", dir.Sub("db")}));
  ASSERT_TRUE(server.WaitForOutput("event=opening", 20s)) << server.output();
  // Stopped while it opens (the open takes tens of milliseconds), the signal is delivered the
  // moment it goes on: still opening.
  server.Signal(SIGSTOP);
  server.Signal(SIGTERM);
  server.Signal(SIGCONT);
  ASSERT_EQ(std::optional<int>(0), server.WaitExit(20s)) << server.output();
  server.WaitForOutput("(all of it)", 5s);

  const std::vector<std::string> lines = Lines(server.output());
  ASSERT_EQ(3u, lines.size()) << server.output();
  EXPECT_NE(std::string::npos, lines[0].find("event=opening")) << lines[0];
  EXPECT_TRUE(std::regex_match(
      lines[1], std::regex(kTimestamp + std::string(" info  event=stop_requested received SIGTERM; "
                                                    "stopping signal=SIGTERM"))))
      << lines[1];
  EXPECT_TRUE(std::regex_match(
      lines[2], std::regex(kTimestamp + std::string(" info  event=stop idemstored \\S+: stopped "
                                                    "(while opening|before serving); database "
                                                    ".* (left for the next start to open|closed) "
                                                    "data=.*"))))
      << lines[2];
}

TEST(IdemstoredLogTest, JsonStartAndStopLinesAndNothingPerRequest) {
  testing::TempDir dir;
  ServerProcess server(IDEMSTORED_PATH);
  ASSERT_NO_FATAL_FAILURE(ServeRequestsAndStop(server, dir.Sub("db"), {"--log-format", "json"}));

  const std::vector<nlohmann::json> records = JsonLines(server.output());
  ASSERT_EQ(4u, records.size()) << server.output();
  const std::regex ts(kTimestamp);
  for (const nlohmann::json& r : records) {
    EXPECT_TRUE(std::regex_match(r.value("ts", ""), ts)) << r;
    EXPECT_EQ("info", r.value("level", "")) << r;
  }
  EXPECT_EQ("opening", records[0].value("event", ""));
  EXPECT_EQ(dir.Sub("db"), records[0].value("data", ""));
  const nlohmann::json& start = records[1];
  EXPECT_EQ("start", start.value("event", ""));
  ASSERT_TRUE(start.contains("open_ms") && start["open_ms"].is_number_integer()) << start;
  EXPECT_NE(std::string::npos, start.value("msg", "").find("listening on " + server.address()))
      << start;
  EXPECT_EQ("off", start.value("http", ""));
  EXPECT_EQ(dir.Sub("db"), start.value("data", ""));
  EXPECT_EQ("sync", start.value("durability", ""));
  ASSERT_TRUE(start.contains("io_threads") && start["io_threads"].is_number_integer()) << start;
  EXPECT_EQ(1, start["io_threads"].get<int>());
  EXPECT_TRUE(start["max_connections"].is_number_integer()) << start;
  EXPECT_EQ("stop_requested", records[2].value("event", ""));
  EXPECT_EQ("SIGTERM", records[2].value("signal", ""));
  EXPECT_EQ("stop", records[3].value("event", ""));
  EXPECT_EQ(dir.Sub("db"), records[3].value("data", ""));
}

// A peer's malformed frame is an error condition: one warn line, with the peer. A second one
// within the rate limit's interval is counted, and the count is logged at the stop.
TEST(IdemstoredLogTest, AMalformedFrameIsOneJsonLineAndRepeatsAreCounted) {
  testing::TempDir dir;
  ServerProcess server(IDEMSTORED_PATH);
  ASSERT_TRUE(
      server.Start({"--listen", "127.0.0.1:0", "--data", dir.Sub("db"), "--log-format", "json"}))
      << server.output();
  SendMalformedFrame(server.port());
  ASSERT_TRUE(WaitForOutput(server, "\"event\":\"bad_frame\"")) << server.output();
  SendMalformedFrame(server.port());  // returns once the server has closed it: logged or not

  std::vector<nlohmann::json> bad = WithEvent(JsonLines(server.output()), "bad_frame");
  ASSERT_EQ(1u, bad.size()) << server.output();
  EXPECT_EQ("warn", bad[0].value("level", ""));
  EXPECT_EQ("INVALID_ARGUMENT", bad[0].value("code", ""));
  EXPECT_NE(std::string::npos, bad[0].value("peer", "").find("127.0.0.1:")) << bad[0];
  EXPECT_NE(std::string::npos, bad[0].value("msg", "").find("frame length 0")) << bad[0];
  EXPECT_FALSE(bad[0].contains("suppressed")) << bad[0];

  server.Signal(SIGTERM);
  ASSERT_EQ(std::optional<int>(0), server.WaitExit(15s)) << server.output();
  bad = WithEvent(JsonLines(server.output()), "bad_frame");
  ASSERT_EQ(2u, bad.size()) << server.output();
  EXPECT_EQ(1, bad[1].value("suppressed", 0)) << bad[1];
  EXPECT_EQ("warn", bad[1].value("level", ""));
}

TEST(IdemstoredLogTest, ARefusedStartIsOneErrorLine) {
  testing::TempDir dir;
  ServerProcess server(IDEMSTORED_PATH);
  ASSERT_FALSE(
      server.Start({"--listen", "0.0.0.0:0", "--data", dir.Sub("db"), "--log-format", "json"}));
  ASSERT_EQ(std::optional<int>(1), server.WaitExit(15s)) << server.output();
  const std::vector<nlohmann::json> records = JsonLines(server.output());
  ASSERT_EQ(1u, records.size()) << server.output();
  EXPECT_EQ("error", records[0].value("level", ""));
  EXPECT_EQ("start_failed", records[0].value("event", ""));
  EXPECT_NE(std::string::npos, records[0].value("msg", "").find("--allow-remote")) << records[0];
}

TEST(IdemstoredLogTest, ABadLogFormatIsRefused) {
  ServerProcess server(IDEMSTORED_PATH);
  ASSERT_FALSE(server.Start({"--log-format", "xml"}));
  EXPECT_EQ(std::optional<int>(2), server.WaitExit(15s));
  EXPECT_NE(std::string::npos, server.output().find("--log-format: expected text or json"))
      << server.output();
}

}  // namespace
}  // namespace idem
