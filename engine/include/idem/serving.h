// ServingEngine: the Engine as a server (idem::Server, idemstored) uses it. A program that embeds
// the engine does not need this header: Engine::Open and idem/engine.h are its whole API.
//
// The problem: a server applies many clients' requests as one batch on few threads (the event
// loop, or a few engine threads). Engine::Apply would park such a thread, and every request of
// its batch, on a Begin that waits for an attempt in progress; and under Durability::kSync it
// would fsync on the thread that should be reading the next requests. So a server needs three
// things the Store contract does not offer: an Apply that never waits (the waiting is done
// without a thread, by watching the key), watches on keys, and an Apply whose fsync is left to
// another thread. They are given to the server explicitly, by opening the engine for serving:
//
//   auto engine = idem::ServingEngine::Open(dir, engine_options);
//   auto server = idem::Server::Start(engine->get(), server_options);
//
// A ServingEngine is an Engine: everything in idem/engine.h holds for it unchanged.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "idem/engine.h"

namespace idem {

class ServingEngine : public Engine {
 public:
  // Engine::Open, with the serving methods below.
  static Result<std::unique_ptr<ServingEngine>> Open(const std::string& dir, EngineOptions options);

  // Apply (the Store contract) blocks the calling thread for Begin and Lock ops with a wait that
  // find their key held (an attempt in progress, a lock), until the holder lets go, its lease
  // ends or the wait runs out. ApplyNoWait answers such ops at once (IN_PROGRESS, HELD): a
  // server waits without a thread per waiter by combining it with Watch.
  virtual Status ApplyNoWait(std::span<const Op> ops, std::vector<Result<OpResult>>* results) = 0;

  // What applying `op` would refuse it with before reading its key (InvalidArgument: limits,
  // the namespace's key format and policies), or Ok. For ops a server holds back before applying
  // them (a Lock waiting in line for its key): they are answered with their error at once.
  virtual Status Validate(const Op& op) const = 0;

  // Group commit with the fsync off the applying thread, under Durability::kSync:
  // ApplyDeferSync is ApplyNoWait whose writes reach the WAL (the OS) but are not fsynced; they
  // are visible to later operations at once. SyncWal() fsyncs every write that completed before
  // it was called. The caller must not acknowledge anything applied this way, or anything
  // applied after it (it may have read such a write), before a SyncWal() that began after it
  // returned. Apply and ApplyNoWait keep their contract regardless: when they may have read a
  // write not yet synced, they sync before returning. Under kAsync both are plain ApplyNoWait.
  // *needs_sync says whether this batch must wait for a SyncWal at all: false when it wrote
  // nothing and every deferred write it could have read was already synced (a duplicate or a
  // Get on an idle server), so its results may be acknowledged at once.
  virtual Status ApplyDeferSync(std::span<const Op> ops, std::vector<Result<OpResult>>* results,
                                bool* needs_sync) = 0;
  virtual Status SyncWal() = 0;

  // Calls `on_change` once, on the committing thread and after the commit, when a write to
  // (ns, key) is next committed; or never, if Unwatch comes first. It must not block or call
  // into the engine. Register BEFORE reading the state you wait on, so no change is missed.
  using WatchId = uint64_t;
  virtual WatchId Watch(std::string_view ns, std::string_view key,
                        std::function<void()> on_change) = 0;
  virtual void Unwatch(WatchId id) = 0;

  // Ok while the engine takes writes; while they are suspended after a disk failure (recovering,
  // or stopped until a restart) the IOError every write is refused with (the journal layout:
  // Busy once its index is full). For readiness probes: cheap, no I/O.
  virtual Status WriteReadiness() const = 0;
};

}  // namespace idem
