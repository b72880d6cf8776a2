#include "value_dictionary.h"

#include <zdict.h>
#include <zstd.h>

#include <atomic>
#include <cstring>
#include <vector>

namespace idem {
namespace {

// Level 1: on records like idem-bench's, level 3 stored the same ~35 bytes a value, in more
// time, and negative levels were no faster for values this small (a standalone probe).
constexpr int kLevel = 1;
constexpr char kFrameMagic[4] = {0x28, static_cast<char>(0xB5), 0x2F, static_cast<char>(0xFD)};

struct Contexts {
  ZSTD_CCtx* compress = ZSTD_createCCtx();
  // The dictionary `compress` is set up for (its serial; 0: none): setting a context up costs
  // about as much as compressing a small value, so it is done once per dictionary and thread.
  uint64_t bound = 0;
  ZSTD_DCtx* decompress = ZSTD_createDCtx();
  std::string frame;  // a stored value with its magic put back
  ~Contexts() {
    ZSTD_freeCCtx(compress);
    ZSTD_freeDCtx(decompress);
  }
};

std::atomic<uint64_t> next_serial{1};

Contexts& ThreadContexts() {
  thread_local Contexts contexts;
  return contexts;
}

}  // namespace

struct ValueDictionary::Compiled {
  ZSTD_CDict* cdict = nullptr;
  ZSTD_DDict* ddict = nullptr;
  ~Compiled() {
    ZSTD_freeCDict(cdict);
    ZSTD_freeDDict(ddict);
  }
};

ValueDictionary::ValueDictionary(std::string bytes, std::unique_ptr<Compiled> compiled)
    : bytes_(std::move(bytes)),
      compiled_(std::move(compiled)),
      serial_(next_serial.fetch_add(1, std::memory_order_relaxed)) {}

ValueDictionary::~ValueDictionary() = default;

Result<std::shared_ptr<const ValueDictionary>> ValueDictionary::Load(std::string_view bytes) {
  if (bytes.empty() || bytes.size() > kMaxBytes) {
    return Status::Corruption("a value dictionary of " + std::to_string(bytes.size()) +
                              " bytes (1.." + std::to_string(kMaxBytes) + ")");
  }
  // A dictionary that is not zstd's own format would load as raw content; only zstd's is ever
  // written, so anything else is damage.
  if (ZDICT_getDictID(bytes.data(), bytes.size()) == 0) {
    return Status::Corruption("not a zstd dictionary");
  }
  auto compiled = std::make_unique<Compiled>();
  compiled->cdict = ZSTD_createCDict(bytes.data(), bytes.size(), kLevel);
  compiled->ddict = ZSTD_createDDict(bytes.data(), bytes.size());
  if (compiled->cdict == nullptr || compiled->ddict == nullptr) {
    return Status::Corruption("zstd could not load the value dictionary");
  }
  return std::shared_ptr<const ValueDictionary>(
      new ValueDictionary(std::string(bytes), std::move(compiled)));
}

Result<std::shared_ptr<const ValueDictionary>> ValueDictionary::Train(
    const std::deque<std::string>& samples, size_t max_bytes) {
  max_bytes = std::min(max_bytes, kMaxBytes);
  std::string joined;
  std::vector<size_t> sizes;
  sizes.reserve(samples.size());
  for (const std::string& sample : samples) {
    joined += sample;
    sizes.push_back(sample.size());
  }
  std::string dictionary(max_bytes, '\0');
  const size_t size = ZDICT_trainFromBuffer(dictionary.data(), dictionary.size(), joined.data(),
                                            sizes.data(), static_cast<unsigned>(sizes.size()));
  if (ZDICT_isError(size)) {
    return Status::InvalidArgument(std::string("no value dictionary from ") +
                                   std::to_string(samples.size()) +
                                   " samples: " + ZDICT_getErrorName(size));
  }
  dictionary.resize(size);
  return Load(dictionary);
}

bool ValueDictionary::Compress(std::string_view value, std::string* out) const {
  if (value.size() < kMinValueBytes) return false;
  Contexts& contexts = ThreadContexts();
  ZSTD_CCtx* cctx = contexts.compress;
  if (contexts.bound != serial_) {
    // Another dictionary's (perhaps freed since: refCDict does not look at the one it replaces).
    contexts.bound = 0;
    ZSTD_CCtx_reset(cctx, ZSTD_reset_session_and_parameters);
    if (ZSTD_isError(ZSTD_CCtx_refCDict(cctx, compiled_->cdict)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 0)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_dictIDFlag, 0)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1))) {
      return false;
    }
    contexts.bound = serial_;
  }
  // Worth keeping only if shorter than the value once the magic is taken off.
  out->resize(value.size() + sizeof(kFrameMagic));
  const size_t size = ZSTD_compress2(cctx, out->data(), out->size(), value.data(), value.size());
  // (Too long for `out`: an error, and ZSTD_compress2 starts the next frame afresh.)
  if (ZSTD_isError(size) || size <= sizeof(kFrameMagic) ||
      std::memcmp(out->data(), kFrameMagic, sizeof(kFrameMagic)) != 0) {
    return false;
  }
  out->erase(0, sizeof(kFrameMagic));
  out->resize(size - sizeof(kFrameMagic));
  return out->size() < value.size();
}

Status ValueDictionary::Decompress(std::string_view stored, size_t max_bytes,
                                   std::string* out) const {
  Contexts& contexts = ThreadContexts();
  contexts.frame.assign(kFrameMagic, sizeof(kFrameMagic));
  contexts.frame.append(stored);
  const unsigned long long size =
      ZSTD_getFrameContentSize(contexts.frame.data(), contexts.frame.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN) {
    return Status::Corruption("a compressed value's header does not decode");
  }
  if (size > max_bytes) {
    return Status::Corruption("a compressed value says it holds " + std::to_string(size) +
                              " bytes, more than " + std::to_string(max_bytes));
  }
  out->resize(size);
  const size_t got =
      ZSTD_decompress_usingDDict(contexts.decompress, out->data(), out->size(),
                                 contexts.frame.data(), contexts.frame.size(), compiled_->ddict);
  if (ZSTD_isError(got) || got != size) {
    return Status::Corruption(std::string("a compressed value does not decompress: ") +
                              (ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short"));
  }
  return Status::Ok();
}

void ValueSampler::Offer(std::string_view value) {
  if (value.size() < ValueDictionary::kMinValueBytes || offered_++ % kEvery != 0) return;
  if (samples_.size() == max_samples_) samples_.pop_front();
  samples_.emplace_back(value.substr(0, kMaxSampleBytes));
}

}  // namespace idem
