#include "bench_link.h"

#include <unistd.h>

#include <cerrno>

#include <openssl/err.h>

namespace idem::bench {

BenchLink::~BenchLink() {
  if (ssl_ != nullptr) SSL_free(ssl_);
  ::close(fd_);
}

ssize_t BenchLink::Read(void* data, size_t size) {
  if (ssl_ == nullptr) return ::read(fd_, data, size);
  return FromSsl(SSL_read(ssl_, data, static_cast<int>(size)));
}

ssize_t BenchLink::Write(const void* data, size_t size) {
  if (ssl_ == nullptr) return ::write(fd_, data, size);
  return FromSsl(SSL_write(ssl_, data, static_cast<int>(size)));
}

ssize_t BenchLink::FromSsl(int result) {
  if (result > 0) return result;
  switch (SSL_get_error(ssl_, result)) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
      errno = EAGAIN;
      return -1;
    case SSL_ERROR_ZERO_RETURN:  // close_notify
      return 0;
    case SSL_ERROR_SYSCALL:
      ERR_clear_error();
      if (errno == 0) return 0;  // closed without close_notify
      return -1;
    default:
      ERR_clear_error();
      errno = EPROTO;
      return -1;
  }
}

}  // namespace idem::bench
