// Client: the network Store. Same interface as the embedded Engine, so a program switches
// between embedded and remote use by construction alone:
//
//   std::unique_ptr<idem::Store> store;
//   if (remote) store = *idem::Client::Connect(idem::ClientOptions{.address = "127.0.0.1:7878"});
//   else        store = *idem::Engine::Open("./data", {});
//
// Thread-safe: any number of threads may call Apply concurrently on one Client; their requests
// are pipelined on one connection and matched to responses by request id.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "idem/backup.h"
#include "idem/metrics.h"
#include "idem/server_info.h"
#include "idem/store.h"

namespace idem {

// TLS to the server. The server's certificate is always verified, and so is its name (SNI sent;
// an IP address is matched against the certificate's IP addresses).
struct ClientTlsOptions {
  std::string ca_file;  // PEM CA certificates to trust; empty: the system's trust store
  // Mutual TLS: the client's certificate chain and private key (PEM), both or neither.
  std::string cert_file, key_file;
  std::string server_name;  // the name the certificate must carry; empty: the host of address
};

struct ClientOptions {
  std::string address = "127.0.0.1:7878";  // HOST:PORT
  int64_t connect_timeout_ms = 5'000;
  int64_t request_timeout_ms = 10'000;  // per Apply; TimedOut after it
  // Responses above this are rejected (Corruption) until the HelloReply, and from servers that
  // do not announce max_reply_bytes; a server's announced max_reply_bytes replaces it, up to
  // max_reply_bytes below.
  size_t max_frame_bytes = 4u << 20;
  // The client's own cap on a response frame, whatever the server announces (up to 4 GiB): the
  // limit is min(announced max_reply_bytes, this). A longer response is Corruption, found from
  // its length prefix before any of it is allocated, and ends the connection.
  size_t max_reply_bytes = 64u << 20;
  std::string client_name = "idem::Client";  // sent in Hello, shown in the server's log
  // The secret of a principal of the server's --auth-file (docs/security.md), sent in Hello.
  // Empty: none. A server with authentication on refuses a connection without an accepted
  // token: Connect, and every call, fail UNAUTHENTICATED; a request the principal's grants do
  // not cover fails PERMISSION_DENIED (an Apply: every op's result, nothing applied).
  std::string token;
  // When the connection is lost (a server restart, the server's idle timeout), the next call
  // connects again. After a failed attempt the calls fail at once for reconnect_backoff_ms,
  // which doubles with each failed attempt in a row up to reconnect_backoff_max_ms: a client
  // of a server that is down costs it one connection attempt per backoff, not one per call.
  // A reconnection whose Hello is refused UNAUTHENTICATED (a token the server no longer accepts)
  // is not tried again for kRefusedTokenRetryMs: calls fail at once meanwhile, so a client left
  // with a revoked token spends one of its address's failed attempts a minute
  // (--auth-failure-limit), not one per backoff, and does not lock out the other clients there.
  bool reconnect = true;
  int64_t reconnect_backoff_ms = 100;
  int64_t reconnect_backoff_max_ms = 2'000;
  static constexpr int64_t kRefusedTokenRetryMs = 60'000;
  // TLS; unset: plain TCP. The TLS handshake counts against connect_timeout_ms.
  std::optional<ClientTlsOptions> tls;
};

// What a server reports about itself: the store's figures and the server's own counters.
struct ServerStats {
  StoreStats store;
  std::vector<MetricFamily> metrics;  // empty from a server without metrics
};

class Client : public Store {
 public:
  // Connects and performs the protocol handshake. IOError when the server is unreachable or the
  // TLS handshake fails (naming OpenSSL's reason: "certificate verify failed (certificate has
  // expired)"), NotSupported when it speaks another protocol version, TimedOut after
  // connect_timeout_ms, InvalidArgument when a TLS file cannot be used (naming it),
  // Unauthenticated when it requires a token and options.token is not one it accepts.
  static Result<std::unique_ptr<Client>> Connect(const ClientOptions& options);

  // Pipelined/asynchronous use: sends the request now and calls `done` (on the client's I/O
  // thread) with the same contract as Apply. The ops are serialized before ApplyAsync returns,
  // so the caller's strings need not outlive the call.
  using Callback = std::function<void(Status status, std::vector<Result<OpResult>> results)>;
  virtual void ApplyAsync(std::span<const Op> ops, Callback done) = 0;

  // The store's figures (what Stats() returns) and the server's counters, in one request.
  virtual Result<ServerStats> GetServerStats() = 0;

  // Has the server take an online backup of its database into `to`, a directory on the SERVER's
  // file system, written with the server's permissions: an absolute path (at most 4096 bytes)
  // whose parent exists and which itself does not. Returns the backup's manifest
  // (idem/backup.h) once the directory is complete and durable. The server's errors:
  // InvalidArgument (`to` relative, too long, existing, or its parent missing), Busy (another
  // backup is being taken), IOError (writes suspended, writing the backup failed: nothing is
  // left behind), Shutdown (the server is stopping), NotSupported (a server that takes no
  // backups). A backup copied across file systems may take longer than request_timeout_ms:
  // TimedOut then, while the server goes on with it.
  virtual Result<BackupManifest> Backup(std::string_view to) = 0;

  // Scan, Purge and Compact (the Store contract, idem/admin.h) run on the server, each call one
  // request: a page, a purge step, a whole compaction. A compaction may take longer than
  // request_timeout_ms: TimedOut then, while the server goes on with it.

  // What the server announced in its HelloReply (limits, version) on the first connection.
  virtual const ServerInfo& server_info() const = 0;

  // Failure contract, for Apply, ApplyAsync, Stats, GetServerStats, Backup and the admin
  // queries alike:
  //  - TimedOut after request_timeout_ms (a late response is dropped; the request may have
  //    been applied);
  //  - IOError once the connection is lost or the server closes it: every call waiting on it
  //    fails at once. Those may have been applied, so none is resent. The next call connects
  //    again (ClientOptions::reconnect): it fails with IOError or TimedOut if that fails, and
  //    the calls after it fail at once ("next attempt in N ms") until the backoff has passed.
  //    Without reconnect every later call fails at once with the first error;
  //  - Corruption for a response that does not decode;
  //  - with a server that requires a token (ServerOptions::auth_file): Unauthenticated when the
  //    token is not accepted, or no longer (a reload revoked it: the server then closes the
  //    connection); PermissionDenied for a request the principal's grants do not cover (an
  //    Apply's: every op's result, and nothing of the request was applied);
  //  - Apply from inside a Callback (the client's I/O thread) is InvalidArgument: it would wait
  //    on itself. Use ApplyAsync there.
  // Destroying the Client fails the calls still waiting with Shutdown.
};

}  // namespace idem
