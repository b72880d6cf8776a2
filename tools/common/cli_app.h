// How every idemstore program reads its command line: a CLI11 App made by NewCliApp and parsed
// by ParseCli, so that idemstored, idemctl, idem-bench and idem-retention all accept
// "--flag value" and "--flag=value", print --help laid out the same way, answer --version with
// the project's version, and word a refused command line the same way (exit code 2).
//
// Each program declares its flags as CLI options holding text (no typed conversion by CLI11):
// the program's own parsers check that text, so a value's error names its flag in the program's
// words, not CLI11's.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>

#include "idem/result.h"

namespace idem {

// The exit code of every program for a command line it refuses.
inline constexpr int kUsageExitCode = 2;

// What --version prints: "PROGRAM VERSION", the project's version (CMake's PROJECT_VERSION).
std::string VersionLine(std::string_view program);

// An App for `program`, `description` heading its --help. It has -h/--help and --version;
// --help lists each option as "--name VALUE  description (default D)", VALUE being the option's
// type_name and D its default_str (both left out when empty), in a 30-column first column.
// Switches made with AddSwitch refuse a value ("--quiet=1").
std::unique_ptr<CLI::App> NewCliApp(const std::string& program, const std::string& description);

// A switch: a flag that takes no value.
CLI::Option* AddSwitch(CLI::App& app, const std::string& name, const std::string& description);

enum class CliRequest { kRun, kHelp, kVersion };

// Parses `args` (without the program name) into `app`. kHelp or kVersion when -h/--help or
// --version is given (then nothing else is checked). InvalidArgument, worded the same in every
// program whatever CLI11 would say:
//   unknown flag --x (see --help)
//   unknown flag --x (see --help; a value starting with '-' goes after --)
//       (the second where the command line takes values, positional arguments: a key or a
//       token may start with '-', and after "--" every word is a value)
//   unexpected argument "x" (see --help)
//   --x: needs a value
//   --x: takes no value
// and CLI11's own message for anything else (a --config file that cannot be read, ...).
Result<CliRequest> ParseCli(CLI::App& app, std::span<const std::string_view> args);

// Prints "PROGRAM: error (USAGE): MESSAGE" on stderr and returns kUsageExitCode.
int ReportUsageError(std::string_view program, const Status& status);

}  // namespace idem
