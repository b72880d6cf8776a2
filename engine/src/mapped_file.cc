#include "mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csetjmp>
#include <csignal>
#include <cstring>
#include <mutex>

namespace idem {
namespace {

// Where the copy running on this thread returns to if it faults; null while none runs.
thread_local sigjmp_buf* t_copy_return = nullptr;
struct sigaction g_previous_bus_action;

void OnBus(int signal, siginfo_t* info, void* context) {
  if (sigjmp_buf* copy = t_copy_return) {
    t_copy_return = nullptr;
    siglongjmp(*copy, 1);
  }
  // Not a copy's: as if this handler were not here.
  const struct sigaction& previous = g_previous_bus_action;
  if ((previous.sa_flags & SA_SIGINFO) != 0 && previous.sa_sigaction != nullptr) {
    previous.sa_sigaction(signal, info, context);
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN &&
             previous.sa_handler != nullptr) {
    previous.sa_handler(signal);
  } else {
    // The default action, now: a fault would otherwise fault again on return, for ever.
    struct sigaction fallback = {};
    fallback.sa_handler = SIG_DFL;
    sigemptyset(&fallback.sa_mask);
    sigaction(signal, &fallback, nullptr);
    raise(signal);
  }
}

Status InstallBusHandler() {
  static std::once_flag once;
  static int error = 0;
  std::call_once(once, [] {
    struct sigaction action = {};
    action.sa_sigaction = OnBus;
    sigemptyset(&action.sa_mask);
    // SA_NODEFER: the copy leaves the handler by siglongjmp without restoring the signal mask
    // (saving it would cost a system call per copy), so SIGBUS must not be blocked in it.
    action.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
    if (sigaction(SIGBUS, &action, &g_previous_bus_action) != 0) error = errno;
  });
  if (error != 0) {
    return Status::IOError(std::string("cannot install the SIGBUS handler mapped reads need: ") +
                           std::strerror(error));
  }
  return Status::Ok();
}

// False if a page of `from` faulted. Nothing here may need a destructor: a fault leaves by
// siglongjmp.
bool CopyGuarded(char* to, const char* from, size_t bytes) {
  sigjmp_buf copy_return;
  if (sigsetjmp(copy_return, /*savemask=*/0) != 0) return false;
  t_copy_return = &copy_return;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  std::memcpy(to, from, bytes);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  t_copy_return = nullptr;
  return true;
}

}  // namespace

Result<std::shared_ptr<const MappedFile>> MappedFile::Map(const std::string& path,
                                                          uint64_t min_length) {
  if (Status s = InstallBusHandler(); !s.ok()) return s;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IOError("cannot open " + path + " to map it: " + std::strerror(errno));
  struct stat st = {};
  if (::fstat(fd, &st) != 0) {
    const int error = errno;
    ::close(fd);
    return Status::IOError("cannot size " + path + ": " + std::strerror(error));
  }
  const uint64_t length = std::max<uint64_t>(min_length, static_cast<uint64_t>(st.st_size));
  void* base = length == 0 ? nullptr : ::mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, 0);
  const int error = errno;
  ::close(fd);
  if (base == MAP_FAILED) {
    return Status::IOError("cannot map " + path + ": " + std::strerror(error));
  }
  // No MADV_RANDOM, though records are read at random: it would also stop readahead for the
  // copy of a whole segment (a move), which then read a cold 64 MiB file page fault by page
  // fault, 2.4-3.1 s against 0.11-0.16 s (measured here). The kernel's own read-around stops
  // after enough faults that missed anyway.
  return std::shared_ptr<const MappedFile>(
      new MappedFile(static_cast<const char*>(base), length, path));
}

MappedFile::~MappedFile() {
  if (base_ != nullptr) ::munmap(const_cast<char*>(base_), length_);
}

Status MappedFile::CopyOut(uint64_t offset, size_t bytes, std::string* out) const {
  if (offset > length_ || bytes > length_ - offset) {
    out->clear();
    return Status::InvalidArgument("reading " + std::to_string(bytes) + " bytes at offset " +
                                   std::to_string(offset) + " of " + path_ + ", mapped at " +
                                   std::to_string(length_) + " bytes");
  }
  out->resize(bytes);  // allocated before the guarded copy, which may leave by a jump
  if (bytes == 0) return Status::Ok();
  if (CopyGuarded(out->data(), base_ + offset, bytes)) return Status::Ok();
  out->clear();
  return Status::IOError("reading " + path_ + " at offset " + std::to_string(offset) +
                         ": the page could not be read (the file was truncated, or the disk "
                         "failed)");
}

}  // namespace idem
