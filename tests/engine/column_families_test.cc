// The column families of a database (engine/src/column_families.h): which names are expiry
// windows, listing them (an unknown name is Corruption) and opening all of them.
#include "column_families.h"

#include <gmock/gmock.h>

#include "support/temp_dir.h"
#include "support/window_families.h"

namespace idem {
namespace {

using ::testing::HasSubstr;

TEST(ColumnFamiliesTest, AWindowNameIsItsEndInDecimalDigitsOnly) {
  EXPECT_EQ(0, WindowFamilyEnd("expires-0"));
  EXPECT_EQ(60'000, WindowFamilyEnd("expires-60000"));
  EXPECT_EQ(INT64_MAX, WindowFamilyEnd("expires-9223372036854775807"));
  EXPECT_EQ("expires-3600000", WindowFamilyName(3'600'000));
  EXPECT_TRUE(IsWindowFamily(WindowFamilyName(1'796'179'500'000)));
  for (const char* name : {"default", "expires-", "expires-007", "expires-00", "expires--5",
                           "expires-+5", "expires-5x", "expires-5 ", "expires- 5", "Expires-5",
                           "expires-9223372036854775808", "xexpires-5", "expires-0x10"}) {
    EXPECT_FALSE(IsWindowFamily(name)) << name;
  }
}

// Creates the database `db` with a family per name, in that order, each holding "k" = its name.
void CreateFamilies(const rocksdb::Options& options, const std::string& db,
                    const std::vector<std::string>& names) {
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(options, db, &raw).ok());
  std::unique_ptr<rocksdb::DB> owned(raw);
  for (const std::string& name : names) {
    rocksdb::ColumnFamilyHandle* h = nullptr;
    ASSERT_TRUE(owned->CreateColumnFamily(options, name, &h).ok());
    ASSERT_TRUE(owned->Put(rocksdb::WriteOptions(), h, "k", name).ok());
    ASSERT_TRUE(owned->DestroyColumnFamilyHandle(h).ok());
  }
  ASSERT_TRUE(owned->Close().ok());
}

TEST(ColumnFamiliesTest, ListsDefaultFirstThenTheWindowsByEnd) {
  testing::TempDir dir;
  const std::string db = dir.Sub("db");
  rocksdb::Options options;
  options.create_if_missing = true;
  // Created out of order, and 120000 after 60000 although it sorts before it as a string.
  CreateFamilies(options, db, {"expires-120000", "expires-60000", "expires-0"});
  const std::vector<std::string> expected = {"default", "expires-0", "expires-60000",
                                             "expires-120000"};
  Result<std::vector<std::string>> names = ListFamilies(options, db);
  ASSERT_OK(names);
  EXPECT_EQ(expected, *names);

  for (OpenMode mode : {OpenMode::kReadOnly, OpenMode::kReadWrite}) {
    auto all = OpenAllFamilies(options, options, db, mode);
    ASSERT_OK(all);
    EXPECT_EQ(expected, (*all)->names());
    ASSERT_EQ(4u, (*all)->handles().size());
    EXPECT_EQ(3u, (*all)->windows());
    for (size_t i = 1; i < expected.size(); ++i) {
      EXPECT_EQ(expected[i], (*all)->handles()[i]->GetName());
      std::string value;
      ASSERT_TRUE(
          (*all)->db()->Get(rocksdb::ReadOptions(), (*all)->handles()[i], "k", &value).ok());
      EXPECT_EQ(expected[i], value);
    }
    ASSERT_OK((*all)->Close());
  }
}

TEST(ColumnFamiliesTest, AnUnknownNameIsCorruption) {
  testing::TempDir dir;
  const std::string db = dir.Sub("db");
  rocksdb::Options options;
  options.create_if_missing = true;
  CreateFamilies(options, db, {"expires-060000"});
  Result<std::vector<std::string>> names = ListFamilies(options, db);
  ASSERT_FALSE(names.ok());
  EXPECT_EQ(Status::Code::kCorruption, names.status().code());
  EXPECT_THAT(names.status().message(), HasSubstr("'expires-060000'"));
  EXPECT_THAT(names.status().message(), HasSubstr(db));
  EXPECT_EQ(Status::Code::kCorruption,
            OpenAllFamilies(options, options, db, OpenMode::kReadOnly).status().code());
}

TEST(ColumnFamiliesTest, NoDatabaseIsAnError) {
  testing::TempDir dir;
  EXPECT_FALSE(ListFamilies(rocksdb::Options(), dir.Sub("none")).ok());
}

}  // namespace
}  // namespace idem
