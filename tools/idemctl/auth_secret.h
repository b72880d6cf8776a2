// idemctl auth hash / auth token: the secrets of an --auth-file (net/src/credentials.h), made and
// hashed on the operator's machine. Neither command contacts a store.
//
// A secret is never taken from the command line, which every user of the machine can read in
// `ps`: auth hash reads it from stdin (without echo on a terminal), auth token prints a new one
// once and keeps no copy.
#pragma once

#include <string>
#include <string_view>

#include "idem/result.h"

namespace idem::ctl {

// The secret given on file descriptor `fd`: its first line, without the line break. On a
// terminal it prompts on stderr and turns echo off while the line is typed; otherwise the input
// must hold that one line only. InvalidArgument when there is no secret, more than one line, a
// line longer than Credentials::kMaxTokenBytes (nothing past that is read), or a secret an HTTP
// `Authorization: Bearer` header could not carry (anything but printable ASCII without spaces).
Result<std::string> ReadSecret(int fd);

// auth hash: the hash line for the file, or with --json {"outcome":"OK","auth":{"hash":..}}.
std::string FormatSecretHashHuman(std::string_view hash);
std::string FormatSecretHashJson(std::string_view hash);
// auth token: "secret: S" and "hash: H" on two lines, or with --json
// {"outcome":"OK","auth":{"secret":..,"hash":..}}.
std::string FormatNewTokenHuman(std::string_view secret, std::string_view hash);
std::string FormatNewTokenJson(std::string_view secret, std::string_view hash);

}  // namespace idem::ctl
