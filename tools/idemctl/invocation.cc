#include "invocation.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <map>
#include <memory>
#include <utility>

#include "base64.h"
#include "cli_app.h"
#include "duration.h"
#include "output.h"

namespace idem::ctl {
namespace {

// One flag a command accepts; `value` names its value in --help ("N", "D|forever").
struct FlagSpec {
  std::string_view name;
  std::string_view value;  // "": a switch, given alone (stored with the value "")
  bool required = false;   // BuildOp refuses the command without it
  // Bytes, not just text: also accepted as --NAME-b64 B64 (any bytes, in base64), one form or
  // the other. The parser stores the decoded bytes under NAME, so BuildOp sees bytes either way.
  bool bytes = false;
};

// One command: the parser accepts exactly these arguments and flags, and --help is written from
// the same table, so the two cannot disagree.
struct CommandSpec {
  std::string_view name;     // "GROUP NAME" for a command within a group ("auth hash")
  std::string_view section;  // the heading --help lists it under
  // Positional, by their --help names; "[NAME]" ones are optional (only at the end).
  std::vector<std::string_view> arguments;
  std::vector<FlagSpec> flags;
  std::string_view note;    // what --help says beside the synopsis ("" for nothing)
  bool needs_store = true;  // false: --server and --data are neither needed nor used
};

constexpr std::string_view kRecords = "records";
constexpr std::string_view kLifecycle = "request lifecycle";
constexpr std::string_view kTokens = "one-shot tokens";
constexpr std::string_view kLocks = "locks";
constexpr std::string_view kStateMachines = "state machines";
constexpr std::string_view kAdmin = "admin queries";
constexpr std::string_view kBackups = "backups";
constexpr std::string_view kMaintenance =
    "maintenance (--data only, with no server running on the directory)";
constexpr std::string_view kAuth = "secrets for a server's auth file (no store needed)";

// What a flag means in `idemctl COMMAND --help`: the same in every command that takes it ("" for
// a flag not listed here).
std::string_view FlagHelp(std::string_view name) {
  static const std::map<std::string_view, std::string_view> help = {
      {"status", "the record's status"},
      {"payload", "the payload, as text (any bytes: --payload-b64)"},
      {"fingerprint", "the request's fingerprint, as text (any bytes: --fingerprint-b64)"},
      {"ttl", "how long the record lives (default: the namespace's)"},
      {"lease", "how long the attempt or lock is held (default: the namespace's)"},
      {"wait", "wait up to D for a holder to finish instead of answering at once"},
      {"owner", "who holds the attempt or lock"},
      {"fence", "the fence begin or lock answered"},
      {"expect-status", "only if the status is one of these"},
      {"expect-version", "only if the record has this version"},
      {"expect-fence", "only if the record has this fence"},
      {"backup", "copy the directory here first"},
      {"to", "the new directory the backup is written into"},
      {"prefix", "only keys starting with these bytes (any bytes: --prefix-b64)"},
      {"limit", "print at most N records in all"},
      {"lease-ended", "only attempts in progress whose lease ended (stuck work)"},
      {"yes", "confirm: the purge cannot be undone"},
  };
  auto it = help.find(name);
  return it == help.end() ? std::string_view() : it->second;
}

// In --help's order.
const std::vector<CommandSpec>& Commands() {
  constexpr FlagSpec status{"status", "S"}, payload{"payload", "TEXT", false, true};
  constexpr FlagSpec fingerprint{"fingerprint", "F", false, true};
  constexpr FlagSpec ttl{"ttl", "D|forever"}, lease{"lease", "D"}, owner{"owner", "O"};
  constexpr FlagSpec wait{"wait", "D"};
  constexpr FlagSpec fence{"fence", "N", true};
  constexpr FlagSpec expect_status{"expect-status", "S1,S2..."};
  constexpr FlagSpec expect_version{"expect-version", "N"}, expect_fence{"expect-fence", "N"};
  static const std::vector<CommandSpec> commands = {
      {"insert", kRecords, {"NS", "KEY"}, {status, payload, fingerprint, ttl}, ""},
      {"get", kRecords, {"NS", "KEY"}, {}, ""},
      {"cas",
       kRecords,
       {"NS", "KEY"},
       {expect_status, expect_version, expect_fence, status, payload, ttl},
       ""},
      {"delete", kRecords, {"NS", "KEY"}, {expect_status, expect_version, expect_fence}, ""},
      {"stats", kRecords, {}, {}, ""},
      {"begin", kLifecycle, {"NS", "KEY"}, {fingerprint, lease, wait, owner, ttl}, ""},
      {"complete", kLifecycle, {"NS", "KEY"}, {fence, payload, ttl, status}, ""},
      {"abort", kLifecycle, {"NS", "KEY"}, {fence, payload}, ""},
      {"heartbeat", kLifecycle, {"NS", "KEY"}, {fence, lease}, ""},
      {"checkpoint",
       kLifecycle,
       {"NS", "KEY"},
       {fence, payload},
       "a recovery point: the payload (the phase reached) replaces the attempt's; it stays in "
       "progress, and a begin that takes it over gets the payload back"},
      {"token-issue",
       kTokens,
       {"NS"},
       {ttl, payload},
       "prints the token; the payload (what it authorizes) is returned by token-consume"},
      {"token-consume", kTokens, {"NS", "TOKEN"}, {}, "CONSUMED once, then ALREADY_CONSUMED"},
      {"lock", kLocks, {"NS", "KEY"}, {{"owner", "O", true}, lease, wait}, ""},
      {"renew", kLocks, {"NS", "KEY"}, {fence, lease}, ""},
      {"unlock", kLocks, {"NS", "KEY"}, {fence}, ""},
      {"transition", kStateMachines, {"NS", "KEY", "TO_STATUS"}, {expect_version, payload}, ""},
      {"scan",
       kAdmin,
       {"NS"},
       {{"prefix", "P", false, true}, {"status", "S1,S2..."}, {"lease-ended", ""}, {"limit", "N"}},
       "lists live records in key order, one line each (one JSON object each with the json "
       "flag), filtered by the store and read in bounded pages; lease-ended lists attempts "
       "still in progress whose lease ended and that nobody took over (stuck work)"},
      {"purge",
       kAdmin,
       {"NS"},
       {{"prefix", "P", false, true}, {"yes", "", true}},
       "deletes every record of NS (with the prefix), remembered keys included, in bounded "
       "batches, and prints how many; refuses without the yes flag"},
      {"compact",
       kAdmin,
       {"[NS]"},
       {},
       "a manual compaction of NS, or of the whole database: removes expired records and "
       "purged keys from disk (a server may need a longer timeout than 10s)"},
      {"backup",
       kBackups,
       {},
       {{"to", "DIR", true}},
       "an online, consistent backup into DIR (which must not exist), taken while the store "
       "serves; from a server, DIR is on the server's file system. Restore: start idemstored "
       "on DIR"},
      {"verify",
       kBackups,
       {},
       {},
       "on a database directory only: checks every table file's and journal segment's "
       "checksums, every stored value's format and the journal's saved index against its "
       "segments, read-only, and prints the counts; exit 6 (CORRUPTION) on damage"},
      {"repair",
       kMaintenance,
       {},
       {{"backup", "DIR"}},
       "salvage a database that refuses to start (a damaged WAL or journal segment, a missing "
       "CURRENT): copies the "
       "directory to DIR first (default DIR.before-repair-<UTC time>), then keeps what is "
       "readable and reports what was lost"},
      {"auth hash",
       kAuth,
       {},
       {},
       "reads a secret from stdin (one line; never from the command line, which ps shows) and "
       "prints its hash, for the principal's line in the server's auth file; refuses a secret "
       "shorter than 16 bytes",
       false},
      {"auth token",
       kAuth,
       {},
       {},
       "prints a new random secret (\"secret: ...\", the client's token; shown only this "
       "once, never stored) and its hash (\"hash: ...\", for the server's auth file)",
       false},
  };
  return commands;
}

constexpr std::string_view kBase64Suffix = "-b64";

Result<uint64_t> ParseUnsigned(std::string_view flag, std::string_view text) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) {
    return Status::InvalidArgument("--" + std::string(flag) +
                                   " takes a non-negative integer, not '" + std::string(text) +
                                   "'");
  }
  return v;
}

Result<int64_t> DurationFlag(const Invocation& inv, std::string_view name, int64_t fallback) {
  auto it = inv.flags.find(std::string(name));
  if (it == inv.flags.end()) return fallback;
  if (name == "ttl" && it->second == "forever") return kForever;
  Result<int64_t> ms = ParseDurationMs(it->second);
  if (!ms.ok())
    return Status::InvalidArgument("--" + std::string(name) + ": " + ms.status().message());
  return ms;
}

std::optional<std::string_view> Flag(const Invocation& inv, std::string_view name) {
  auto it = inv.flags.find(std::string(name));
  if (it == inv.flags.end()) return std::nullopt;
  return std::string_view(it->second);
}

Result<std::optional<uint64_t>> NumberFlag(const Invocation& inv, std::string_view name) {
  auto v = Flag(inv, name);
  if (!v) return std::optional<uint64_t>();
  Result<uint64_t> n = ParseUnsigned(name, *v);
  if (!n.ok()) return n.status();
  return std::optional<uint64_t>(*n);
}

// "A,B" -> {"A", "B"}; "" -> {""} (the store then refuses the empty status, naming it).
std::vector<std::string> SplitCommas(std::string_view list) {
  std::vector<std::string> items;
  while (true) {
    size_t comma = list.find(',');
    items.emplace_back(list.substr(0, comma));
    if (comma == std::string_view::npos) return items;
    list.remove_prefix(comma + 1);
  }
}

// --expect-status A,B  --expect-version N  --expect-fence N
Status ReadCondition(Invocation& inv, Condition* c) {
  if (auto s = Flag(inv, "expect-status")) {
    for (std::string& st : SplitCommas(*s)) inv.status_set.push_back(std::move(st));
    for (const auto& st : inv.status_set) c->status_in.push_back(st);
  }
  Result<std::optional<uint64_t>> version = NumberFlag(inv, "expect-version");
  if (!version.ok()) return version.status();
  c->version = *version;
  Result<std::optional<uint64_t>> fence = NumberFlag(inv, "expect-fence");
  if (!fence.ok()) return fence.status();
  c->fence = *fence;
  return Status::Ok();
}

Status RequireFence(Invocation& inv, Op* op) {
  Result<std::optional<uint64_t>> fence = NumberFlag(inv, "fence");
  if (!fence.ok()) return fence.status();
  if (!*fence) return Status::InvalidArgument(inv.command + " needs --fence N (from begin/lock)");
  op->condition.fence = *fence;
  return Status::Ok();
}

constexpr size_t kHelpWidth = 100;
constexpr size_t kNoteColumn = 36;  // where a note beside a synopsis starts

// Appends `words` to `out` separated by spaces, starting a new line indented by `indent` where
// the next word would pass kHelpWidth.
void AppendWrapped(std::string& out, const std::vector<std::string>& words, size_t indent) {
  for (const std::string& word : words) {
    const size_t column = out.size() - (out.rfind('\n') + 1);  // npos + 1 == 0
    if (column > indent && column + 1 + word.size() > kHelpWidth) {
      out += "\n" + std::string(indent, ' ');
    } else if (column > 0 && out.back() != ' ') {
      out += ' ';
    }
    out += word;
  }
}

std::vector<std::string> Words(std::string_view text) {
  std::vector<std::string> words;
  for (size_t start = 0; start < text.size();) {
    const size_t end = std::min(text.find(' ', start), text.size());
    if (end > start) words.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return words;
}

// "  cas NS KEY [--expect-status S1,S2...] ..." wrapped, with the note (if any) beside it.
void AppendCommandHelp(std::string& out, const CommandSpec& c) {
  std::vector<std::string> synopsis{std::string(c.name)};
  synopsis.insert(synopsis.end(), c.arguments.begin(), c.arguments.end());
  for (const FlagSpec& f : c.flags) {
    std::string flag = "--" + std::string(f.name);
    if (!f.value.empty()) flag += " " + std::string(f.value);
    if (f.bytes) flag += " | --" + std::string(f.name) + std::string(kBase64Suffix) + " B64";
    synopsis.push_back(f.required ? flag : "[" + flag + "]");
  }
  out += "  ";
  AppendWrapped(out, synopsis, 6);
  if (!c.note.empty()) {
    const size_t column = out.size() - (out.rfind('\n') + 1);
    if (column + 2 <= kNoteColumn) {
      out.append(kNoteColumn - column, ' ');
    } else {
      out += "\n" + std::string(kNoteColumn, ' ');
    }
    AppendWrapped(out, Words(c.note), kNoteColumn);
  }
  out += "\n";
}

// The exit statuses, with the outcomes of 0 and 1 listed from ExitCodeFor itself.
void AppendExitStatusHelp(std::string& out) {
  std::vector<std::string> successes = {"0", "success:", "the", "answer", "is", "one", "of"};
  std::vector<std::string> refusals = {"1", "refusal:", "the", "answer", "is", "one", "of"};
  for (int v = 0; v <= 0xff; ++v) {
    OpResult r;
    r.outcome = static_cast<Outcome>(v);
    if (OutcomeName(r.outcome) == "UNKNOWN") continue;
    (ExitCodeFor(r) == kExitSuccess ? successes : refusals)
        .push_back(std::string(OutcomeName(r.outcome)) + ",");
  }
  successes.back().pop_back();
  refusals.back().pop_back();
  out += "Exit status (answers go to stdout, errors to stderr):\n  ";
  AppendWrapped(out, successes, 6);
  out +=
      "\n    (stats, help, scan, purge, compact, backup, verify, repair and auth exit 0 when\n"
      "    they succeed)\n  ";
  AppendWrapped(out, refusals, 6);
  out += R"(
  2 USAGE: the command line, or the secret auth hash read, is wrong (nothing was sent to a store)
  3 INVALID_ARGUMENT: the store refused the request's arguments (a limit or rule)
  4 NOT_FOUND, IO_ERROR: no store to ask (no database at --data, server unreachable) or I/O error
  5 TIMED_OUT: no answer within --timeout
  6 CORRUPTION: stored or received bytes do not decode
  7 BUSY, NOT_SUPPORTED, SHUTDOWN: any other error
  8 UNAUTHENTICATED, PERMISSION_DENIED: the server did not accept the token (--token,
    IDEM_TOKEN), or its principal may not do this
An error is "idemctl: error (CODE): message", or with --json {"error":{"code":..,"message":..}};
it never has an "outcome" key, so a NOT_FOUND error is never read as the NOT_FOUND answer.
)";
}

// A positional argument's name for CLI11, which takes no brackets: "[NS]" (optional) -> "NS".
std::string ArgumentName(std::string_view argument) {
  if (argument.starts_with('[') && argument.ends_with(']')) {
    argument = argument.substr(1, argument.size() - 2);
  }
  return std::string(argument);
}

// idemctl's grammar, generated from Commands(): the global flags on the root, one CLI11
// subcommand per command (its positional arguments and its flags, a byte field also as
// NAME-b64). Global flags may stand anywhere: a subcommand passes the flags it does not know up
// to the root (fallthrough).
struct Grammar {
  std::unique_ptr<CLI::App> app = NewCliApp(
      "idemctl", "Inspect and change an idemstore, on a server or a local database directory.");
  std::string server, data_dir, timeout, token;
  std::string tls_ca, tls_cert, tls_key, tls_server_name;
  CLI::Option* json = app->add_flag("--json")->description("print results as JSON");
  CLI::Option* tls = app->add_flag("--tls")->description(
      "connect over TLS, trusting the system's CAs (the server's name is always checked)");
  // A first positional that names no command lands here (CLI11 tries command names first).
  std::vector<std::string> unknown_command;

  struct Command {
    const CommandSpec* spec;
    CLI::App* app;
    std::vector<std::string> arguments;  // arguments[i] reads spec->arguments[i]
    // flags[i] reads spec->flags[i]; base64[i] its NAME-b64 form (null for a text flag).
    std::vector<CLI::Option*> flags, base64;
  };
  std::vector<std::unique_ptr<Command>> commands;
  // Subcommands that hold commands ("auth" holds "auth hash"), by name.
  std::map<std::string, CLI::App*, std::less<>> groups;

  // The app a command named `spec_name` hangs from (creating its group), and its own name there.
  std::pair<CLI::App*, std::string> Parent(std::string_view spec_name) {
    const size_t space = spec_name.find(' ');
    if (space == std::string_view::npos) return {app.get(), std::string(spec_name)};
    const std::string group(spec_name.substr(0, space));
    auto it = groups.find(group);
    if (it == groups.end()) {
      CLI::App* sub = app->add_subcommand(group, "");
      sub->fallthrough();
      it = groups.emplace(group, sub).first;
    }
    return {it->second, std::string(spec_name.substr(space + 1))};
  }

  Grammar() {
    app->add_option("--server", server, "a server's address")->type_name("HOST:PORT");
    app->add_option("--data", data_dir, "a local database directory (no server on it)")
        ->type_name("DIR");
    app->add_option("--timeout", timeout, "how long to wait for an answer")
        ->type_name("D")
        ->default_str("10s");
    app->add_option("--tls-ca", tls_ca,
                    "over TLS, trusting the CAs in this PEM file (implies --tls)")
        ->type_name("FILE");
    app->add_option("--tls-cert", tls_cert, "mutual TLS: this client certificate (PEM)")
        ->type_name("FILE");
    app->add_option("--tls-key", tls_key, "mutual TLS: its private key (PEM)")->type_name("FILE");
    app->add_option("--tls-server-name", tls_server_name,
                    "the name the server's certificate must carry (default: --server's host)")
        ->type_name("NAME");
    // From the environment when the flag is absent: a flag's value shows in `ps`, a variable's
    // does not.
    app->add_option("--token", token,
                    "the secret of a principal of the server's --auth-file (default: the\n"
                    "environment's IDEM_TOKEN)")
        ->type_name("TOKEN")
        ->envname("IDEM_TOKEN");
    app->add_option("command", unknown_command)->expected(0, -1);
    for (const CommandSpec& spec : Commands()) {
      auto c = std::make_unique<Command>();
      c->spec = &spec;
      auto [parent, name] = Parent(spec.name);
      c->app = parent->add_subcommand(name, std::string(spec.note));
      c->app->fallthrough();
      c->arguments.resize(spec.arguments.size());
      for (size_t i = 0; i < spec.arguments.size(); ++i) {
        // Not required: a missing one is counted with the others ("takes 2 arguments, got 1").
        c->app->add_option(ArgumentName(spec.arguments[i]), c->arguments[i])->type_name("");
      }
      for (const FlagSpec& f : spec.flags) {
        const std::string what = std::string(FlagHelp(f.name)) + (f.required ? " (required)" : "");
        CLI::Option* text =
            f.value.empty()
                ? c->app->add_flag("--" + std::string(f.name), what)->disable_flag_override()
                : c->app->add_option("--" + std::string(f.name), what)
                      ->type_name(std::string(f.value))
                      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
        c->flags.push_back(text);
        c->base64.push_back(
            f.bytes ? c->app
                          ->add_option("--" + std::string(f.name) + std::string(kBase64Suffix),
                                       "the same bytes in base64")
                          ->type_name("B64")
                          ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
                    : nullptr);
      }
      commands.push_back(std::move(c));
    }
  }

  const Command* Parsed() const {
    for (const auto& c : commands) {
      if (c->app->parsed()) return c.get();
    }
    return nullptr;
  }

  // The group given without one of its commands ("idemctl auth"), or "".
  std::string GroupAlone() const {
    for (const auto& [name, group] : groups) {
      if (group->parsed()) return name;
    }
    return "";
  }
};

// Sets inv.flags from the command's options: the last value of a text flag; a byte field given
// once, in one form (decoded from base64 if given so).
Status ReadFlags(const Grammar::Command& c, Invocation& inv) {
  for (size_t i = 0; i < c.spec->flags.size(); ++i) {
    const FlagSpec& f = c.spec->flags[i];
    const CLI::Option* text = c.flags[i];
    const CLI::Option* base64 = c.base64[i];
    const std::string text_form = "--" + std::string(f.name);
    if (base64 == nullptr) {
      if (text->count() > 0) {
        inv.flags[std::string(f.name)] = f.value.empty() ? "" : text->results().back();
      }
      continue;
    }
    const std::string base64_form = text_form + std::string(kBase64Suffix);
    if (text->count() > 0 && base64->count() > 0) {
      return Status::InvalidArgument(text_form + " and " + base64_form +
                                     " are two forms of one value: give one");
    }
    if (text->count() > 1) return Status::InvalidArgument(text_form + " given twice");
    if (base64->count() > 1) return Status::InvalidArgument(base64_form + " given twice");
    if (text->count() == 1) inv.flags[std::string(f.name)] = text->results().front();
    if (base64->count() == 1) {
      Result<std::string> bytes = Base64Decode(base64->results().front());
      if (!bytes.ok())
        return Status::InvalidArgument(base64_form + ": " + bytes.status().message());
      inv.flags[std::string(f.name)] = std::move(*bytes);
    }
  }
  return Status::Ok();
}

// --tls and the --tls-* flags: TLS to --server.
Status ReadTlsFlags(const Grammar& g, Invocation& inv) {
  const bool any_file =
      !g.tls_ca.empty() || !g.tls_cert.empty() || !g.tls_key.empty() || !g.tls_server_name.empty();
  if (g.tls->count() == 0 && !any_file) return Status::Ok();
  if (inv.server.empty()) return Status::InvalidArgument("--tls and --tls-* need --server");
  if (g.tls_cert.empty() != g.tls_key.empty()) {
    return Status::InvalidArgument("--tls-cert and --tls-key: give both (mutual TLS) or neither");
  }
  inv.tls = ClientTlsOptions{.ca_file = g.tls_ca,
                             .cert_file = g.tls_cert,
                             .key_file = g.tls_key,
                             .server_name = g.tls_server_name};
  return Status::Ok();
}

}  // namespace

Result<Invocation> ParseInvocation(std::span<const std::string_view> args) {
  Invocation inv;
  Grammar g;
  Result<CliRequest> request = ParseCli(*g.app, args);
  const Grammar::Command* command = g.Parsed();
  if (!request.ok()) return request.status();
  if (*request == CliRequest::kHelp) {
    inv.command = "help";
    if (command != nullptr) inv.help_command = std::string(command->spec->name);
    return inv;
  }
  if (*request == CliRequest::kVersion) {
    inv.command = "version";
    return inv;
  }
  if (command == nullptr) {
    if (const std::string group = g.GroupAlone(); !group.empty()) {
      std::string commands;
      for (const CommandSpec& spec : Commands()) {
        if (spec.name.starts_with(group + " ")) {
          commands += (commands.empty() ? "" : " or ") + std::string(spec.name);
        }
      }
      // What followed is not shown: it may be a secret typed where it does not belong.
      return Status::InvalidArgument(group + " needs a command: " + commands +
                                     " (see idemctl --help)");
    }
    if (g.unknown_command.empty()) {
      return Status::InvalidArgument("no command given (see idemctl --help)");
    }
    inv.command = g.unknown_command.front();
    if (inv.command == "help") return inv;
    // A command's name is read as a value only after "--".
    for (const CommandSpec& spec : Commands()) {
      if (spec.name != inv.command) continue;
      std::string synopsis = "idemctl " + inv.command + " --";
      for (std::string_view argument : spec.arguments) synopsis += " " + std::string(argument);
      return Status::InvalidArgument("\"--\" stands after the command: " + synopsis);
    }
    return Status::InvalidArgument("unknown command '" + inv.command + "' (see idemctl --help)");
  }
  inv.command = std::string(command->spec->name);
  inv.server = g.server;
  inv.data_dir = g.data_dir;
  inv.json = g.json->count() > 0;
  inv.token = g.token;
  if (!g.timeout.empty()) {
    Result<int64_t> ms = ParseDurationMs(g.timeout);
    if (!ms.ok()) return Status::InvalidArgument("--timeout: " + ms.status().message());
    inv.timeout_ms = *ms;
  }
  if (command->spec->needs_store && inv.server.empty() == inv.data_dir.empty()) {
    return Status::InvalidArgument("say where the store is: --server HOST:PORT or --data DIR");
  }
  if (Status s = ReadTlsFlags(g, inv); !s.ok()) return s;
  if ((inv.command == "repair" || inv.command == "verify") && inv.data_dir.empty()) {
    return Status::InvalidArgument(inv.command + " works on a database directory: --data DIR");
  }
  if (Status s = ReadFlags(*command, inv); !s.ok()) return s;
  // Arguments past the command's own fall through to the root's catch-all: counted here.
  for (size_t i = 0; i < command->arguments.size(); ++i) {
    if (command->app->get_option(ArgumentName(command->spec->arguments[i]))->count() > 0) {
      inv.positional.push_back(command->arguments[i]);
    }
  }
  inv.positional.insert(inv.positional.end(), g.unknown_command.begin(), g.unknown_command.end());
  if (inv.command == "auth hash" && !inv.positional.empty()) {
    return Status::InvalidArgument(
        "auth hash reads the secret from stdin, never from the command line (which ps shows to "
        "every user): printf '%s\\n' \"$SECRET\" | idemctl auth hash");
  }
  const auto& arguments = command->spec->arguments;
  const size_t most = arguments.size();
  const size_t least = static_cast<size_t>(std::count_if(
      arguments.begin(), arguments.end(), [](std::string_view a) { return !a.starts_with('['); }));
  if (inv.positional.size() < least || inv.positional.size() > most) {
    return Status::InvalidArgument(inv.command + " takes " +
                                   (least == most
                                        ? std::to_string(most)
                                        : std::to_string(least) + " or " + std::to_string(most)) +
                                   " arguments, got " + std::to_string(inv.positional.size()) +
                                   " (see idemctl " + inv.command + " --help)");
  }
  if (auto to = inv.flags.find("to");
      inv.command == "backup" && (to == inv.flags.end() || to->second.empty())) {
    return Status::InvalidArgument("backup needs --to DIR");
  }
  if (inv.command == "purge" && !inv.flags.contains("yes")) {
    return Status::InvalidArgument("purge deletes every record of namespace " +
                                   (inv.positional.empty() ? "NS" : "'" + inv.positional[0] + "'") +
                                   (inv.flags.contains("prefix") ? " with the prefix" : "") +
                                   " and cannot be undone: add --yes to confirm");
  }
  return inv;
}

Result<ScanRequest> BuildScan(const Invocation& inv, uint64_t* total_limit) {
  ScanRequest scan;
  scan.ns = inv.positional.at(0);
  if (auto p = Flag(inv, "prefix")) scan.prefix = *p;
  if (auto statuses = Flag(inv, "status")) scan.status_in = SplitCommas(*statuses);
  scan.lease_ended = inv.flags.contains("lease-ended");
  Result<std::optional<uint64_t>> limit = NumberFlag(inv, "limit");
  if (!limit.ok()) return limit.status();
  if (*limit && **limit == 0) return Status::InvalidArgument("--limit must be at least 1");
  *total_limit = limit->value_or(0);
  return scan;
}

PurgeRequest BuildPurge(const Invocation& inv) {
  PurgeRequest purge;
  purge.ns = inv.positional.at(0);
  if (auto p = Flag(inv, "prefix")) purge.prefix = *p;
  return purge;
}

std::string CommandUsage(std::string_view command) {
  Grammar g;
  for (const auto& c : g.commands) {
    if (c->spec->name != command) continue;
    const size_t space = command.find(' ');
    return c->app->help(space == std::string_view::npos
                            ? "idemctl"
                            : "idemctl " + std::string(command.substr(0, space)));
  }
  return Usage();
}

Result<Op> BuildOp(Invocation& inv) {
  const std::string& c = inv.command;
  const auto& p = inv.positional;
  Op op;
  op.ns = p.empty() ? std::string_view() : std::string_view(p[0]);
  if (p.size() > 1) op.key = p[1];
  auto str = [&](std::string_view name, std::string_view fallback = {}) {
    return Flag(inv, name).value_or(fallback);
  };
  // A flag given with 0 is passed on: the store refuses it naming the namespace's range.
  Result<int64_t> ttl = DurationFlag(inv, "ttl", 0);
  if (!ttl.ok()) return ttl.status();
  Result<int64_t> lease = DurationFlag(inv, "lease", 0);
  if (!lease.ok()) return lease.status();
  Result<int64_t> wait = DurationFlag(inv, "wait", 0);
  if (!wait.ok()) return wait.status();
  // A flag not given leaves its field not given (the namespace's default).
  if (inv.flags.count("ttl")) op.ttl = Ttl(std::chrono::milliseconds(*ttl));
  if (inv.flags.count("lease")) op.lease = std::chrono::milliseconds(*lease);
  if (inv.flags.count("wait")) op.wait = std::chrono::milliseconds(*wait);

  if (c == "insert") {
    op.type = OpType::kInsert;
    op.status = str("status", "PENDING");
    op.payload = str("payload");
    op.fingerprint = str("fingerprint");
  } else if (c == "get") {
    op.type = OpType::kGet;
  } else if (c == "cas" || c == "delete") {
    op.type = c == "cas" ? OpType::kCompareAndSet : OpType::kDelete;
    if (Status s = ReadCondition(inv, &op.condition); !s.ok()) return s;
    if (c == "cas") {
      if (auto s = Flag(inv, "status")) op.update.status = *s;
      if (auto s = Flag(inv, "payload")) op.update.payload = *s;
      op.update.ttl = op.ttl;
    }
  } else if (c == "begin") {
    op.type = OpType::kBegin;
    op.fingerprint = str("fingerprint");
    op.owner = str("owner");
  } else if (c == "complete" || c == "abort" || c == "heartbeat" || c == "checkpoint" ||
             c == "renew" || c == "unlock") {
    op.type = c == "complete"     ? OpType::kComplete
              : c == "abort"      ? OpType::kAbort
              : c == "heartbeat"  ? OpType::kHeartbeat
              : c == "checkpoint" ? OpType::kCheckpoint
              : c == "renew"      ? OpType::kRenew
                                  : OpType::kUnlock;
    if (Status s = RequireFence(inv, &op); !s.ok()) return s;
    op.payload = str("payload");
    op.status = str("status");
  } else if (c == "token-issue") {
    op.type = OpType::kIssueToken;
    op.payload = str("payload");
  } else if (c == "token-consume") {
    op.type = OpType::kConsumeToken;
  } else if (c == "lock") {
    op.type = OpType::kLock;
    op.owner = str("owner");
    if (op.owner.empty()) return Status::InvalidArgument("lock needs --owner NAME");
  } else if (c == "transition") {
    op.type = OpType::kTransition;
    op.status = p[2];
    Result<std::optional<uint64_t>> version = NumberFlag(inv, "expect-version");
    if (!version.ok()) return version.status();
    op.condition.version = *version;
    if (auto s = Flag(inv, "payload")) op.update.payload = *s;
  } else {
    return Status::InvalidArgument("'" + c + "' is not a data command");
  }
  return op;
}

std::string Usage() {
  std::string out =
      R"(idemctl: inspect and change an idemstore, on a server or a local database directory.

usage: idemctl (--server HOST:PORT | --data DIR) [--json] [--timeout D] [--token TOKEN]
               COMMAND ARGS...
       idemctl [--json] auth hash | auth token
       idemctl --help | --version | COMMAND --help
       (the global flags may also stand after the command; a value starting with '-', such
       as a key, goes after --, which ends the flags: COMMAND [FLAGS] -- ARGS...)
       TLS: --tls | --tls-ca FILE, [--tls-cert FILE --tls-key FILE] [--tls-server-name NAME]
)";
  std::string_view section;
  for (const CommandSpec& c : Commands()) {
    if (c.section != section) {
      section = c.section;
      out += "\n" + std::string(section) + "\n";
    }
    AppendCommandHelp(out, c);
  }
  out += R"(
Durations: 500ms, 30s, 15m, 24h, 7d. --json prints one JSON object per result:
{"outcome": "INSERTED", "record": {"status": ..., "version": ..., "fence": ..., ...}}.

Payloads and fingerprints are bytes. --payload and --fingerprint take them as text;
--payload-b64 and --fingerprint-b64 take any bytes in base64 (RFC 4648, padding optional), one
form or the other. Output shows each as text ("payload") when it is valid UTF-8, and otherwise
in base64 under the name with _b64 ("payload_b64"), in --json and human output alike: exactly one
of the two, so what is printed can be given back unchanged.

)";
  AppendExitStatusHelp(out);
  return out;
}

}  // namespace idem::ctl
