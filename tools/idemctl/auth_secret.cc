#include "auth_secret.h"

#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "credentials.h"
#include "json_writer.h"

namespace idem::ctl {
namespace {

// Turns a terminal's echo off for as long as it lives, and back on after.
class EchoOff {
 public:
  explicit EchoOff(int fd) : fd_(fd) {
    if (::tcgetattr(fd_, &saved_) != 0) return;
    termios quiet = saved_;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    quiet.c_lflag |= ECHONL;  // the newline still shows, so the next output starts a line
    active_ = ::tcsetattr(fd_, TCSANOW, &quiet) == 0;
  }
  ~EchoOff() {
    if (active_) ::tcsetattr(fd_, TCSANOW, &saved_);
  }
  EchoOff(const EchoOff&) = delete;
  EchoOff& operator=(const EchoOff&) = delete;

 private:
  int fd_;
  termios saved_{};
  bool active_ = false;
};

// Reads up to `limit` bytes from `fd`, stopping after the first '\n' when `one_line` (a terminal
// delivers a line at a time). Byte by byte on a terminal so nothing past the line is consumed.
Result<std::string> ReadUpTo(int fd, size_t limit, bool one_line) {
  std::string text;
  char buffer[256];
  while (text.size() < limit) {
    const size_t want = one_line ? 1 : std::min(sizeof buffer, limit - text.size());
    const ssize_t n = ::read(fd, buffer, want);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IOError(std::string("cannot read stdin: ") + std::strerror(errno));
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
    if (one_line && text.back() == '\n') break;
  }
  return text;
}

// {"outcome":"OK","auth":{"secret":..,"hash":..}}, without "secret" when it is "".
std::string AuthJson(std::string_view secret, std::string_view hash) {
  JsonWriter j;
  j.BeginObject();
  j.Key("outcome");
  j.String("OK");
  j.Key("auth");
  j.BeginObject();
  if (!secret.empty()) {
    j.Key("secret");
    j.String(secret);
  }
  j.Key("hash");
  j.String(hash);
  j.EndObject();
  j.EndObject();
  return j.Take();
}

constexpr std::string_view kHowToGive =
    "give the secret alone on one line: printf '%s\\n' \"$SECRET\" | idemctl auth hash";

}  // namespace

Result<std::string> ReadSecret(int fd) {
  const bool terminal = ::isatty(fd) == 1;
  // The longest secret, its "\r\n", and one byte more to tell that it is too long.
  const size_t limit = Credentials::kMaxTokenBytes + 3;
  Result<std::string> text = [&]() -> Result<std::string> {
    if (!terminal) return ReadUpTo(fd, limit, false);
    std::fputs("secret (not echoed): ", stderr);
    std::fflush(stderr);
    EchoOff quiet(fd);
    Result<std::string> line = ReadUpTo(fd, limit, true);
    // The rest of an overlong line is read and dropped, so the shell does not run it next.
    for (bool more = line.ok() && !line->ends_with('\n'); more;) {
      Result<std::string> rest = ReadUpTo(fd, 1, true);
      more = rest.ok() && !rest->empty() && *rest != "\n";
    }
    return line;
  }();
  if (!text.ok()) return text.status();
  std::string_view line = *text;
  const size_t newline = line.find('\n');
  std::string_view rest =
      newline == std::string_view::npos ? std::string_view() : line.substr(newline + 1);
  line = line.substr(0, newline);
  if (line.ends_with('\r')) line.remove_suffix(1);
  if (line.size() > Credentials::kMaxTokenBytes) {
    return Status::InvalidArgument("the secret is longer than " +
                                   std::to_string(Credentials::kMaxTokenBytes) + " bytes");
  }
  if (line.empty()) {
    return Status::InvalidArgument("no secret on stdin: " + std::string(kHowToGive));
  }
  // Whatever follows the line must be line breaks only: a file of several lines is no secret.
  if (!terminal) {
    Result<std::string> more = ReadUpTo(fd, limit, false);
    if (!more.ok()) return more.status();
    const std::string after = std::string(rest) + *more;
    if (after.find_first_not_of("\r\n") != std::string::npos) {
      return Status::InvalidArgument("stdin holds more than one line: " + std::string(kHowToGive));
    }
  }
  if (!std::all_of(line.begin(), line.end(), [](char c) { return c > ' ' && c < 0x7f; })) {
    return Status::InvalidArgument(
        "the secret may only have printable ASCII characters, without spaces: it travels in an "
        "HTTP 'Authorization: Bearer' header too (idemctl auth token makes such secrets)");
  }
  return std::string(line);
}

std::string FormatSecretHashHuman(std::string_view hash) { return std::string(hash); }

std::string FormatSecretHashJson(std::string_view hash) { return AuthJson("", hash); }

std::string FormatNewTokenHuman(std::string_view secret, std::string_view hash) {
  return "secret: " + std::string(secret) + "\nhash: " + std::string(hash);
}

std::string FormatNewTokenJson(std::string_view secret, std::string_view hash) {
  return AuthJson(secret, hash);
}

}  // namespace idem::ctl
