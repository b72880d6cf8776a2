// Status: the outcome of an operation that can fail for reasons outside the caller's control
// or because the caller passed something invalid. Expected business outcomes (a key already
// present, a condition not met) are NOT errors: they are `Outcome`s inside an `OpResult`.
//
// A Status is cheap to copy when ok (no allocation). Codes are stable: the wire protocol
// carries them as numbers (docs/protocol.md), so never renumber, only append.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace idem {

class [[nodiscard]] Status {
 public:
  enum class Code : uint8_t {
    kOk = 0,
    kInvalidArgument = 1,    // the caller's input breaks a documented limit or rule
    kNotFound = 2,           // a named thing (database dir, namespace graph) does not exist
    kBusy = 3,               // refused for load (connection limit, queue full); retry later
    kIOError = 4,            // disk or network failure
    kCorruption = 5,         // stored or received bytes do not decode
    kTimedOut = 6,           // no answer within the caller's deadline
    kNotSupported = 7,       // unknown operation or protocol version
    kShutdown = 8,           // the store or server is closing
    kUnauthenticated = 9,    // no credentials, or ones the server does not accept (or no longer)
    kPermissionDenied = 10,  // authenticated, but the principal may not do this (the message
                             // names the principal, the permission and the namespace)
  };

  Status() = default;  // ok
  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string_view msg) { return {Code::kInvalidArgument, msg}; }
  static Status NotFound(std::string_view msg) { return {Code::kNotFound, msg}; }
  static Status Busy(std::string_view msg) { return {Code::kBusy, msg}; }
  static Status IOError(std::string_view msg) { return {Code::kIOError, msg}; }
  static Status Corruption(std::string_view msg) { return {Code::kCorruption, msg}; }
  static Status TimedOut(std::string_view msg) { return {Code::kTimedOut, msg}; }
  static Status NotSupported(std::string_view msg) { return {Code::kNotSupported, msg}; }
  static Status Shutdown(std::string_view msg) { return {Code::kShutdown, msg}; }
  static Status Unauthenticated(std::string_view msg) { return {Code::kUnauthenticated, msg}; }
  static Status PermissionDenied(std::string_view msg) { return {Code::kPermissionDenied, msg}; }
  // For codes received over the wire; an unknown number becomes kCorruption.
  static Status FromCode(uint32_t code, std::string_view msg);

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  bool IsInvalidArgument() const { return code_ == Code::kInvalidArgument; }
  bool IsNotFound() const { return code_ == Code::kNotFound; }
  bool IsBusy() const { return code_ == Code::kBusy; }
  bool IsIOError() const { return code_ == Code::kIOError; }
  bool IsCorruption() const { return code_ == Code::kCorruption; }
  bool IsTimedOut() const { return code_ == Code::kTimedOut; }
  bool IsUnauthenticated() const { return code_ == Code::kUnauthenticated; }
  bool IsPermissionDenied() const { return code_ == Code::kPermissionDenied; }
  const std::string& message() const;
  // "INVALID_ARGUMENT: key is 600 bytes; the limit is 512"
  std::string ToString() const;

 private:
  Status(Code code, std::string_view msg)
      : code_(code), msg_(std::make_shared<const std::string>(msg)) {}
  Code code_ = Code::kOk;
  std::shared_ptr<const std::string> msg_;  // null when ok: copying an ok Status never allocates
};

// Stable upper-case name of a code ("OK", "INVALID_ARGUMENT", ...), used by idemctl and logs.
std::string_view CodeName(Status::Code code);

}  // namespace idem
