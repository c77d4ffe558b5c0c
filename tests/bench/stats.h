// Order statistics of the benchmarks' samples: one definition for every
// benchmark binary, so that "median" and "p99" mean the same in all of
// their tables. Header-only.
#ifndef PS_TESTS_BENCH_STATS_H_
#define PS_TESTS_BENCH_STATS_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace ps::bench {

// The q-quantile (0 <= q <= 1) of `v` by nearest rank: the sorted value at
// index round(q * (n - 1)). 0 for no samples.
inline double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  const size_t index = static_cast<size_t>(
      std::lround(std::clamp(q, 0.0, 1.0) * static_cast<double>(v.size() - 1)));
  std::nth_element(v.begin(), v.begin() + index, v.end());
  return v[index];
}

// The median of `v`: the middle value, or the mean of the two middle ones
// for an even count. 0 for no samples.
inline double Median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  const size_t n = v.size();
  std::nth_element(v.begin(), v.begin() + n / 2, v.end());
  const double upper = v[n / 2];
  if (n % 2 == 1) return upper;
  return 0.5 * (*std::max_element(v.begin(), v.begin() + n / 2) + upper);
}

}  // namespace ps::bench

#endif  // PS_TESTS_BENCH_STATS_H_
