// WriteHealth: whether the engine may write, after the disk failed a write or a sync, and how it
// gets back to writing without a restart.
//
// The problem. RocksDB answers a failed WAL append or sync with a "background error" that stops
// every later write. Three things then go wrong unless the engine steps in:
// - Debian's librocksdb is built with assertions on. Once an append to a WAL file has failed,
//   the next SyncWAL on it asserts (SIGABRT): a full disk took the server down.
// - RocksDB classes an EIO from fdatasync as a *fatal* error: DB::Resume refuses it, so one failed
//   fsync stopped writes (and, through the sync a read may need, reads) until a restart, and
//   nothing was logged.
// - After a failed fsync the kernel may already have dropped the WAL pages it could not write
//   (PostgreSQL's "fsyncgate"): a later successful fsync of the same file proves nothing about
//   them, so the writes they held are not durable, however they are synced again.
//
// The policy (docs/design.md, failure model):
// - At the first failed WAL write or sync, or background error that stops writes, the engine is
//   *suspended*: writes are answered IOError("writes suspended after <cause>; recovering"),
//   reads go on. The transition is logged (EngineOptions::log).
// - While suspended the engine never calls SyncWAL. A failing WAL append first waits for the
//   SyncWALs in flight (the gate: EnterSync/ExitSync, WalAppendFailed), so no SyncWAL can ever
//   meet a WAL file whose append failed.
// - RocksDB's fatal class for I/O errors is lowered to its hard class (still "writes stopped"),
//   and its own automatic recovery is turned off: the engine recovers, one way for every fault.
// - Recovery: a thread calls `recover` (the engine's DB::Resume + Flush) with backoff, from
//   kFirstRetryMs doubling to kMaxRetryMs, until it succeeds (a fault that returns within 10 s
//   of a recovery starts from the backoff reached before). Resume writes every memtable to new
//   table files and syncs them, so the writes the failed WAL held are durable again from other
//   pages than the ones the failed fsync may have lost; only then are writes taken again.
// - A recovery that does not end. RocksDB 7.8's DB::Resume flushes the memtables and waits for
//   the flush; if a flush job that was scheduled before writes stopped ran after they stopped,
//   it gave up without taking its request off the flush queue, and Resume's flush is then never
//   scheduled: Resume waits for ever (db_impl_compaction_flush.cc, BackgroundFlush; RocksDB's
//   public API has no call that puts the request back). A watchdog times each recovery attempt: one
//   that has not returned after `stuck_after` is logged, with what to do (restart), and refused
//   writes say so; reads go on. If it returns after all, recovery goes on as before. Closing the
//   engine ends the wait (rocks_engine.cc). `recover` itself must not leave a flush queued when
//   it returns OK (RocksEngine::FlushAndWait): a sync failing before that flush ran would strand
//   it in the same way.
// - Corruption and data loss (RocksDB's kUnrecoverableError, or a corruption a background job
//   found) are not retried: no Resume repairs them. Writes stop for good, reads go on, and the
//   refusal and the log say that a restart is needed (the start checks the data directory), and
//   `idemctl --data DIR repair` if the start is then refused.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include <rocksdb/listener.h>

#include "idem/log.h"
#include "idem/status.h"

namespace idem {

class WriteHealth final : public rocksdb::EventListener {
 public:
  static constexpr int64_t kFirstRetryMs = 50;
  static constexpr int64_t kMaxRetryMs = 2000;
  // What the operator does after an unrecoverable error (StopForGood).
  static constexpr const char* kRestart =
      "no retry repairs this: restart the server (if the start is then refused, run `idemctl "
      "--data DIR repair`)";

  // `log`: EngineOptions::log (null: stderr). `stuck_after`:
  // EngineOptions::recovery_stuck_after_ms.
  explicit WriteHealth(LogSink log,
                       std::chrono::milliseconds stuck_after = std::chrono::seconds(30));
  ~WriteHealth() override;  // StopRecovery()

  bool suspended() const { return suspended_.load(std::memory_order_acquire); }
  // What a refused write (or a sync refused while suspended) is answered with.
  Status Refusal() const;
  // Suspends writes after `cause` (the first cause of a suspension is the one reported).
  void Suspend(const std::string& cause);
  // Stops writes until a restart: no recovery is attempted (or the one in progress gives up).
  void StopForGood(const std::string& cause);

  // The gate. SyncWAL runs between EnterSync() (false: suspended, do not sync) and ExitSync().
  bool EnterSync();
  void ExitSync();
  // The file system calls this when an append to a WAL file failed, before returning the error
  // to RocksDB: suspends, then waits until no SyncWAL is in flight.
  void WalAppendFailed(const std::string& error);

  // Starts the recovery thread: while suspended it calls `recover` until that returns OK, then
  // takes writes again. `recover` runs on that thread only. Also starts the watchdog, which
  // reports a call of `recover` that has not returned after `stuck_after`.
  void StartRecovery(std::function<Status()> recover);
  void StopRecovery();  // idempotent; joins the threads

  void Log(const LogRecord& record) const;

  // rocksdb::EventListener
  void OnBackgroundError(rocksdb::BackgroundErrorReason reason, rocksdb::Status* error) override;
  void OnErrorRecoveryBegin(rocksdb::BackgroundErrorReason reason, rocksdb::Status error,
                            bool* auto_recovery) override;

 private:
  void RecoveryLoop();
  void WatchdogLoop();
  std::string StuckText() const;  // mu_ held

  const LogSink log_;
  const std::chrono::milliseconds stuck_after_;
  std::atomic<bool> suspended_{false};

  mutable std::mutex mu_;
  std::condition_variable cv_;  // suspended, stopping, or no more syncs in flight
  std::string cause_;           // guarded by mu_; why writes are suspended
  int64_t attempts_ = 0;        // guarded by mu_; recovery attempts in this suspension
  uint64_t failures_ = 0;       // guarded by mu_; Suspend calls, suspended already or not
  int syncs_in_flight_ = 0;     // guarded by mu_
  bool stopping_ = false;       // guarded by mu_
  bool unrecoverable_ = false;  // guarded by mu_; StopForGood: no recovery until a restart
  bool recovering_ = false;     // guarded by mu_; `recover` is running
  std::chrono::steady_clock::time_point recover_began_;  // guarded by mu_; its latest call
  bool stuck_ = false;  // guarded by mu_; the running call of `recover` outlived stuck_after_
  // Recovery thread only: when writes last resumed, and the backoff it had reached.
  bool resumed_before_ = false;
  std::chrono::steady_clock::time_point last_resumed_;
  int64_t last_delay_ms_ = kFirstRetryMs;
  std::function<Status()> recover_;
  std::thread recovery_;
  std::thread watchdog_;
};

}  // namespace idem
