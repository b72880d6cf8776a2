#include "random.h"

#include <cmath>
#include <numbers>

namespace idem::retention {

uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

Random::Random(uint64_t seed) {
  // Seeding each word through SplitMix64 is the recommended way: it never yields the all-zero
  // state xoshiro cannot leave.
  for (int i = 0; i < 4; ++i)
    s_[i] = Mix64(seed + static_cast<uint64_t>(i) * 0x9e3779b97f4a7c15ULL);
}

uint64_t Random::NextU64() {
  auto rotl = [](uint64_t x, int k) { return (x << k) | (x >> (64 - k)); };
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Random::Uniform() { return static_cast<double>(NextU64() >> 11) * 0x1.0p-53; }

double Random::Exponential(double mean) { return -mean * std::log1p(-Uniform()); }

double Random::Normal() {
  // 1 - U is in (0, 1], so the logarithm is finite.
  const double u1 = 1.0 - Uniform();
  const double u2 = Uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

double Random::LogNormal(double mu, double sigma) { return std::exp(mu + sigma * Normal()); }

}  // namespace idem::retention
