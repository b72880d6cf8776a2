// The real idemstored binary as a child process: flags, start line, SIGTERM, and crash safety:
// SIGKILL in the middle of a write stream loses no acknowledged write, in sync and in async mode.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>

#include <gtest/gtest.h>

#include "idem/client.h"
#include "support/connect_to.h"
#include "support/server_process.h"
#include "support/temp_dir.h"

namespace idem {
namespace {

using testing::ServerProcess;

using namespace std::chrono_literals;

std::unique_ptr<Client> ConnectTo(const ServerProcess& server) {
  return testing::ConnectTo(server.address());
}

int RunToExit(std::vector<std::string> args, std::string* output, rlim_t open_files_limit = 0) {
  ServerProcess process(IDEMSTORED_PATH);
  process.set_open_files_limit(open_files_limit);
  if (process.Start(args)) return -1;  // it was expected to exit without serving
  *output = process.output();
  return process.WaitExit(20s).value_or(-2);
}

TEST(IdemstoredTest, HelpAndBadFlags) {
  std::string out;
  EXPECT_EQ(0, RunToExit({"--help"}, &out));
  EXPECT_NE(std::string::npos, out.find("--durability")) << out;
  EXPECT_EQ(2, RunToExit({"--no-such-flag"}, &out));
  EXPECT_NE(std::string::npos,
            out.find("idemstored: error (USAGE): unknown flag --no-such-flag (see --help)"))
      << out;
  EXPECT_EQ(2, RunToExit({"--key-format", "payments=min=16,max=8"}, &out));
  EXPECT_NE(std::string::npos, out.find("--key-format payments: key format: max=8 is below min=16"))
      << out;
  testing::TempDir dir;
  EXPECT_EQ(1, RunToExit({"--listen", "0.0.0.0:0", "--data", dir.Sub("db")}, &out));
  EXPECT_NE(std::string::npos, out.find("--allow-remote")) << out;
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("db"))) << "a refused start created the database";
}

TEST(IdemstoredTest, VersionAndPrintedConfigReadBack) {
  std::string out;
  EXPECT_EQ(0, RunToExit({"--version"}, &out));
  EXPECT_EQ(0u, out.find("idemstored ")) << out;

  // `idemstored --print-config > my.conf` and then `idemstored --config my.conf` run with the
  // same configuration.
  testing::TempDir dir;
  std::string printed;
  EXPECT_EQ(0, RunToExit({"--listen", "127.0.0.1:0", "--data", dir.Sub("db"), "--retention",
                          "payments=1d,remember=7d", "--print-config"},
                         &printed));
  EXPECT_NE(std::string::npos, printed.find("retention = [\"payments=1d,remember=7d\"]"))
      << printed;
  const std::string conf = dir.Sub("my.conf");
  std::ofstream(conf) << printed;
  EXPECT_EQ(0, RunToExit({"--config", conf, "--print-config"}, &out));
  EXPECT_EQ(printed, out);
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("db"))) << "--print-config opened the database";

  std::ofstream(conf, std::ios::app) << "max-conections = 10\n";
  EXPECT_EQ(2, RunToExit({"--config", conf}, &out));
  EXPECT_NE(std::string::npos, out.find("unknown key \"max-conections\"")) << out;
}

// A start refused for its address, its port or its flags creates nothing: the checks run before
// the data directory is made.
TEST(IdemstoredTest, ARefusedStartLeavesNoDataDirectory) {
  testing::TempDir dir;
  const std::string data = dir.Sub("x/new");
  std::string out;

  // A port another socket listens on.
  int taken = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(0, ::bind(taken, reinterpret_cast<sockaddr*>(&addr), sizeof addr));
  ASSERT_EQ(0, ::listen(taken, 1));
  socklen_t len = sizeof addr;
  ASSERT_EQ(0, ::getsockname(taken, reinterpret_cast<sockaddr*>(&addr), &len));
  const std::string busy_port = std::to_string(ntohs(addr.sin_port));
  EXPECT_EQ(1, RunToExit({"--listen", "127.0.0.1:" + busy_port, "--data", data}, &out));
  ::close(taken);
  EXPECT_NE(std::string::npos, out.find("127.0.0.1:" + busy_port)) << out;
  EXPECT_NE(std::string::npos, out.find("in use")) << out;
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("x"))) << out;

  // Flags that only make sense together, checked when the engine's options are (before its
  // directory is made): a default TTL longer than the longest allowed.
  EXPECT_EQ(1,
            RunToExit({"--listen", "127.0.0.1:0", "--data", data, "--default-ttl", "40d"}, &out));
  EXPECT_NE(std::string::npos, out.find("default_ttl_ms")) << out;
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("x"))) << out;

  // More connections than the open-files limit can serve, asked for explicitly.
  EXPECT_EQ(2, RunToExit({"--listen", "127.0.0.1:0", "--data", data, "--max-connections", "5000"},
                         &out, 1024));
  EXPECT_NE(std::string::npos, out.find("--max-connections")) << out;
  EXPECT_NE(std::string::npos, out.find("1024")) << out;
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("x"))) << out;
}

TEST(IdemstoredTest, SigtermStopsCleanlyAndDataSurvives) {
  testing::TempDir dir;
  ServerProcess server(IDEMSTORED_PATH);
  ASSERT_TRUE(server.Start({"--listen", "127.0.0.1:0", "--data", dir.Sub("db")}))
      << server.output();
  EXPECT_NE(std::string::npos, server.output().find("durability=sync"));
  {
    auto client = ConnectTo(server);
    ASSERT_TRUE(client);
    ASSERT_OK(client->Insert({.ns = "ns", .key = "kept", .status = "DONE"}));
  }
  server.Signal(SIGTERM);
  EXPECT_EQ(std::optional<int>(0), server.WaitExit(15s));
  EXPECT_NE(std::string::npos, server.output().find("stopped")) << server.output();

  ServerProcess again(IDEMSTORED_PATH);
  ASSERT_TRUE(again.Start({"--listen", "127.0.0.1:0", "--data", dir.Sub("db")})) << again.output();
  auto client = ConnectTo(again);
  ASSERT_TRUE(client);
  Result<OpResult> r = client->Get({.ns = "ns", .key = "kept"});
  ASSERT_OK(r);
  EXPECT_EQ(Outcome::kFound, r->outcome);
}

// One HTTP/1.1 exchange with Connection: close; the whole response as text ("" on failure).
std::string HttpExchange(uint16_t port, const std::string& request) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size())) {
    timeval tv{10, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char buf[4096];
    for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) response.append(buf, n);
  }
  ::close(fd);
  return response;
}

TEST(IdemstoredTest, HttpListenServesTheJsonApiBesideTheBinaryProtocol) {
  testing::TempDir dir;
  ServerProcess server(IDEMSTORED_PATH);
  ASSERT_TRUE(server.Start(
      {"--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--data", dir.Sub("db")}))
      << server.output();
  const std::string output = server.output();
  const size_t at = output.find(" http=127.0.0.1:");
  ASSERT_NE(std::string::npos, at) << output;
  const auto http_port = static_cast<uint16_t>(std::stoi(output.substr(at + 16)));

  const std::string body = R"({"status":"PENDING","payload":"p"})";
  std::string response =
      HttpExchange(http_port,
                   "PUT /v1/records/ns/via-http HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                   "Content-Length: " +
                       std::to_string(body.size()) + "\r\n\r\n" + body);
  EXPECT_EQ(0u, response.find("HTTP/1.1 200 OK")) << response;
  EXPECT_NE(std::string::npos, response.find(R"("outcome":"INSERTED")")) << response;
  response =
      HttpExchange(http_port, "GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(0u, response.find("HTTP/1.1 200 OK")) << response;

  auto client = ConnectTo(server);  // the binary protocol sees what HTTP wrote
  ASSERT_TRUE(client);
  Result<OpResult> r = client->Get({.ns = "ns", .key = "via-http"});
  ASSERT_OK(r);
  EXPECT_EQ(Outcome::kFound, r->outcome);
  server.Signal(SIGTERM);
  EXPECT_EQ(std::optional<int>(0), server.WaitExit(15s));
}

TEST(IdemstoredTest, HttpListenIsLoopbackOnlyWithoutAllowRemote) {
  testing::TempDir dir;
  std::string out;
  EXPECT_EQ(1, RunToExit({"--listen", "127.0.0.1:0", "--http-listen", "0.0.0.0:0", "--data",
                          dir.Sub("db")},
                         &out));
  EXPECT_NE(std::string::npos, out.find("HTTP on non-loopback address 0.0.0.0")) << out;
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("db")));
}

// Several writers insert distinct keys and remember every acknowledged one; the server is
// SIGKILLed mid-stream, restarted on the same directory, and every acknowledged key must be
// there.
void KillMidStreamLosesNothing(const std::string& durability) {
  testing::TempDir dir;
  const std::vector<std::string> args = {"--listen",    "127.0.0.1:0",  "--data",
                                         dir.Sub("db"), "--durability", durability};
  ServerProcess server(IDEMSTORED_PATH);
  ASSERT_TRUE(server.Start(args)) << server.output();

  constexpr int kWriters = 4;
  constexpr int kAcksBeforeKill = 2000;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> acknowledged;  // guarded by mu
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      auto client = ConnectTo(server);
      if (!client) return;
      for (int i = 0;; ++i) {
        const std::string key = "w" + std::to_string(w) + "-" + std::to_string(i);
        const std::string pair = key + "-pair";  // Ops borrow their strings
        // A batch of two, so the atomicity of a request is exercised too.
        std::vector<Op> ops = {
            Op::Insert({.ns = "crash", .key = key, .status = "DONE", .payload = "payload"}),
            Op::Insert({.ns = "crash", .key = pair, .status = "DONE"})};
        std::vector<Result<OpResult>> results;
        if (!client->Apply(ops, &results).ok()) return;  // the server is gone
        for (const auto& r : results) {
          if (!r.ok() || r->outcome != Outcome::kInserted) {
            ADD_FAILURE() << key << ": "
                          << (r.ok() ? OutcomeName(r->outcome) : r.status().ToString());
            return;
          }
        }
        std::lock_guard<std::mutex> lock(mu);
        acknowledged.push_back(key);
        cv.notify_all();
      }
    });
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 60s, [&] { return acknowledged.size() >= kAcksBeforeKill; }));
  }
  server.Signal(SIGKILL);
  for (auto& t : writers) t.join();
  ASSERT_TRUE(server.WaitExit(10s).has_value());

  ServerProcess restarted(IDEMSTORED_PATH);
  ASSERT_TRUE(restarted.Start(args)) << restarted.output();
  auto client = ConnectTo(restarted);
  ASSERT_TRUE(client);
  std::vector<Op> ops;
  std::vector<std::string> keys;
  for (const std::string& key : acknowledged) {
    keys.push_back(key);
    keys.push_back(key + "-pair");
  }
  for (const std::string& key : keys) ops.push_back(Op::Get({.ns = "crash", .key = key}));
  size_t missing = 0;
  for (size_t begin = 0; begin < ops.size(); begin += 1000) {
    std::span<const Op> chunk(ops.data() + begin, std::min<size_t>(1000, ops.size() - begin));
    std::vector<Result<OpResult>> results;
    ASSERT_OK(client->Apply(chunk, &results));
    for (size_t i = 0; i < results.size(); ++i) {
      if (!results[i].ok() || results[i]->outcome != Outcome::kFound) {
        ++missing;
        ADD_FAILURE() << "acknowledged but lost: " << keys[begin + i];
      }
    }
  }
  std::printf("%s: %zu acknowledged requests (%zu keys) before SIGKILL, %zu lost\n",
              durability.c_str(), acknowledged.size(), keys.size(), missing);
  EXPECT_EQ(0u, missing);
}

TEST(IdemstoredTest, KillMidStreamLosesNoAcknowledgedWriteSync) {
  KillMidStreamLosesNothing("sync");
}
TEST(IdemstoredTest, KillMidStreamLosesNoAcknowledgedWriteAsync) {
  KillMidStreamLosesNothing("async");
}

// A small tmpfs mounted for one test and unmounted when it ends, however it ends.
class SmallFileSystem {
 public:
  SmallFileSystem(const std::string& dir, const std::string& size) : dir_(dir) {
    std::filesystem::create_directories(dir_);
    mounted_ = ::mount("tmpfs", dir_.c_str(), "tmpfs", 0, ("size=" + size).c_str()) == 0;
  }
  ~SmallFileSystem() {
    if (mounted_) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }

 private:
  const std::string dir_;
  bool mounted_ = false;
};

// The real server on a 32 MiB file system that its own inserts fill up: it keeps running, answers
// IO_ERROR naming the cause, keeps answering reads, takes writes again once space is freed, and
// loses nothing it acknowledged (Debian's librocksdb, whose assertions aborted it before).
void FullDiskIsAnErrorNotACrash(const std::string& durability) {
  testing::TempDir dir;
  SmallFileSystem small(dir.Sub("mnt"), "32m");
  if (!small.mounted()) GTEST_SKIP() << "cannot mount a tmpfs (needs root)";
  const std::string ballast = dir.Sub("mnt") + "/ballast";
  {  // space to free later
    std::ofstream out(ballast, std::ios::binary);
    out << std::string(6 << 20, 'b');
  }
  const std::vector<std::string> args = {
      "--listen", "127.0.0.1:0", "--data", dir.Sub("mnt") + "/db", "--durability", durability};
  ServerProcess server(IDEMSTORED_PATH);
  ASSERT_TRUE(server.Start(args)) << server.output();
  auto client = ConnectTo(server);
  ASSERT_TRUE(client);
  const std::string payload(256 << 10, 'p');
  std::vector<std::string> acknowledged;
  Status refused;
  for (int i = 0; i < 400 && refused.ok(); ++i) {
    const std::string key = "k" + std::to_string(i);
    Result<OpResult> r =
        client->Insert({.ns = "disk", .key = key, .status = "DONE", .payload = payload});
    if (r.ok()) {
      ASSERT_EQ(Outcome::kInserted, r->outcome);
      acknowledged.push_back(key);
    } else {
      refused = r.status();
    }
  }
  ASSERT_FALSE(refused.ok()) << "the disk never filled up";
  std::printf("%s: %zu inserts acknowledged, then %s\n", durability.c_str(), acknowledged.size(),
              refused.ToString().c_str());
  EXPECT_TRUE(refused.IsIOError()) << refused.ToString();
  ASSERT_FALSE(acknowledged.empty());
  Result<OpResult> read = client->Get({.ns = "disk", .key = acknowledged.front()});
  ASSERT_TRUE(read.ok()) << read.status().ToString() << "\n" << server.output();
  EXPECT_EQ(Outcome::kFound, read->outcome);
  EXPECT_FALSE(server.WaitExit(0ms).has_value()) << server.output();
  // The server's log arrives through a pipe: wait for the lines.
  auto logged = [&](const std::string& text) {
    const auto until = std::chrono::steady_clock::now() + 10s;
    for (; std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(20ms)) {
      if (server.output().find(text) != std::string::npos) return true;
    }
    return false;
  };
  EXPECT_TRUE(logged("writes suspended after")) << server.output();

  // Recovery attempts on the full disk fail (and are logged), without harm.
  EXPECT_TRUE(logged("recovery attempt 2 failed")) << server.output();
  read = client->Get({.ns = "disk", .key = acknowledged.back()});
  ASSERT_OK(read);
  EXPECT_EQ(Outcome::kFound, read->outcome);
  std::filesystem::remove(ballast);
  bool resumed = false;
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  for (int i = 0; !resumed && std::chrono::steady_clock::now() < deadline; ++i) {
    const std::string key = "after-" + std::to_string(i);
    Result<OpResult> r = client->Insert({.ns = "disk", .key = key, .status = "DONE"});
    if (r.ok() && r->outcome == Outcome::kInserted) {
      acknowledged.push_back(key);
      resumed = true;
    } else {
      std::this_thread::sleep_for(50ms);
    }
  }
  EXPECT_TRUE(resumed) << server.output();
  EXPECT_TRUE(logged("writes resumed")) << server.output();
  std::printf("server log:\n%s", server.output().c_str());
  client.reset();
  server.Signal(SIGTERM);
  EXPECT_EQ(std::optional<int>(0), server.WaitExit(15s)) << server.output();

  ServerProcess again(IDEMSTORED_PATH);
  ASSERT_TRUE(again.Start(args)) << again.output();
  client = ConnectTo(again);
  ASSERT_TRUE(client);
  for (const std::string& key : acknowledged) {
    Result<OpResult> r = client->Get({.ns = "disk", .key = key});
    ASSERT_OK(r);
    EXPECT_EQ(Outcome::kFound, r->outcome) << key;
  }
}

TEST(IdemstoredTest, AFullDiskIsAnErrorNotACrashSync) { FullDiskIsAnErrorNotACrash("sync"); }
TEST(IdemstoredTest, AFullDiskIsAnErrorNotACrashAsync) { FullDiskIsAnErrorNotACrash("async"); }

}  // namespace
}  // namespace idem
