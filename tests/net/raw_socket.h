// RawSocket: a blocking loopback TCP socket for tests that speak the protocol by hand (bad
// frames, partial frames, connection limits). Every read has a deadline, so a test that waits
// for a server reaction never hangs and never sleeps.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <flatbuffers/flatbuffers.h>

namespace idem::testing {

class RawSocket {
 public:
  enum class ReadResult { kFrame, kClosed, kTimedOut };

  explicit RawSocket(uint16_t port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~RawSocket() {
    if (fd_ >= 0) ::close(fd_);
  }
  RawSocket(const RawSocket&) = delete;
  RawSocket& operator=(const RawSocket&) = delete;

  bool connected() const { return connected_; }
  int fd() const { return fd_; }  // for poll() over many sockets

  // Sends every byte; false if the peer has gone.
  bool Send(const void* data, size_t size) {
    const char* p = static_cast<const char*>(data);
    while (size > 0) {
      ssize_t n = ::send(fd_, p, size, MSG_NOSIGNAL);
      if (n <= 0) return false;
      p += n;
      size -= static_cast<size_t>(n);
    }
    return true;
  }
  bool Send(const std::vector<uint8_t>& bytes) { return Send(bytes.data(), bytes.size()); }
  bool Send(const flatbuffers::DetachedBuffer& frame) { return Send(frame.data(), frame.size()); }
  // A frame: the 4-byte little-endian length, then `body`.
  bool SendFrame(const std::vector<uint8_t>& body) {
    uint32_t n = static_cast<uint32_t>(body.size());
    uint8_t prefix[4] = {uint8_t(n), uint8_t(n >> 8), uint8_t(n >> 16), uint8_t(n >> 24)};
    return Send(prefix, 4) && Send(body);
  }
  void ShutdownWrite() { ::shutdown(fd_, SHUT_WR); }
  // A small receive buffer, so that replies the test does not read stay in the server.
  void ShrinkReceiveBuffer() {
    int bytes = 64 * 1024;
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
  }

  // Reads one frame body into *body, or reports the peer's close, within `timeout`.
  ReadResult ReadFrame(std::vector<uint8_t>* body,
                       std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    uint8_t prefix[4];
    if (ReadResult r = ReadExactly(prefix, 4, deadline); r != ReadResult::kFrame) return r;
    uint32_t n = prefix[0] | prefix[1] << 8 | prefix[2] << 16 | uint32_t{prefix[3]} << 24;
    body->resize(n);
    return ReadExactly(body->data(), n, deadline);
  }

  // True once the peer has closed (EOF or reset), skipping any frames sent before.
  bool WaitClosed(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    std::vector<uint8_t> body;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      ReadResult r = ReadFrame(&body, left);
      if (r == ReadResult::kClosed) return true;
      if (r == ReadResult::kTimedOut) return false;
    }
    return false;
  }

  // Every byte the peer sends until it closes, or until `timeout` (for text protocols: HTTP).
  std::string ReadAll(std::chrono::milliseconds timeout) {
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    uint8_t byte;
    while (ReadExactly(&byte, 1, deadline) == ReadResult::kFrame) out.push_back(char(byte));
    return out;
  }

 private:
  ReadResult ReadExactly(uint8_t* out, size_t size,
                         std::chrono::steady_clock::time_point deadline) {
    size_t got = 0;
    while (got < size) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return ReadResult::kTimedOut;
      pollfd pfd{fd_, POLLIN, 0};
      int ready = ::poll(&pfd, 1, static_cast<int>(left.count()));
      if (ready == 0) return ReadResult::kTimedOut;
      if (ready < 0) return ReadResult::kClosed;
      ssize_t n = ::recv(fd_, out + got, size - got, 0);
      if (n <= 0) return ReadResult::kClosed;
      got += static_cast<size_t>(n);
    }
    return ReadResult::kFrame;
  }

  int fd_ = -1;
  bool connected_ = false;
};

}  // namespace idem::testing
