#include "key_distribution.h"

#include <cmath>

namespace idem::bench {

uint64_t Rng::Next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double Rng::NextDouble() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

uint64_t Rng::Below(uint64_t bound) {
  // Lemire's multiply-shift: unbiased enough for bounds far below 2^64.
  __extension__ using U128 = unsigned __int128;
  return static_cast<uint64_t>((static_cast<U128>(Next()) * bound) >> 64);
}

Result<Distribution> ParseDistribution(std::string_view name) {
  if (name == "uniform") return Distribution::kUniform;
  if (name == "zipfian" || name == "zipf") return Distribution::kZipfian;
  return Status::InvalidArgument("unknown distribution \"" + std::string(name) +
                                 "\" (uniform, zipfian)");
}

std::string_view DistributionName(Distribution d) {
  return d == Distribution::kUniform ? "uniform" : "zipfian";
}

uint64_t ScrambleRank(uint64_t rank, uint64_t n) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (int i = 0; i < 8; ++i) {
    h ^= (rank >> (8 * i)) & 0xff;
    h *= 0x100000001b3ULL;
  }
  return h % n;
}

namespace {

class UniformChooser final : public KeyChooser {
 public:
  explicit UniformChooser(uint64_t n) : n_(n) {}
  uint64_t Next(Rng& rng) override { return rng.Below(n_); }
  uint64_t n() const override { return n_; }

 private:
  const uint64_t n_;
};

class ZipfianChooser final : public KeyChooser {
 public:
  ZipfianChooser(uint64_t n, double theta) : n_(n), theta_(theta) {
    for (uint64_t i = 1; i <= n; ++i) zeta_n_ += 1.0 / std::pow(static_cast<double>(i), theta);
    const double zeta2 = 1.0 + 1.0 / std::pow(2.0, theta);
    alpha_ = 1.0 / (1.0 - theta);
    eta_ = (1.0 - std::pow(2.0 / static_cast<double>(n), 1.0 - theta)) / (1.0 - zeta2 / zeta_n_);
    half_pow_theta_ = 1.0 + std::pow(0.5, theta);
  }
  uint64_t Next(Rng& rng) override { return ScrambleRank(NextRank(rng), n_); }
  uint64_t n() const override { return n_; }

  // Rank 0 is the most popular.
  uint64_t NextRank(Rng& rng) const {
    const double u = rng.NextDouble();
    const double uz = u * zeta_n_;
    if (uz < 1.0) return 0;
    if (uz < half_pow_theta_) return n_ > 1 ? 1 : 0;
    const auto r =
        static_cast<uint64_t>(static_cast<double>(n_) * std::pow(eta_ * u - eta_ + 1.0, alpha_));
    return r < n_ ? r : n_ - 1;
  }

 private:
  const uint64_t n_;
  const double theta_;
  double zeta_n_ = 0, alpha_ = 0, eta_ = 0, half_pow_theta_ = 0;
};

}  // namespace

std::unique_ptr<KeyChooser> MakeKeyChooser(Distribution d, uint64_t n, double theta) {
  if (n == 0) n = 1;
  if (d == Distribution::kZipfian && n > 1) return std::make_unique<ZipfianChooser>(n, theta);
  return std::make_unique<UniformChooser>(n);
}

}  // namespace idem::bench
