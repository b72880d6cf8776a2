// BenchLink: one of the generator's connections, a non-blocking socket with a TLS session over
// it when the run is over TLS. OpenSSL is driven directly (no Asio), so the worker's epoll loop
// stays the same for both: Read and Write behave like read(2) and write(2).
#pragma once

#include <sys/types.h>

#include <openssl/ssl.h>

namespace idem::bench {

class BenchLink {
 public:
  // Owns `fd` and `ssl` (null: plain TCP); `ssl` has completed its handshake on `fd`.
  explicit BenchLink(int fd, SSL* ssl = nullptr) : fd_(fd), ssl_(ssl) {}
  ~BenchLink();
  BenchLink(const BenchLink&) = delete;
  BenchLink& operator=(const BenchLink&) = delete;

  int fd() const { return fd_; }

  // > 0: bytes moved; 0 (Read only): the peer closed; -1: errno says why, EAGAIN when the
  // socket would block. Under TLS a Read may need to write or a Write to read (a key update):
  // that also reports EAGAIN, and the worker's next readiness event retries it.
  ssize_t Read(void* data, size_t size);
  ssize_t Write(const void* data, size_t size);

 private:
  // Maps an SSL_read/SSL_write result to read(2)'s convention.
  ssize_t FromSsl(int result);

  const int fd_;
  SSL* const ssl_;
};

}  // namespace idem::bench
