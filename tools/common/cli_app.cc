#include "cli_app.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "idem/version.h"

namespace idem {
namespace {

// "--name VALUE   description (default D)": the value's name alone beside the flag (CLI11's
// own "VALUE=D" reads like an assignment), the default after the description.
class HelpFormatter : public CLI::Formatter {
 public:
  // Descriptions are written in lines of at most this many characters (CLI11 does not wrap).
  static constexpr size_t kDescriptionWidth = 68;

  HelpFormatter() { column_width(30); }

  std::string make_option_opts(const CLI::Option* opt) const override {
    if (opt->get_type_size() == 0 || opt->get_type_name().empty()) return "";
    return " " + opt->get_type_name();
  }

  std::string make_option_desc(const CLI::Option* opt) const override {
    std::string desc = opt->get_description();
    if (opt->get_default_str().empty()) return desc;
    const std::string note = "(default " + opt->get_default_str() + ")";
    const size_t last_line = desc.size() - (desc.rfind('\n') + 1);
    return desc + (last_line + 1 + note.size() > kDescriptionWidth ? "\n" : " ") + note;
  }
};

// The first word of "NAME: ..." or "NAME was ...": CLI11's messages start with the option.
std::string LeadingName(const std::string& message, std::string_view separator) {
  const size_t end = message.find(separator);
  return end == std::string::npos ? std::string() : message.substr(0, end);
}

Status Refused(std::string message) { return Status::InvalidArgument(std::move(message)); }

// Whether the command line takes values (positional arguments) in `app` or a subcommand it
// parsed: then a word starting with '-' may be a value (a key, a token), which "--" passes.
bool TakesValues(const CLI::App& app) {
  if (!app.get_options([](const CLI::Option* o) { return o->get_positional(); }).empty()) {
    return true;
  }
  const std::vector<CLI::App*> parsed = app.get_subcommands();
  return std::any_of(parsed.begin(), parsed.end(),
                     [](const CLI::App* sub) { return TakesValues(*sub); });
}

// CLI11's ParseError in the words of cli_app.h.
Status Reworded(const CLI::App& app, const CLI::ParseError& e) {
  const std::string what = e.what();
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
    std::vector<std::string> extras = app.remaining(true);
    const std::string first = extras.empty() ? what : extras.front();
    if (first.starts_with("-")) {
      return Refused("unknown flag " + first.substr(0, first.find('=')) +
                     (TakesValues(app) ? " (see --help; a value starting with '-' goes after --)"
                                       : " (see --help)"));
    }
    return Refused("unexpected argument \"" + first + "\" (see --help)");
  }
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) != nullptr) {
    // TypedAtLeast: "NAME: 1 required TYPE missing"; FlagOverride: "NAME was given a
    // disallowed flag override".
    if (what.ends_with(" missing")) {
      if (std::string name = LeadingName(what, ": "); !name.empty()) {
        return Refused(name + ": needs a value");
      }
    }
    if (what.ends_with(" was given a disallowed flag override")) {
      // The name as typed, without its dashes.
      const std::string name = LeadingName(what, " was given");
      return Refused((name.size() == 1 ? "-" : "--") + name + ": takes no value");
    }
  }
  if (dynamic_cast<const CLI::FileError*>(&e) != nullptr) return Refused("--config: " + what);
  return Refused(what);
}

}  // namespace

std::string VersionLine(std::string_view program) {
  return std::string(program) + " " + std::string(Version());
}

std::unique_ptr<CLI::App> NewCliApp(const std::string& program, const std::string& description) {
  auto app = std::make_unique<CLI::App>(description, program);
  app->formatter(std::make_shared<HelpFormatter>());
  app->set_help_flag("-h,--help", "this text");
  app->set_version_flag("--version", VersionLine(program), "print the version and exit");
  return app;
}

CLI::Option* AddSwitch(CLI::App& app, const std::string& name, const std::string& description) {
  return app.add_flag(name)->description(description)->disable_flag_override();
}

Result<CliRequest> ParseCli(CLI::App& app, std::span<const std::string_view> args) {
  // CLI11 consumes its arguments from the back.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    return CliRequest::kHelp;
  } catch (const CLI::CallForAllHelp&) {
    return CliRequest::kHelp;
  } catch (const CLI::CallForVersion&) {
    return CliRequest::kVersion;
  } catch (const CLI::ParseError& e) {
    return Reworded(app, e);
  }
  return CliRequest::kRun;
}

int ReportUsageError(std::string_view program, const Status& status) {
  std::fprintf(stderr, "%.*s: error (USAGE): %s\n", static_cast<int>(program.size()),
               program.data(), status.message().c_str());
  return kUsageExitCode;
}

}  // namespace idem
