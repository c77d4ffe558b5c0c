// Zipf-distributed ids for the sparse benchmarks, in O(1) memory (so an id
// space of 10^8 needs no table): rank k in [1, n] has probability
// proportional to k^-s, drawn by rejection-inversion (Hoermann and
// Derflinger 1996, as Apache Commons RNG's RejectionInversionZipfSampler),
// then scattered over uint64 by a bijective mix so hot ids are not small
// numbers. Header-only; a sampler is not thread-safe (one per thread).
#ifndef PS_TESTS_BENCH_ZIPF_H_
#define PS_TESTS_BENCH_ZIPF_H_

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace ps::bench {

// splitmix64's finalizer: a bijection on uint64.
inline uint64_t MixId(uint64_t k) {
  k += 0x9E3779B97F4A7C15ull;
  k = (k ^ (k >> 30)) * 0xBF58476D1CE4E5B9ull;
  k = (k ^ (k >> 27)) * 0x94D049BB133111EBull;
  return k ^ (k >> 31);
}

class ZipfIds {
 public:
  ZipfIds(uint64_t n, double s, uint64_t seed)
      : n_(static_cast<double>(n)), e_(s), rng_(seed) {
    h_x1_ = HIntegral(1.5) - 1.0;
    h_n_ = HIntegral(n_ + 0.5);
    s_ = 2.0 - HInverse(HIntegral(2.5) - H(2.0));
  }

  // A rank in [1, n].
  uint64_t Rank() {
    std::uniform_real_distribution<double> u01(0.0, 1.0);
    for (;;) {
      const double u = h_n_ + u01(rng_) * (h_x1_ - h_n_);
      const double x = HInverse(u);
      double k = std::floor(x + 0.5);
      if (k < 1) k = 1;
      if (k > n_) k = n_;
      if (k - x <= s_ || u >= HIntegral(k + 0.5) - H(k)) {
        return static_cast<uint64_t>(k);
      }
    }
  }

  // `count` ids (duplicates as drawn).
  std::vector<uint64_t> Batch(size_t count) {
    std::vector<uint64_t> ids(count);
    for (uint64_t& id : ids) id = MixId(Rank());
    return ids;
  }

 private:
  static double Helper1(double x) {  // log1p(x) / x
    return std::fabs(x) > 1e-8 ? std::log1p(x) / x
                               : 1 - x * (0.5 - x * (1.0 / 3 - 0.25 * x));
  }
  static double Helper2(double x) {  // expm1(x) / x
    return std::fabs(x) > 1e-8 ? std::expm1(x) / x
                               : 1 + x * 0.5 * (1 + x / 3 * (1 + 0.25 * x));
  }
  double H(double x) const { return std::exp(-e_ * std::log(x)); }
  double HIntegral(double x) const {
    const double log_x = std::log(x);
    return Helper2((1 - e_) * log_x) * log_x;
  }
  double HInverse(double x) const {
    double t = x * (1 - e_);
    if (t < -1) t = -1;
    return std::exp(Helper1(t) * x);
  }

  const double n_;
  const double e_;
  std::mt19937_64 rng_;
  double h_x1_ = 0, h_n_ = 0, s_ = 0;
};

}  // namespace ps::bench

#endif  // PS_TESTS_BENCH_ZIPF_H_
