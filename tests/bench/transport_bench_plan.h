// What transport_bench measures, shared by its coordinator and its worker
// role: operations, dense sizes, repetitions, and the exchange each
// operation's ceiling moves.
#ifndef PS_TESTS_BENCH_TRANSPORT_BENCH_PLAN_H_
#define PS_TESTS_BENCH_TRANSPORT_BENCH_PLAN_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "tests/bench/transport_bench_ceiling.h"

namespace ps::bench {

constexpr uint64_t kDenseElements = 16ull << 20;  // the dense table: 64 MiB of floats
constexpr uint64_t kSparseIdSpace = 1 << 20;

struct BenchPlan {
  std::vector<uint64_t> sizes;  // dense payload bytes, 4 B .. 64 MiB
  std::vector<std::string> ops;  // push, pull, push_pull, sparse
  double reps_scale = 1.0;
  bool quick = false;

  // From the --sizes / --ops lists (comma-separated); sizes outside
  // [4 B, 64 MiB] or unparsable are left out.
  static BenchPlan Parse(absl::string_view sizes, absl::string_view ops, double reps_scale,
                         bool quick) {
    BenchPlan plan;
    for (absl::string_view s : absl::StrSplit(sizes, ',', absl::SkipEmpty())) {
      uint64_t b = 0;
      if (absl::SimpleAtoi(s, &b) && b >= 4 && b <= kDenseElements * 4) plan.sizes.push_back(b);
    }
    for (absl::string_view s : absl::StrSplit(ops, ',', absl::SkipEmpty())) {
      plan.ops.emplace_back(s);
    }
    plan.reps_scale = reps_scale;
    plan.quick = quick;
    return plan;
  }

  bool Enabled(absl::string_view op) const {
    return std::find(ops.begin(), ops.end(), op) != ops.end();
  }

  // Timed operations of a dense cell (and of every ceiling exchange moving
  // as many bytes): 2000 / 200 / 30 / 12 up to 4 KiB / 1 MiB / 16 MiB /
  // above, times reps_scale, a tenth with quick, at least 3.
  int Reps(uint64_t bytes) const {
    const int reps = bytes <= 4096 ? 2000 : bytes <= (1 << 20) ? 200 : bytes <= (16 << 20) ? 30 : 12;
    return Scaled(reps);
  }
  // Timed batches of a sparse cell: 400 / 80 of 1,000 / 10,000 ids.
  int SparseReps(size_t batch) const { return Scaled(batch <= 1000 ? 400 : 80); }

 private:
  int Scaled(int reps) const {
    reps = static_cast<int>(reps * reps_scale);
    return std::max(3, quick ? reps / 10 : reps);
  }
};

// The exchange the ceilings measure for one worker's operation: what one
// plain request/response of the same payload moves (up, down). `bytes` is
// the operation's payload (push-pull: both ways), `keys` its sparse ids.
inline Exchange ExchangeOf(absl::string_view op, uint64_t bytes, uint64_t keys) {
  if (op == "push") return {bytes, 1};
  if (op == "pull") return {0, bytes};
  if (op == "push_pull") return {bytes / 2, bytes / 2};
  if (op == "sparse_pull") return {keys * 8, bytes};
  return {keys * 8 + bytes, 1};  // sparse_push
}

}  // namespace ps::bench

#endif  // PS_TESTS_BENCH_TRANSPORT_BENCH_PLAN_H_
