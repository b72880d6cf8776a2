// The command line every program shares: both flag spellings, --help's layout, --version, and
// the one wording of each refusal.
#include "cli_app.h"

#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

namespace idem {
namespace {

// A program with one option, one repeatable option and one switch.
struct Program {
  std::unique_ptr<CLI::App> app = NewCliApp("prog", "Does one thing.");
  CLI::Option* rate = app->add_option("--rate", "first requests per second")
                          ->type_name("R")
                          ->default_str("10")
                          ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  CLI::Option* param = app->add_option("-p,--param", "a parameter\n(repeatable)")
                           ->type_name("NAME=V")
                           ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  CLI::Option* quiet = AddSwitch(*app, "--quiet", "no progress line");

  // The error message, or "run", "help", "version".
  std::string Parse(std::vector<std::string_view> args) {
    Result<CliRequest> r = ParseCli(*app, args);
    if (!r.ok()) return r.status().message();
    return *r == CliRequest::kRun ? "run" : *r == CliRequest::kHelp ? "help" : "version";
  }
};

TEST(CliAppTest, BothSpellingsOfAValue) {
  Program p;
  EXPECT_EQ("run", p.Parse({"--rate", "3", "--param=a=1", "-p", "b=2", "--quiet", "--rate=4"}));
  EXPECT_EQ("4", p.rate->as<std::string>());  // the last one given
  EXPECT_EQ((std::vector<std::string>{"a=1", "b=2"}), p.param->reduced_results());
  EXPECT_EQ(1u, p.quiet->count());
}

TEST(CliAppTest, RefusalsAreWordedTheSameInEveryProgram) {
  EXPECT_EQ("unknown flag --bogus (see --help)", Program().Parse({"--bogus"}));
  EXPECT_EQ("unknown flag --bogus (see --help)", Program().Parse({"--bogus=1", "--quiet"}));
  EXPECT_EQ("unknown flag --bogus (see --help)", Program().Parse({"--rate", "1", "--bogus", "x"}));
  EXPECT_EQ("unexpected argument \"extra\" (see --help)", Program().Parse({"extra"}));
  EXPECT_EQ("--rate: needs a value", Program().Parse({"--rate"}));
  EXPECT_EQ("--quiet: takes no value", Program().Parse({"--quiet=1"}));
}

// A program that takes values (positional arguments) may be given one that starts with '-' (a key,
// a token): "--" ends the flags, and the refusal of such a value says so.
TEST(CliAppTest, AValueStartingWithADashGoesAfterDoubleDash) {
  std::unique_ptr<CLI::App> app = NewCliApp("prog", "Consumes tokens.");
  std::string token;
  app->add_subcommand("consume", "one token")->add_option("TOKEN", token);
  const std::vector<std::string_view> unmarked = {"consume", "-abc"};
  Result<CliRequest> r = ParseCli(*app, unmarked);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ("unknown flag -abc (see --help; a value starting with '-' goes after --)",
            r.status().message());

  app = NewCliApp("prog", "Consumes tokens.");
  app->add_subcommand("consume", "one token")->add_option("TOKEN", token);
  const std::vector<std::string_view> marked = {"consume", "--", "-abc"};
  r = ParseCli(*app, marked);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ("-abc", token);
  // A program that takes no values has no such hint (RefusalsAreWordedTheSameInEveryProgram).
}

TEST(CliAppTest, HelpAndVersion) {
  EXPECT_EQ("help", Program().Parse({"--help"}));
  EXPECT_EQ("help", Program().Parse({"-h", "--bogus"}));
  EXPECT_EQ("version", Program().Parse({"--version"}));
  EXPECT_EQ(0u, VersionLine("prog").find("prog "));
  EXPECT_LT(std::string("prog ").size(), VersionLine("prog").size());
}

TEST(CliAppTest, HelpListsEachOptionWithItsValueAndDefault) {
  const std::string help = Program().app->help();
  EXPECT_NE(std::string::npos, help.find("Does one thing.")) << help;
  EXPECT_NE(std::string::npos, help.find("\n  -h,--help                   this text\n")) << help;
  EXPECT_NE(std::string::npos,
            help.find("\n  --version                   print the version and exit\n"))
      << help;
  EXPECT_NE(std::string::npos,
            help.find("\n  --rate R                    first requests per second (default 10)\n"))
      << help;
  EXPECT_NE(std::string::npos, help.find("\n  -p,--param NAME=V           a parameter\n"
                                         "                              (repeatable)\n"))
      << help;
  EXPECT_NE(std::string::npos, help.find("\n  --quiet                     no progress line\n"))
      << help;
}

}  // namespace
}  // namespace idem
