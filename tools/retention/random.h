// Random: the simulation's only source of randomness, a seeded xoshiro256** generator with its
// own distributions.
//
// Why not <random>'s distributions: the standard fixes the engines' output but not how
// std::normal_distribution and friends turn it into numbers, so the same seed gives different
// workloads under libstdc++ and libc++. A retention study has to reproduce from its seed
// anywhere, so every distribution here is written out (and its formula is in docs/retention.md).
#pragma once

#include <cstdint>

namespace idem::retention {

// SplitMix64 finalizer: a bijection on 64-bit values with good avalanche. Used to seed the
// generator and to turn sequential key ids into random-looking keys.
uint64_t Mix64(uint64_t x);

class Random {
 public:
  explicit Random(uint64_t seed);

  uint64_t NextU64();
  // Uniform in [0, 1), 53 bits of resolution.
  double Uniform();
  // Uniform in [lo, hi).
  double Uniform(double lo, double hi) { return lo + (hi - lo) * Uniform(); }
  // true with probability p.
  bool Bernoulli(double p) { return Uniform() < p; }
  // Exponential with the given mean: -mean * ln(1 - U).
  double Exponential(double mean);
  // Standard normal, Box-Muller (one value per call; the second is discarded so that the
  // stream position never depends on call history).
  double Normal();
  // exp(mu + sigma * N(0, 1)).
  double LogNormal(double mu, double sigma);

 private:
  uint64_t s_[4];
};

}  // namespace idem::retention
