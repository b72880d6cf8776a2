// A file mapped for reads (engine/src/mapped_file.h): copies see the file's bytes, including
// those written after it was mapped; a page the file lost under the mapping is an IOError, not a
// crash; and a SIGBUS that is not a copy's still goes where it went before.
#include "mapped_file.h"

#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "support/temp_dir.h"

namespace idem {
namespace {

class MappedFileTest : public ::testing::Test {
 protected:
  void Write(const std::string& bytes, std::ios::openmode mode = std::ios::trunc) {
    std::ofstream out(path_, std::ios::binary | std::ios::out | mode);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  std::shared_ptr<const MappedFile> MustMap(uint64_t min_length) {
    Result<std::shared_ptr<const MappedFile>> mapped = MappedFile::Map(path_, min_length);
    EXPECT_TRUE(mapped.ok()) << mapped.status().ToString();
    return mapped.ok() ? *mapped : nullptr;
  }

  testing::TempDir dir_;
  const std::string path_ = dir_.Sub("file");
};

TEST_F(MappedFileTest, CopiesSeeTheFileIncludingWhatWasWrittenAfterTheMapping) {
  const std::string first(10'000, 'a');
  Write(first);
  std::shared_ptr<const MappedFile> mapped = MustMap(64 << 10);
  ASSERT_NE(nullptr, mapped);
  EXPECT_EQ(64u << 10, mapped->length());
  std::string out;
  ASSERT_OK(mapped->CopyOut(9'990, 10, &out));
  EXPECT_EQ(std::string(10, 'a'), out);
  // The file grows past the page it ended in: the new bytes show in the same mapping.
  Write(std::string(20'000, 'b'), std::ios::app);
  ASSERT_OK(mapped->CopyOut(9'995, 10, &out));
  EXPECT_EQ("aaaaabbbbb", out);
  ASSERT_OK(mapped->CopyOut(29'990, 10, &out));
  EXPECT_EQ(std::string(10, 'b'), out);
}

TEST_F(MappedFileTest, AFileLargerThanAskedIsMappedWhole) {
  Write(std::string(100'000, 'c'));
  std::shared_ptr<const MappedFile> mapped = MustMap(4096);
  ASSERT_NE(nullptr, mapped);
  EXPECT_EQ(100'000u, mapped->length());
}

TEST_F(MappedFileTest, ACopyPastTheMappingIsRefused) {
  Write(std::string(100, 'x'));
  std::shared_ptr<const MappedFile> mapped = MustMap(4096);
  ASSERT_NE(nullptr, mapped);
  std::string out = "left";
  EXPECT_TRUE(mapped->CopyOut(4000, 97, &out).IsInvalidArgument());
  EXPECT_TRUE(mapped->CopyOut(uint64_t{1} << 63, 1, &out).IsInvalidArgument());
  EXPECT_EQ("", out);
  ASSERT_OK(mapped->CopyOut(4096, 0, &out));
}

TEST_F(MappedFileTest, AMissingFileIsAnIOErrorNamingIt) {
  Result<std::shared_ptr<const MappedFile>> mapped = MappedFile::Map(dir_.Sub("nothing"), 4096);
  ASSERT_FALSE(mapped.ok());
  EXPECT_TRUE(mapped.status().IsIOError()) << mapped.status().ToString();
  EXPECT_NE(std::string::npos, mapped.status().message().find(dir_.Sub("nothing")));
}

TEST_F(MappedFileTest, APageTheFileLostUnderTheMappingIsAnIOErrorOnEveryThread) {
  Write(std::string(64 << 10, 'd'));
  std::shared_ptr<const MappedFile> mapped = MustMap(0);
  ASSERT_NE(nullptr, mapped);
  std::string out;
  ASSERT_OK(mapped->CopyOut(60'000, 100, &out));
  std::filesystem::resize_file(path_, 4096);  // truncated from outside, as damage would be
  std::vector<std::thread> readers;
  std::vector<Status> read(4);
  for (size_t i = 0; i < read.size(); ++i) {
    readers.emplace_back([&, i] {
      std::string bytes;
      for (int n = 0; n < 100 && read[i].ok(); ++n) read[i] = mapped->CopyOut(60'000, 100, &bytes);
      if (!bytes.empty()) read[i] = Status::Corruption("bytes left after the failed copy");
    });
  }
  for (std::thread& reader : readers) reader.join();
  for (const Status& s : read) {
    EXPECT_TRUE(s.IsIOError()) << s.ToString();
    EXPECT_NE(std::string::npos, s.message().find(path_)) << s.ToString();
  }
  // What is still there still reads, and a failed copy left the handler working.
  ASSERT_OK(mapped->CopyOut(0, 100, &out));
  EXPECT_EQ(std::string(100, 'd'), out);
  EXPECT_TRUE(mapped->CopyOut(8192, 1, &out).IsIOError());
}

// What the process did on SIGBUS before the first mapping, it still does for a SIGBUS that is not
// a copy's: here a handler of the program's own; without one, the default action (death).
TEST_F(MappedFileTest, ASigbusThatIsNotACopysGoesToTheHandlerThatWasThereBefore) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // a fresh process: no mapping made yet
  Write(std::string(8192, 'e'));
  EXPECT_EXIT(
      {
        std::signal(SIGBUS, [](int) { _exit(42); });
        (void)MappedFile::Map(path_, 0);  // installs its handler over the program's
        std::raise(SIGBUS);
      },
      ::testing::ExitedWithCode(42), "");
}

}  // namespace
}  // namespace idem
