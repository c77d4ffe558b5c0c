#include "server/initializer.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "xxhash.h"

namespace ps {
namespace {

uint64_t StreamSeed(uint64_t key, uint64_t seed) {
  return XXH64(&key, sizeof(key), seed);
}

// Draws values of one initializer from one seeded stream.
class ValueStream {
 public:
  ValueStream(const InitializerConfig& init, uint64_t key)
      : init_(init), rng_(StreamSeed(key, init.seed)) {}

  float Next() {
    switch (init_.type) {
      case InitializerType::kZeros:
        return 0.0f;
      case InitializerType::kConstant:
        return init_.value;
      case InitializerType::kUniform:
        return static_cast<float>(init_.low + (static_cast<double>(init_.high) -
                                               init_.low) * Unit());
      case InitializerType::kNormal: {
        const double u1 = 1.0 - Unit();  // (0, 1]: log is finite
        const double u2 = Unit();
        const double z = std::sqrt(-2.0 * std::log(u1)) *
                         std::cos(2.0 * 3.14159265358979323846 * u2);
        return static_cast<float>(init_.mean + init_.stddev * z);
      }
    }
    return 0.0f;
  }

  // Skips n values.
  void Skip(uint64_t n) {
    if (init_.type == InitializerType::kUniform) {
      rng_.discard(n);
    } else if (init_.type == InitializerType::kNormal) {
      rng_.discard(2 * n);
    }
  }

 private:
  double Unit() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

  const InitializerConfig& init_;
  std::mt19937_64 rng_;
};

}  // namespace

void InitDenseRange(const InitializerConfig& init, uint64_t begin,
                    absl::Span<float> out) {
  if (init.type == InitializerType::kZeros) {
    std::fill(out.begin(), out.end(), 0.0f);
    return;
  }
  if (init.type == InitializerType::kConstant) {
    std::fill(out.begin(), out.end(), init.value);
    return;
  }
  uint64_t pos = begin;
  const uint64_t end = begin + out.size();
  while (pos < end) {
    const uint64_t block = pos / kDenseInitBlock;
    const uint64_t block_end = std::min(end, (block + 1) * kDenseInitBlock);
    ValueStream stream(init, block);
    stream.Skip(pos - block * kDenseInitBlock);
    for (; pos < block_end; ++pos) out[pos - begin] = stream.Next();
  }
}

void InitSparseRow(const InitializerConfig& init, uint64_t id,
                   absl::Span<float> out) {
  ValueStream stream(init, id);
  for (float& v : out) v = stream.Next();
}

}  // namespace ps
