// The real idemstored under the open-files limit systemd gives services unless the unit says
// otherwise (1024), flooded with more connections than that: the server must keep descriptors
// for its database and for telling the refused clients BUSY, keep serving its clients during the
// flood, and accept writes after it.
#include <poll.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fd_budget.h"
#include "idem/client.h"
#include "idem/server.h"
#include "protocol_codec.h"
#include "raw_socket.h"
#include "support/connect_to.h"
#include "support/server_process.h"
#include "support/temp_dir.h"

namespace idem {
namespace {

using testing::RawSocket;
using testing::ServerProcess;
using ReadResult = RawSocket::ReadResult;
using namespace std::chrono_literals;

constexpr rlim_t kOpenFilesLimit = 1024;  // systemd's default soft limit for services
constexpr size_t kFlood = 1'200;          // connections: more than the limit

using testing::ConnectTo;

// The number after "name=" in the server's output (its start line), or nullopt.
std::optional<size_t> StartLineNumber(const std::string& output, const std::string& name) {
  size_t at = output.find(" " + name + "=");
  if (at == std::string::npos) return std::nullopt;
  return std::stoul(output.substr(at + name.size() + 2));
}

// Open descriptors of process `pid`.
size_t OpenFds(pid_t pid) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
    ++n;
  }
  return n;
}

// Waits until `want` of `sockets` are readable (have been answered); returns how many are.
size_t WaitReadable(const std::vector<std::unique_ptr<RawSocket>>& sockets, size_t want,
                    std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  size_t readable = 0;
  while (readable < want && std::chrono::steady_clock::now() < deadline) {
    std::vector<pollfd> fds;
    for (const auto& socket : sockets) fds.push_back(pollfd{socket->fd(), POLLIN, 0});
    ::poll(fds.data(), fds.size(), 100);
    readable = 0;
    for (const pollfd& p : fds) readable += p.revents != 0;
  }
  return readable;
}

size_t Count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

// Waits until `want` of `sockets` have each delivered an error frame and been closed by the
// server, closing those on our side as they finish (so refusals do not linger). Returns the
// number that carried BUSY; *other counts closes without a BUSY frame.
size_t CollectBusy(std::vector<std::unique_ptr<RawSocket>>& sockets, size_t want,
                   std::chrono::seconds timeout, size_t* other) {
  size_t busy = 0;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (busy + *other < want && std::chrono::steady_clock::now() < deadline) {
    std::vector<pollfd> fds;
    std::vector<size_t> index;
    for (size_t i = 0; i < sockets.size(); ++i) {
      if (!sockets[i]) continue;
      fds.push_back(pollfd{sockets[i]->fd(), POLLIN, 0});
      index.push_back(i);
    }
    if (::poll(fds.data(), fds.size(), 100) <= 0) continue;
    for (size_t j = 0; j < fds.size(); ++j) {
      if (fds[j].revents == 0) continue;
      std::unique_ptr<RawSocket>& socket = sockets[index[j]];
      std::vector<uint8_t> body;
      const wire::Frame* frame = nullptr;
      if (socket->ReadFrame(&body, 2s) == ReadResult::kFrame) {
        frame = VerifyFrame(body.data(), body.size());
      }
      if (frame != nullptr && frame->id() == 0 && DecodeError(frame->error()).IsBusy() &&
          socket->WaitClosed(2s)) {
        ++busy;
      } else {
        ++*other;
      }
      socket.reset();
    }
  }
  return busy;
}

// With one event-loop thread, and with several (accepting then runs on its own strand).
class IdemstoredFdLimitTest : public ::testing::TestWithParam<int> {};

TEST_P(IdemstoredFdLimitTest, AFloodPastTheOpenFilesLimitGetsBusyAndWritesKeepWorking) {
  // The flood needs more descriptors on this side than the server gets.
  Result<OpenFilesLimit> own = RaiseOpenFilesLimit();
  ASSERT_OK(own);
  if (own->soft < kFlood + 256) {
    GTEST_SKIP() << "this test process may open only " << own->soft << " files";
  }
  testing::TempDir dir;
  // A 1 MiB memtable: the writes during the flood make RocksDB switch to a new WAL and write
  // table files, i.e. open files while every connection slot is taken.
  const std::vector<std::string> args = {
      "--listen",          "127.0.0.1:0", "--data",       dir.Sub("db"),
      "--write-buffer-mb", "1",           "--io-threads", std::to_string(GetParam())};
  ServerProcess server(IDEMSTORED_PATH);
  server.set_open_files_limit(kOpenFilesLimit);
  ASSERT_TRUE(server.Start(args)) << server.output();
  const std::optional<size_t> max_connections = StartLineNumber(server.output(), "max_connections");
  ASSERT_TRUE(max_connections.has_value()) << server.output();

  // RocksDB got the rest of the budget as its max_open_files (its OPTIONS file says what it runs
  // with), so its table cache closes files instead of running out of descriptors.
  const std::optional<size_t> rocksdb_files =
      StartLineNumber(server.output(), "rocksdb_max_open_files");
  ASSERT_TRUE(rocksdb_files.has_value()) << server.output();
  EXPECT_EQ(kOpenFilesLimit, *max_connections + ServerOptions().max_refusing_connections +
                                 kServerOwnFds + *rocksdb_files);
  std::string rocksdb_options;
  for (const auto& entry : std::filesystem::directory_iterator(dir.Sub("db"))) {
    if (entry.path().filename().string().starts_with("OPTIONS-")) {
      std::ifstream in(entry.path());
      rocksdb_options.assign(std::istreambuf_iterator<char>(in), {});
    }
  }
  EXPECT_NE(std::string::npos,
            rocksdb_options.find("max_open_files=" + std::to_string(*rocksdb_files) + "\n"));

  auto writer = ConnectTo(server.address());
  auto reader = ConnectTo(server.address());
  ASSERT_TRUE(writer && reader);
  const std::string payload(10'000, 'p');
  std::vector<std::string> acknowledged;
  auto write = [&](const std::string& key) {
    Result<OpResult> r =
        writer->Insert({.ns = "flood", .key = key, .status = "DONE", .payload = payload});
    if (r.ok() && r->outcome == Outcome::kInserted) {
      acknowledged.push_back(key);
      return true;
    }
    ADD_FAILURE() << "insert " << key << ": " << (r.ok() ? "not inserted" : r.status().ToString());
    return false;
  };
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(write("before-" + std::to_string(i)));

  // The flood: every connection the server cannot serve must be told BUSY (not left unaccepted
  // in the listen queue, not reset).
  std::vector<std::unique_ptr<RawSocket>> flood;
  for (size_t i = 0; i < kFlood; ++i) {
    flood.push_back(std::make_unique<RawSocket>(server.port()));
    ASSERT_TRUE(flood.back()->connected()) << "flood connection " << i;
  }
  const size_t open = kFlood + 2;  // and the writer and the reader
  const size_t refused = open > *max_connections ? open - *max_connections : 0;

  // While refusals are in progress the server takes no more descriptors than its budget gives
  // connections: the rest of the flood waits in the listen queue.
  const size_t refusing = std::min(refused, ServerOptions().max_refusing_connections);
  EXPECT_EQ(refusing, WaitReadable(flood, refusing, 20s));
  const size_t server_fds = OpenFds(server.pid());
  EXPECT_LE(server_fds, *max_connections + refusing + kServerOwnFds)
      << "the flood took descriptors meant for RocksDB";
  size_t closed_without_busy = 0;
  const size_t busy = CollectBusy(flood, refused, 20s, &closed_without_busy);
  EXPECT_EQ(refused, busy) << closed_without_busy
                           << " closed without BUSY; max_connections=" << *max_connections;
  EXPECT_EQ(0u, closed_without_busy);

  // The admitted connections stay open. Writes go on meanwhile: ~3 MB, so ~3 memtable switches,
  // each a new WAL and a new table file.
  bool writes_ok = true;
  for (int i = 0; i < 300 && writes_ok; ++i) writes_ok = write("during-" + std::to_string(i));
  EXPECT_TRUE(writes_ok) << "a write failed during the flood";
  Result<OpResult> read = reader->Get({.ns = "flood", .key = "before-0"});
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(Outcome::kFound, read->outcome);

  // The flood ends: writes succeed, a new client is served (its slot frees asynchronously).
  flood.clear();
  writes_ok = true;
  for (int i = 0; i < 20 && writes_ok; ++i) writes_ok = write("after-" + std::to_string(i));
  EXPECT_TRUE(writes_ok) << "a write failed after the flood";
  std::unique_ptr<Client> late;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!late && std::chrono::steady_clock::now() < deadline) {
    ClientOptions options;
    options.address = server.address();
    auto c = Client::Connect(options);
    if (c.ok()) late = std::move(*c);
  }
  EXPECT_TRUE(late) << "no connection accepted after the flood";
  if (late) {
    Result<OpResult> r = late->Insert({.ns = "flood", .key = "late", .status = "DONE"});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (r.ok()) acknowledged.push_back("late");
  }

  // The operator was told the default was lowered to fit; refusals and failed accepts are
  // logged once per episode, not once per connection or per retry.
  const std::string output = server.output();
  EXPECT_LT(*max_connections, 1024u);
  EXPECT_NE(std::string::npos, output.find("open-files limit is 1024")) << output.substr(0, 2000);
  EXPECT_LE(Count(output, "accept failed"), 1u) << output.substr(0, 2000);
  EXPECT_LE(Count(output, "refusing connections"), 2u) << output.substr(0, 2000);
  std::printf(
      "io_threads=%d, open-files limit %zu, max_connections=%zu: %zu of %zu flood connections "
      "got BUSY; "
      "%zu descriptors open with %zu refusals in progress; %zu acknowledged records\n",
      GetParam(), static_cast<size_t>(kOpenFilesLimit), *max_connections, busy, kFlood, server_fds,
      refusing, acknowledged.size());

  // Every acknowledged record is there, now and after a restart.
  for (const std::string& key : acknowledged) {
    Result<OpResult> r = reader->Get({.ns = "flood", .key = key});
    ASSERT_TRUE(r.ok()) << key << ": " << r.status().ToString();
    EXPECT_EQ(Outcome::kFound, r->outcome) << key;
  }
  writer.reset();
  reader.reset();
  late.reset();
  server.Signal(SIGTERM);
  EXPECT_EQ(std::optional<int>(0), server.WaitExit(15s)) << server.output().substr(0, 4000);

  ServerProcess again(IDEMSTORED_PATH);
  ASSERT_TRUE(again.Start(args)) << again.output();
  auto check = ConnectTo(again.address());
  ASSERT_TRUE(check);
  size_t missing = 0;
  for (const std::string& key : acknowledged) {
    Result<OpResult> r = check->Get({.ns = "flood", .key = key});
    if (!r.ok() || r->outcome != Outcome::kFound) ++missing;
  }
  EXPECT_EQ(0u, missing) << "of " << acknowledged.size() << " acknowledged records";
}

INSTANTIATE_TEST_SUITE_P(IoThreads, IdemstoredFdLimitTest, ::testing::Values(1, 3));

}  // namespace
}  // namespace idem
