#include "idem/status.h"

namespace idem {

const std::string& Status::message() const {
  static const std::string kEmpty;
  return msg_ ? *msg_ : kEmpty;
}

std::string Status::ToString() const {
  std::string out(CodeName(code_));
  if (msg_ && !msg_->empty()) out += ": " + *msg_;
  return out;
}

Status Status::FromCode(uint32_t code, std::string_view msg) {
  if (code == 0) return Status::Ok();
  if (code > static_cast<uint32_t>(Code::kPermissionDenied)) {
    return Status::Corruption("unknown status code " + std::to_string(code) + ": " +
                              std::string(msg));
  }
  return Status(static_cast<Code>(code), msg);
}

std::string_view CodeName(Status::Code code) {
  switch (code) {
    case Status::Code::kOk:
      return "OK";
    case Status::Code::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case Status::Code::kNotFound:
      return "NOT_FOUND";
    case Status::Code::kBusy:
      return "BUSY";
    case Status::Code::kIOError:
      return "IO_ERROR";
    case Status::Code::kCorruption:
      return "CORRUPTION";
    case Status::Code::kTimedOut:
      return "TIMED_OUT";
    case Status::Code::kNotSupported:
      return "NOT_SUPPORTED";
    case Status::Code::kShutdown:
      return "SHUTDOWN";
    case Status::Code::kUnauthenticated:
      return "UNAUTHENTICATED";
    case Status::Code::kPermissionDenied:
      return "PERMISSION_DENIED";
  }
  return "UNKNOWN";
}

}  // namespace idem
