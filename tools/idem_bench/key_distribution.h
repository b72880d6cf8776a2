// Which key a request uses: a key index in [0, n), drawn uniformly or from a Zipfian
// distribution (a few hot keys, a long tail), from a small seeded PRNG so runs are repeatable.
//
// The Zipfian generator is YCSB's (Gray et al., "Quickly generating billion-record synthetic
// databases", SIGMOD 1994): P(rank r) proportional to 1/r^theta, O(1) per draw after an O(n)
// setup. Ranks are scrambled by a hash so the hot keys are spread over the key space rather than
// being keys 0, 1, 2 (which would also all share RocksDB blocks and Redis hash-slot neighbours).
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "idem/result.h"

namespace idem::bench {

// splitmix64: fast, good enough for load generation, 8 bytes of state.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next();
  double NextDouble();             // [0, 1)
  uint64_t Below(uint64_t bound);  // [0, bound); bound >= 1

 private:
  uint64_t state_;
};

enum class Distribution { kUniform, kZipfian };
Result<Distribution> ParseDistribution(std::string_view name);
std::string_view DistributionName(Distribution d);

class KeyChooser {
 public:
  virtual ~KeyChooser() = default;
  // A key index in [0, n) for the n given at construction.
  virtual uint64_t Next(Rng& rng) = 0;
  virtual uint64_t n() const = 0;
};

// theta in (0, 1) for Zipfian (0.99 is YCSB's default); ignored for uniform. n >= 1.
std::unique_ptr<KeyChooser> MakeKeyChooser(Distribution d, uint64_t n, double theta = 0.99);

// A bijection-free scramble of a rank into [0, n): FNV-1a of the rank, mod n.
uint64_t ScrambleRank(uint64_t rank, uint64_t n);

}  // namespace idem::bench
