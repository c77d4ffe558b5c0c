// The seed of a chaos test's random schedule: $PS_CHAOS_SEED when set (to
// replay a schedule), else the current time. ChaosSeed() prints it with the
// replay hint, so every failing run names the schedule that failed.
#ifndef PS_TESTS_CHAOS_SEED_H_
#define PS_TESTS_CHAOS_SEED_H_

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace ps::testing {

inline uint32_t ChaosSeed() {
  uint32_t seed = static_cast<uint32_t>(absl::ToUnixNanos(absl::Now()));
  if (const char* env = std::getenv("PS_CHAOS_SEED"); env && *env) {
    uint32_t replayed = 0;
    if (absl::SimpleAtoi(env, &replayed)) seed = replayed;
  }
  std::printf("chaos seed %u (replay: PS_CHAOS_SEED=%u)\n", seed, seed);
  std::fflush(stdout);
  return seed;
}

}  // namespace ps::testing

#endif  // PS_TESTS_CHAOS_SEED_H_
