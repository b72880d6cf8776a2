#include "write_health.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "operator_log.h"

namespace idem {
namespace {

std::string_view ReasonName(rocksdb::BackgroundErrorReason reason) {
  switch (reason) {
    case rocksdb::BackgroundErrorReason::kFlush:
    case rocksdb::BackgroundErrorReason::kFlushNoWAL:
      return "a flush";
    case rocksdb::BackgroundErrorReason::kCompaction:
      return "a compaction";
    case rocksdb::BackgroundErrorReason::kWriteCallback:
      return "a WAL write or sync";
    case rocksdb::BackgroundErrorReason::kMemTable:
      return "switching to a new WAL";
    case rocksdb::BackgroundErrorReason::kManifestWrite:
    case rocksdb::BackgroundErrorReason::kManifestWriteNoWAL:
      return "a MANIFEST write";
  }
  return "a background write";
}

}  // namespace

WriteHealth::WriteHealth(LogSink log, std::chrono::milliseconds stuck_after)
    : log_(std::move(log)), stuck_after_(stuck_after) {}

WriteHealth::~WriteHealth() { StopRecovery(); }

void WriteHealth::Log(const LogRecord& record) const { LogToOperator(log_, record); }

Status WriteHealth::Refusal() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (unrecoverable_) return Status::IOError("writes stopped after " + cause_ + "; " + kRestart);
  if (stuck_) return Status::IOError("writes suspended after " + cause_ + "; " + StuckText());
  return Status::IOError("writes suspended after " + cause_ + "; recovering (" +
                         std::to_string(attempts_) + " attempts so far)");
}

void WriteHealth::Suspend(const std::string& cause) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++failures_;
    if (suspended_.load(std::memory_order_relaxed)) return;
    cause_ = cause;
    attempts_ = 0;
    suspended_.store(true, std::memory_order_release);
  }
  cv_.notify_all();
  Log(LogRecord(LogLevel::kError, "writes_suspended",
                "writes suspended after " + cause + "; reads go on; recovering by itself"));
}

void WriteHealth::StopForGood(const std::string& cause) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++failures_;
    if (unrecoverable_) return;
    // This cause replaces a recoverable one: it is the one the operator must act on.
    cause_ = cause;
    unrecoverable_ = true;
    suspended_.store(true, std::memory_order_release);
  }
  cv_.notify_all();  // a recovery in progress gives up
  Log(LogRecord(LogLevel::kError, "writes_stopped",
                "writes stopped after " + cause + "; reads go on; " + kRestart));
}

bool WriteHealth::EnterSync() {
  std::lock_guard<std::mutex> lock(mu_);
  if (suspended_.load(std::memory_order_relaxed)) return false;
  ++syncs_in_flight_;
  return true;
}

void WriteHealth::ExitSync() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    --syncs_in_flight_;
  }
  cv_.notify_all();
}

void WriteHealth::WalAppendFailed(const std::string& error) {
  Suspend("a failed WAL write (" + error + ")");
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return syncs_in_flight_ == 0; });
}

void WriteHealth::OnBackgroundError(rocksdb::BackgroundErrorReason reason, rocksdb::Status* error) {
  if (error->ok()) return;
  // A fatal I/O error would stop writes until a restart (DB::Resume refuses it). Lowered to a
  // hard error, writes still stop, and the engine's recovery can resume them: a failed write or
  // sync is recovered from the same way whatever the file (new files, memtables flushed).
  // Corruption and data loss (kUnrecoverableError) keep their class: no retry repairs them, so
  // none is made (DB::Resume would refuse them forever); writes stay stopped until a restart.
  if (error->IsIOError() && error->severity() == rocksdb::Status::Severity::kFatalError) {
    *error = rocksdb::Status(*error, rocksdb::Status::Severity::kHardError);
  }
  const std::string cause =
      std::string(ReasonName(reason)) + " failing (" + error->ToString() + ")";
  if (error->severity() >= rocksdb::Status::Severity::kUnrecoverableError ||
      (error->IsCorruption() && error->severity() >= rocksdb::Status::Severity::kHardError)) {
    StopForGood(cause);
  } else if (error->severity() >= rocksdb::Status::Severity::kHardError) {
    Suspend(cause);
  } else {
    Log(LogRecord(LogLevel::kWarn, "background_error", "background error, writes go on: " + cause));
  }
}

void WriteHealth::OnErrorRecoveryBegin(rocksdb::BackgroundErrorReason, rocksdb::Status,
                                       bool* auto_recovery) {
  *auto_recovery = false;  // the engine recovers (RecoveryLoop), one way for every fault
}

std::string WriteHealth::StuckText() const {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - recover_began_)
                      .count();
  return "recovery stuck: RocksDB's DB::Resume has not returned for " + std::to_string(ms) +
         " ms (RocksDB 7.8 can wait for ever for a flush it dropped while writes were stopped); "
         "reads go on; to take writes again, restart the server (if the start is then refused, "
         "run `idemctl --data DIR repair`)";
}

void WriteHealth::StartRecovery(std::function<Status()> recover) {
  recover_ = std::move(recover);
  recovery_ = std::thread([this] { RecoveryLoop(); });
  watchdog_ = std::thread([this] { WatchdogLoop(); });
}

void WriteHealth::StopRecovery() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (recovery_.joinable()) recovery_.join();
  if (watchdog_.joinable()) watchdog_.join();
}

void WriteHealth::WatchdogLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stopping_ || (recovering_ && !stuck_); });
    if (stopping_) return;
    const auto began = recover_began_;
    const bool returned = cv_.wait_until(lock, began + stuck_after_, [&] {
      return stopping_ || !recovering_ || recover_began_ != began;
    });
    if (stopping_) return;
    if (returned) continue;
    stuck_ = true;  // until that call returns (RecoveryLoop)
    const LogRecord record = LogRecord(LogLevel::kError, "recovery_stuck",
                                       "writes suspended after " + cause_ + "; " + StuckText() +
                                           " (recovery attempt " + std::to_string(attempts_) + ")")
                                 .With("attempt", attempts_);
    lock.unlock();
    Log(record);
    lock.lock();
  }
}

void WriteHealth::RecoveryLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [this] {
      return stopping_ || (suspended_.load(std::memory_order_relaxed) && !unrecoverable_);
    });
    if (stopping_) return;
    const auto began = std::chrono::steady_clock::now();
    // A fault that comes back soon after a recovery (a burst of EIO, a disk that fills again)
    // keeps the backoff it had reached, instead of flushing a tiny memtable every 50 ms.
    int64_t delay_ms = resumed_before_ && began - last_resumed_ < std::chrono::seconds(10)
                           ? std::min(last_delay_ms_ * 2, kMaxRetryMs)
                           : kFirstRetryMs;
    while (!stopping_ && !unrecoverable_) {
      cv_.wait_for(lock, std::chrono::milliseconds(delay_ms),
                   [this] { return stopping_ || unrecoverable_; });
      if (stopping_ || unrecoverable_) break;
      const int64_t attempt = ++attempts_;
      const uint64_t failures = failures_;
      recovering_ = true;
      recover_began_ = std::chrono::steady_clock::now();
      lock.unlock();
      cv_.notify_all();  // the watchdog times the call
      Status s = recover_();
      lock.lock();
      recovering_ = false;
      if (stuck_) {
        stuck_ = false;
        const LogRecord record = LogRecord(LogLevel::kInfo, "recovery_returned",
                                           "recovery attempt " + std::to_string(attempt) +
                                               ": RocksDB's DB::Resume returned after all (" +
                                               s.ToString() + "); recovery goes on")
                                     .With("attempt", attempt);
        lock.unlock();
        Log(record);
        lock.lock();
      }
      cv_.notify_all();
      // A failure reported while recovering may postdate what recover_ made durable: retry.
      if (s.ok() && failures_ != failures) s = Status::IOError("another failure during recovery");
      if (s.ok()) break;
      delay_ms = std::min(delay_ms * 2, kMaxRetryMs);
      if ((attempt & (attempt - 1)) == 0) {  // attempts 1, 2, 4, 8...: the log stays readable
        const LogRecord record =
            LogRecord(LogLevel::kWarn, "recovery_failed",
                      "recovery attempt " + std::to_string(attempt) + " failed (" + s.ToString() +
                          "); writes stay suspended after " + cause_ + "; next attempt in " +
                          std::to_string(delay_ms) + " ms")
                .With("attempt", attempt)
                .With("next_attempt_ms", delay_ms);
        lock.unlock();
        Log(record);
        lock.lock();
      }
    }
    if (stopping_) return;
    if (unrecoverable_) continue;  // waits for StopRecovery: writes stay stopped
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - began)
                        .count();
    const LogRecord record =
        LogRecord(LogLevel::kInfo, "writes_resumed",
                  "writes resumed after " + std::to_string(attempts_) + " recovery attempts (" +
                      std::to_string(ms) + " ms); cause was " + cause_ +
                      "; memtables flushed to synced table files")
            .With("attempts", attempts_)
            .With("duration_ms", ms);
    resumed_before_ = true;
    last_resumed_ = std::chrono::steady_clock::now();
    last_delay_ms_ = delay_ms;
    suspended_.store(false, std::memory_order_release);
    lock.unlock();
    Log(record);
    lock.lock();
  }
}

}  // namespace idem
