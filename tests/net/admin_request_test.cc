// The admin queries at the request handler (no sockets): what the protocol layer adds to the
// engine's Scan — the page bounded by max_reply_bytes, the filter counted before it is decoded —
// and the codec's round trip. The replies come from another thread (CommitQueue::RunBlocking).
#include <future>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "idem/serving.h"
#include "request_handler.h"
#include "support/temp_dir.h"
#include "test_server.h"

namespace idem {
namespace {

constexpr size_t kMaxReplyBytes = 16 * 1024;

class AdminRequestTest : public ::testing::Test {
 protected:
  AdminRequestTest() {
    engine_ = std::move(*ServingEngine::Open(dir_.Sub("db"), testing::TestEngineOptions(clock_)));
    queue_ = std::make_unique<CommitQueue>(engine_.get(), 64, /*engine_threads=*/0);
    ServerInfo info;
    info.server_version = "test";
    info.max_frame_bytes = 1 << 20;
    info.max_reply_bytes = kMaxReplyBytes;
    info.limits = engine_->options().limits;
    handler_ = std::make_unique<RequestHandler>(engine_.get(), queue_.get(), nullptr, info);
    Ask(EncodeHello(1, "test"));
  }
  ~AdminRequestTest() override {
    queue_->Stop();  // joins the threads that answered
  }

  // Sends one frame and waits for its reply (a frame body); the connection must stay usable.
  const wire::Frame* Ask(const FrameBytes& frame) {
    std::promise<std::vector<uint8_t>> replied;
    Status s = handler_->Handle(
        std::vector<uint8_t>(frame.data() + 4, frame.data() + frame.size()), &session_,
        [&](FrameBytes f) {
          replied.set_value(std::vector<uint8_t>(f.data() + 4, f.data() + f.size()));
        });
    EXPECT_TRUE(s.ok()) << s.ToString();
    reply_ = replied.get_future().get();
    const wire::Frame* reply = VerifyFrame(reply_.data(), reply_.size());
    EXPECT_NE(nullptr, reply);
    return reply;
  }
  void InsertWithPayload(const std::string& key, size_t payload_bytes) {
    const std::string payload(payload_bytes, 'p');
    auto r = engine_->Insert({.ns = "pay", .key = key, .status = "PENDING", .payload = payload});
    ASSERT_TRUE(r.ok() && r->outcome == Outcome::kInserted);
  }

  testing::TempDir dir_;
  std::shared_ptr<ManualClock> clock_ = std::make_shared<ManualClock>();
  std::unique_ptr<ServingEngine> engine_;
  std::unique_ptr<CommitQueue> queue_;
  std::unique_ptr<RequestHandler> handler_;
  Session session_;
  std::vector<uint8_t> reply_;
};

TEST_F(AdminRequestTest, AScanPageFitsMaxReplyBytesAndThePagesListEveryRecord) {
  for (int i = 0; i < 20; ++i) InsertWithPayload("k" + std::to_string(100 + i), 2000);
  ScanRequest request{.ns = "pay", .limit = 1000};
  size_t records = 0, pages = 0;
  while (true) {
    const wire::Frame* reply = Ask(EncodeScanRequest(10 + pages, request));
    ASSERT_NE(nullptr, reply);
    EXPECT_LE(reply_.size() + 4, kMaxReplyBytes);
    ASSERT_TRUE(DecodeError(reply->error()).ok()) << DecodeError(reply->error()).ToString();
    ASSERT_NE(nullptr, reply->body_as_ScanResponse());
    Result<ScanPage> page = DecodeScanResponse(*reply->body_as_ScanResponse(), reply_.size());
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    EXPECT_GT(page->records.size(), 0u);
    records += page->records.size();
    ++pages;
    if (page->cursor.empty()) break;
    request.cursor = page->cursor;
  }
  EXPECT_EQ(20u, records);
  EXPECT_GT(pages, 2u);  // 20 records of 2 KB do not fit one 16 KiB reply
}

// A page cut by the reply size must still fit it: the engine and the server count an entry's
// bytes the same way, whatever the records' size (small records: many entries' framing).
TEST_F(AdminRequestTest, PagesOfManySmallRecordsFitMaxReplyBytes) {
  for (size_t payload : {100u, 1000u}) {
    const std::string prefix = "p" + std::to_string(payload) + "-";
    for (int i = 0; i < 200; ++i) InsertWithPayload(prefix + std::to_string(1000 + i), payload);
    ScanRequest request{.ns = "pay", .prefix = prefix, .limit = 1000};
    size_t records = 0, pages = 0;
    while (true) {
      const wire::Frame* reply = Ask(EncodeScanRequest(100 + pages, request));
      ASSERT_NE(nullptr, reply);
      ASSERT_TRUE(DecodeError(reply->error()).ok())
          << payload << ": " << DecodeError(reply->error()).ToString();
      EXPECT_LE(reply_.size() + 4, kMaxReplyBytes);
      Result<ScanPage> page = DecodeScanResponse(*reply->body_as_ScanResponse(), reply_.size());
      ASSERT_TRUE(page.ok()) << page.status().ToString();
      records += page->records.size();
      ++pages;
      if (page->cursor.empty()) break;
      request.cursor = page->cursor;
    }
    EXPECT_EQ(200u, records) << payload;
    EXPECT_GT(pages, 1u) << payload;
  }
}

TEST_F(AdminRequestTest, ARecordLargerThanAReplyIsRefusedNamingTheLimit) {
  InsertWithPayload("huge", 20 * 1024);
  const wire::Frame* reply = Ask(EncodeScanRequest(2, {.ns = "pay"}));
  Status error = DecodeError(reply->error());
  EXPECT_TRUE(error.IsInvalidArgument()) << error.ToString();
  EXPECT_NE(std::string::npos, error.message().find("max_reply_bytes")) << error.message();
}

TEST_F(AdminRequestTest, AFilterOverMaxStatusSetIsRefusedBeforeItIsDecoded) {
  const wire::Frame* reply =
      Ask(EncodeScanRequest(2, {.ns = "pay", .status_in = std::vector<std::string>(17, "A")}));
  Status error = DecodeError(reply->error());
  EXPECT_TRUE(error.IsInvalidArgument()) << error.ToString();
  EXPECT_NE(std::string::npos, error.message().find("max_status_set")) << error.message();
}

TEST_F(AdminRequestTest, PurgeAndCompactAnswerWithTheirResponses) {
  InsertWithPayload("a", 10);
  InsertWithPayload("b", 10);
  const wire::Frame* reply = Ask(EncodePurgeRequest(2, {.ns = "pay"}));
  ASSERT_NE(nullptr, reply->body_as_PurgeResponse());
  PurgeStep step = DecodePurgeResponse(*reply->body_as_PurgeResponse());
  EXPECT_EQ(2u, step.deleted);
  EXPECT_EQ("", step.cursor);
  reply = Ask(EncodeCompactRequest(3, "pay"));
  EXPECT_NE(nullptr, reply->body_as_CompactResponse());
  reply = Ask(EncodeCompactRequest(4, "bad ns"));
  EXPECT_TRUE(DecodeError(reply->error()).IsInvalidArgument());
}

TEST(AdminCodec, RequestsRoundTrip) {
  ScanRequest scan{.ns = "pay",
                   .prefix = std::string("o\0r", 3),
                   .status_in = {"PAID", "FAILED"},
                   .lease_ended = true,
                   .cursor = "\x01xyz",
                   .limit = 7};
  FrameBytes frame = EncodeScanRequest(9, scan);
  const wire::Frame* root = VerifyFrame(frame.data() + 4, frame.size() - 4);
  ASSERT_NE(nullptr, root);
  ASSERT_NE(nullptr, root->body_as_ScanRequest());
  Result<ScanRequest> decoded = DecodeScanRequest(*root->body_as_ScanRequest(), Limits{});
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(scan.ns, decoded->ns);
  EXPECT_EQ(scan.prefix, decoded->prefix);
  EXPECT_EQ(scan.status_in, decoded->status_in);
  EXPECT_TRUE(decoded->lease_ended);
  EXPECT_EQ(scan.cursor, decoded->cursor);
  EXPECT_EQ(7u, decoded->limit);

  PurgeRequest purge{.ns = "pay", .prefix = "tmp-", .cursor = "\x01pay"};
  frame = EncodePurgeRequest(10, purge);
  root = VerifyFrame(frame.data() + 4, frame.size() - 4);
  ASSERT_NE(nullptr, root);
  PurgeRequest back = DecodePurgeRequest(*root->body_as_PurgeRequest());
  EXPECT_EQ(purge.ns, back.ns);
  EXPECT_EQ(purge.prefix, back.prefix);
  EXPECT_EQ(purge.cursor, back.cursor);
}

}  // namespace
}  // namespace idem
