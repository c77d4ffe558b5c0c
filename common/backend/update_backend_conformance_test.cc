// Conformance suite for UpdateBackend implementations.
//
// Every backend runs the same cases (TEST_P over "cpu" and "cuda"; the CUDA
// instance skips, saying why, when this build or machine has no CUDA) and is
// compared with a float64 reference of the update rule in update_backend.h,
// written here independently of the backends' code.
//
// Tolerance (norm-wise, per tensor): max_i |got_i - ref_i| divided by
// max(max_i |ref_i|, 1e-3) must be <= 1e-5. Norm-wise rather than
// elementwise because a float32 result whose true value is close to 0 after
// cancellation (e.g. w - lr * update ~ 1e-3) carries the absolute rounding
// error of its O(1) operands, which elementwise relative error would blow up;
// with inputs ~U(-1, 1) every real bug (wrong term, wrong order, stale state)
// shows up as an O(lr) difference, far above 1e-5.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "absl/strings/string_view.h"
#include "common/backend/update_backend.h"
#include "common/config.h"
#include "common/piecewise_bytes.h"
#include "gtest/gtest.h"

namespace ps {
namespace {

constexpr double kTolerance = 1e-5;

// ---------------------------------------------------------------------------
// float64 reference

// `x` rounded to `type` (as a store of that element type keeps it).
double RoundTo(ValueType type, double x) {
  float f = static_cast<float>(x);
  if (type == ValueType::kFloat32) return x;
  const ValueTypeInfo& info = InfoOf(type);
  char bytes[4];
  info.encode(absl::MakeConstSpan(&f, 1), bytes);
  info.decode(absl::string_view(bytes, info.bytes), &f);
  return f;
}

struct RefStore {
  OptimizerConfig config;
  // Element types of the store under test: the reference rounds each
  // updated value to them (a float32 store is compared unrounded).
  StoreLayout layout;
  std::vector<double> w;
  std::vector<std::vector<double>> s;  // state slots, as the registry orders them
  std::vector<double> acc;

  RefStore(const OptimizerConfig& c, uint64_t size)
      : config(c), s(SlotsOf(c.type)) {
    Grow(std::vector<float>(size, 0.0f));
  }

  static int SlotsOf(const std::string& type) {
    if (type == "sgd") return 0;
    if (type == "momentum" || type == "adagrad") return 1;
    return 2;  // adam, adamw (m, v); ftrl (z, n)
  }
  int slots() const { return static_cast<int>(s.size()); }
  double p(const char* name) const { return config.param(name); }

  double InitialSlot(int slot) const {
    if (config.type == "adagrad") return p("initial_accumulator");
    if (config.type == "ftrl" && slot == 1) return p("initial_accumulator");
    return 0.0;
  }

  void Grow(const std::vector<float>& values) {
    for (float v : values) {
      w.push_back(RoundTo(layout.values, v));
      for (int j = 0; j < slots(); ++j) {
        s[j].push_back(RoundTo(layout.state, InitialSlot(j)));
      }
      acc.push_back(0.0);
    }
  }

  // The documented rules (the optimizer units' header comments), literally,
  // in double precision.
  void UpdateElement(uint64_t i, double g, int64_t t) {
    const OptimizerConfig& c = config;
    const double clip = c.clip_value;
    if (clip > 0) g = std::min(std::max(g, -clip), clip);
    const double lr = c.learning_rate;
    if (c.type != "adamw") g += static_cast<double>(c.weight_decay) * w[i];
    if (c.type == "sgd") {
      w[i] -= lr * g;
    } else if (c.type == "momentum") {
      const double mu = p("momentum");
      s[0][i] = mu * s[0][i] + g;
      w[i] -= lr * (p("nesterov") != 0 ? g + mu * s[0][i] : s[0][i]);
    } else if (c.type == "adagrad") {
      s[0][i] += g * g;
      w[i] -= lr * g / (std::sqrt(s[0][i]) + p("epsilon"));
    } else if (c.type == "adam" || c.type == "adamw") {
      if (c.type == "adamw") w[i] -= lr * c.weight_decay * w[i];
      const double b1 = p("beta1");
      const double b2 = p("beta2");
      s[0][i] = b1 * s[0][i] + (1 - b1) * g;
      s[1][i] = b2 * s[1][i] + (1 - b2) * g * g;
      const double m_hat = s[0][i] / (1 - std::pow(b1, static_cast<double>(t)));
      const double v_hat = s[1][i] / (1 - std::pow(b2, static_cast<double>(t)));
      w[i] -= lr * m_hat / (std::sqrt(v_hat) + p("epsilon"));
    } else if (c.type == "ftrl") {
      // McMahan et al. 2013, algorithm 1 (alpha = lr).
      double& z = s[0][i];
      double& n = s[1][i];
      const double sigma = (std::sqrt(n + g * g) - std::sqrt(n)) / lr;
      z += g - sigma * w[i];
      n += g * g;
      const double l1 = p("l1");
      w[i] = std::fabs(z) <= l1
                 ? 0.0
                 : -(z - (z > 0 ? l1 : -l1)) /
                       ((p("beta") + std::sqrt(n)) / lr + p("l2"));
    } else {
      ADD_FAILURE() << "no reference for optimizer " << c.type;
    }
    w[i] = RoundTo(layout.values, w[i]);
    for (int j = 0; j < slots(); ++j) s[j][i] = RoundTo(layout.state, s[j][i]);
  }

  void ApplyDense(uint64_t offset, const std::vector<float>& grad, float scale,
                  int64_t t) {
    for (size_t i = 0; i < grad.size(); ++i) {
      UpdateElement(offset + i,
                    static_cast<double>(grad[i]) * static_cast<double>(scale),
                    t);
    }
  }

  void ApplyRows(const std::vector<uint64_t>& rows, uint32_t dim,
                 const std::vector<float>& grad, float scale, int64_t t) {
    for (size_t r = 0; r < rows.size(); ++r) {
      for (uint32_t j = 0; j < dim; ++j) {
        UpdateElement(rows[r] * dim + j,
                      static_cast<double>(grad[r * dim + j]) * scale, t);
      }
    }
  }

  // The accumulator is summed in float order-independent double here; the
  // backends sum in float, a difference far below the tolerance.
  void ApplyAccumulated(float scale, int64_t t) {
    for (size_t i = 0; i < w.size(); ++i) {
      UpdateElement(i, acc[i] * static_cast<double>(scale), t);
      acc[i] = 0;
    }
  }

  void ApplyAccumulatedRows(const std::vector<uint64_t>& rows, uint32_t dim,
                            float scale, int64_t t) {
    for (uint64_t r : rows) {
      for (uint32_t j = 0; j < dim; ++j) {
        const uint64_t i = r * dim + j;
        UpdateElement(i, acc[i] * static_cast<double>(scale), t);
        acc[i] = 0;
      }
    }
  }
};

// ---------------------------------------------------------------------------
// helpers

std::vector<float> Uniform(std::mt19937* rng, size_t n, float lo = -1.0f,
                           float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> out(n);
  for (float& v : out) v = dist(*rng);
  return out;
}

// Norm-wise relative error (see the file comment).
double RelativeError(absl::Span<const float> got,
                     const std::vector<double>& ref, uint64_t ref_offset = 0) {
  double max_diff = 0.0;
  double max_ref = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double r = ref[ref_offset + i];
    max_diff = std::max(max_diff, std::fabs(static_cast<double>(got[i]) - r));
    max_ref = std::max(max_ref, std::fabs(r));
    if (std::isnan(got[i])) return INFINITY;
  }
  return max_diff / std::max(max_ref, 1e-3);
}

// Norm-wise tolerance for values stored as `type`: two units in the last
// place (the store computes in float32 and the reference in float64, so
// they may round a value to neighbouring half-precision numbers, and one
// such difference carries into later steps).
double ToleranceFor(ValueType type) {
  switch (type) {
    case ValueType::kFloat32:
      return kTolerance;
    case ValueType::kFloat16:
      return 2.0 * std::ldexp(1.0, -10);
    case ValueType::kBfloat16:
      return 2.0 * std::ldexp(1.0, -7);
  }
  return 0.0;
}

// Reads params and every slot of `store` and compares them with `ref`.
// Parameters and state feed each other, so both get the coarser type's
// tolerance.
void ExpectMatches(ParamStore* store, const RefStore& ref,
                   const std::string& where) {
  const double tolerance = std::max(ToleranceFor(ref.layout.values),
                                    ToleranceFor(ref.layout.state));
  ASSERT_EQ(store->size(), ref.w.size()) << where;
  std::vector<float> got(store->size());
  ASSERT_TRUE(store->Read(0, absl::MakeSpan(got)).ok()) << where;
  EXPECT_LE(RelativeError(got, ref.w), tolerance) << where << ": params";
  for (int s = 0; s < store->num_slots(); ++s) {
    ASSERT_TRUE(store->ReadSlot(s, 0, absl::MakeSpan(got)).ok()) << where;
    EXPECT_LE(RelativeError(got, ref.s[s]), tolerance)
        << where << ": slot " << s;
  }
}

struct OptimizerCase {
  std::string name;
  OptimizerConfig config;
};

// Every optimizer, each with weight decay and clipping off and on.
std::vector<OptimizerCase> AllOptimizerCases() {
  std::vector<OptimizerCase> cases;
  auto add = [&cases](std::string name, OptimizerConfig c) {
    c.learning_rate = 0.05f;
    cases.push_back({name, c});
    c.weight_decay = 0.01f;
    c.clip_value = 0.5f;  // clamps about half of U(-1, 1) gradients
    cases.push_back({name + "+wd+clip", c});
  };
  OptimizerConfig c;
  c.type = "sgd";
  add("sgd", c);
  c = OptimizerConfig();
  c.type = "momentum";
  c.params = {{"momentum", 0.9f}};
  add("momentum", c);
  c.params["nesterov"] = 1.0f;
  add("nesterov", c);
  c = OptimizerConfig();
  c.type = "adagrad";
  c.params = {{"epsilon", 1e-10f}, {"initial_accumulator", 0.1f}};
  add("adagrad", c);
  c = OptimizerConfig();
  c.type = "adam";
  c.params = {{"beta1", 0.9f}, {"beta2", 0.999f}, {"epsilon", 1e-8f}};
  add("adam", c);
  c.type = "adamw";
  add("adamw", c);
  c = OptimizerConfig();
  c.type = "ftrl";
  c.params = {{"beta", 1.0f}, {"l1", 0.01f}, {"l2", 0.1f},
              {"initial_accumulator", 0.1f}};
  add("ftrl", c);
  c.params["l1"] = 0.5f;  // most coordinates pinned at exactly 0
  add("ftrl-sparse", c);
  return cases;
}

// ---------------------------------------------------------------------------
// fixture

class UpdateBackendConformanceTest
    : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "cpu") {
      backend_ = CreateCpuUpdateBackend();
      ASSERT_EQ(backend_->name(), "cpu");
      return;
    }
    absl::StatusOr<std::unique_ptr<UpdateBackend>> cuda =
        CreateUpdateBackend(DeviceKind::kCuda);
    if (!cuda.ok()) {
      ASSERT_EQ(cuda.status().code(), absl::StatusCode::kFailedPrecondition)
          << cuda.status();
      GTEST_SKIP() << "CUDA backend not available, GPU conformance not run: "
                   << cuda.status().message();
    }
    backend_ = std::move(cuda).value();
    ASSERT_TRUE(absl::StartsWith(backend_->name(), "cuda:"))
        << backend_->name();
  }

  std::unique_ptr<ParamStore> NewStore(const OptimizerConfig& config,
                                       uint64_t size) {
    absl::StatusOr<std::unique_ptr<ParamStore>> store =
        backend_->CreateStore(config, size);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? std::move(store).value() : nullptr;
  }

  // A store of ref->w.size() random parameters, also written to `ref`.
  std::unique_ptr<ParamStore> NewRandomStore(const OptimizerConfig& config,
                                             std::mt19937* rng, RefStore* ref) {
    std::unique_ptr<ParamStore> store = NewStore(config, ref->w.size());
    if (store == nullptr) return nullptr;
    const std::vector<float> init = Uniform(rng, ref->w.size());
    EXPECT_TRUE(store->Write(0, init).ok());
    ref->w.assign(init.begin(), init.end());
    return store;
  }

  std::unique_ptr<UpdateBackend> backend_;
};

// Sizes not multiples of 4 and offsets that are not either, so vectorized
// paths' heads and tails are exercised.
constexpr uint64_t kDenseSize = 4099;

TEST_P(UpdateBackendConformanceTest, FreshStoreIsZeroWithInitialState) {
  for (const OptimizerCase& oc : AllOptimizerCases()) {
    std::unique_ptr<ParamStore> store = NewStore(oc.config, 37);
    ASSERT_NE(store, nullptr);
    RefStore ref(oc.config, 37);
    EXPECT_EQ(store->num_slots(), ref.slots()) << oc.name;
    ExpectMatches(store.get(), ref, oc.name);
    std::vector<float> slot(37, -1.0f);
    if (store->num_slots() > 0) {
      ASSERT_TRUE(store->ReadSlot(0, 0, absl::MakeSpan(slot)).ok());
      const float want = oc.config.type == "adagrad" ? 0.1f : 0.0f;
      for (float v : slot) ASSERT_EQ(v, want) << oc.name;
    }
  }
}

TEST_P(UpdateBackendConformanceTest, DenseUpdatesMatchReference) {
  std::mt19937 rng(1234);
  for (const OptimizerCase& oc : AllOptimizerCases()) {
    SCOPED_TRACE(oc.name);
    RefStore ref(oc.config, kDenseSize);
    std::unique_ptr<ParamStore> store = NewRandomStore(oc.config, &rng, &ref);
    ASSERT_NE(store, nullptr);
    for (int64_t t = 1; t <= 5; ++t) {
      // Whole store, then a sub-range at an odd offset.
      const std::vector<float> g = Uniform(&rng, kDenseSize);
      const float scale = t == 3 ? 0.5f : 1.0f;
      ASSERT_TRUE(store->ApplyDense(0, g, scale, t).ok());
      ref.ApplyDense(0, g, scale, t);
      const std::vector<float> part = Uniform(&rng, 1001);
      ASSERT_TRUE(store->ApplyDense(13, part, 1.0f, t).ok());
      ref.ApplyDense(13, part, 1.0f, t);
      ExpectMatches(store.get(), ref, absl::StrCat("step ", t));
    }
  }
}

// Dense pushes may return before their update ran on the device (the CUDA
// store); the caller's gradient buffer is reused at once, and row updates
// (which share the store's staging buffers) come straight after pushes.
TEST_P(UpdateBackendConformanceTest, BackToBackPushesReuseTheCallersBuffer) {
  std::mt19937 rng(4321);
  constexpr uint32_t kDim = 7;
  for (const OptimizerCase& oc : AllOptimizerCases()) {
    SCOPED_TRACE(oc.name);
    RefStore ref(oc.config, kDenseSize);
    std::unique_ptr<ParamStore> store = NewRandomStore(oc.config, &rng, &ref);
    ASSERT_NE(store, nullptr);
    std::vector<float> buffer;  // one buffer, overwritten after every call
    for (int64_t t = 1; t <= 6; ++t) {
      for (int k = 0; k < 3; ++k) {
        buffer = Uniform(&rng, kDenseSize - 7 * k);
        ASSERT_TRUE(store->ApplyDense(7 * k, buffer, 1.0f, t).ok());
        ref.ApplyDense(7 * k, buffer, 1.0f, t);
      }
      const std::vector<uint64_t> rows = {3, 1, 500, 77};
      buffer = Uniform(&rng, rows.size() * kDim);
      ASSERT_TRUE(store->ApplyRows(rows, kDim, buffer, 0.5f, t).ok());
      ref.ApplyRows(rows, kDim, buffer, 0.5f, t);
      buffer.assign(buffer.size(), 1e30f);  // garbage if still being read
    }
    ExpectMatches(store.get(), ref, "after back-to-back pushes");
  }
}

TEST_P(UpdateBackendConformanceTest, RowUpdatesMatchReference) {
  std::mt19937 rng(99);
  constexpr uint32_t kDim = 7;
  constexpr uint64_t kRows = 50;
  for (const OptimizerCase& oc : AllOptimizerCases()) {
    SCOPED_TRACE(oc.name);
    std::unique_ptr<ParamStore> store = NewStore(oc.config, kRows * kDim);
    ASSERT_NE(store, nullptr);
    RefStore ref(oc.config, kRows * kDim);
    const std::vector<float> init = Uniform(&rng, kRows * kDim);
    ASSERT_TRUE(store->Write(0, init).ok());
    ref.w.assign(init.begin(), init.end());
    for (int64_t t = 1; t <= 4; ++t) {
      // A random subset of distinct rows in random order.
      std::vector<uint64_t> rows(kRows);
      for (uint64_t r = 0; r < kRows; ++r) rows[r] = r;
      std::shuffle(rows.begin(), rows.end(), rng);
      rows.resize(10 + 5 * t);
      const std::vector<float> g = Uniform(&rng, rows.size() * kDim);
      ASSERT_TRUE(store->ApplyRows(rows, kDim, g, 0.75f, t).ok());
      ref.ApplyRows(rows, kDim, g, 0.75f, t);
      ExpectMatches(store.get(), ref, absl::StrCat("step ", t));

      std::vector<float> got(rows.size() * kDim);
      ASSERT_TRUE(store->ReadRows(rows, kDim, absl::MakeSpan(got)).ok());
      for (size_t r = 0; r < rows.size(); ++r) {
        std::vector<float> direct(kDim);
        ASSERT_TRUE(store->Read(rows[r] * kDim, absl::MakeSpan(direct)).ok());
        for (uint32_t j = 0; j < kDim; ++j) {
          ASSERT_EQ(got[r * kDim + j], direct[j]) << "ReadRows row " << r;
        }
      }
    }
  }
}

TEST_P(UpdateBackendConformanceTest, SyncAggregationMatchesMeanGradient) {
  std::mt19937 rng(7);
  constexpr int kWorkers = 3;
  for (const OptimizerCase& oc : AllOptimizerCases()) {
    SCOPED_TRACE(oc.name);
    RefStore ref(oc.config, kDenseSize);
    std::unique_ptr<ParamStore> store = NewRandomStore(oc.config, &rng, &ref);
    ASSERT_NE(store, nullptr);
    for (int64_t t = 1; t <= 3; ++t) {
      for (int k = 0; k < kWorkers; ++k) {
        // Each worker pushes the whole range in two chunks, the split at an
        // odd offset.
        const std::vector<float> g = Uniform(&rng, kDenseSize);
        const std::vector<float> head(g.begin(), g.begin() + 2001);
        const std::vector<float> tail(g.begin() + 2001, g.end());
        ASSERT_TRUE(store->AccumulateDense(0, head).ok());
        ASSERT_TRUE(store->AccumulateDense(2001, tail).ok());
        for (size_t i = 0; i < g.size(); ++i) ref.acc[i] += g[i];
      }
      ASSERT_TRUE(store->ApplyAccumulated(1.0f / kWorkers, t).ok());
      ref.ApplyAccumulated(1.0f / kWorkers, t);
      ExpectMatches(store.get(), ref, absl::StrCat("step ", t));
    }
    // The accumulator is zero after ApplyAccumulated: applying it again is a
    // zero-gradient step (only weight decay moves w).
    ASSERT_TRUE(store->ApplyAccumulated(1.0f, 4).ok());
    ref.ApplyAccumulated(1.0f, 4);
    ExpectMatches(store.get(), ref, "empty accumulator");
  }
}

// `values` as bytes at a misaligned address, cut into random pieces (floats
// split across them), as a request's values arrive in gRPC's slices.
struct ScatteredFloats {
  ScatteredFloats(const std::vector<float>& values, std::mt19937* rng) {
    storage.assign(1 + (*rng)() % 3, 'x');
    const size_t start = storage.size();
    storage.append(reinterpret_cast<const char*>(values.data()),
                   values.size() * sizeof(float));
    const absl::string_view all = absl::string_view(storage).substr(start);
    for (size_t at = 0; at < all.size();) {
      const size_t n = std::min<size_t>(all.size() - at, 1 + (*rng)() % 3000);
      pieces.push_back(all.substr(at, n));
      at += n;
    }
  }
  PiecewiseBytes bytes() const { return PiecewiseBytes(pieces); }

  std::string storage;
  std::vector<absl::string_view> pieces;
};

TEST_P(UpdateBackendConformanceTest, PiecewiseGradientsMatchReference) {
  std::mt19937 rng(4321);
  for (const OptimizerCase& oc : AllOptimizerCases()) {
    SCOPED_TRACE(oc.name);
    RefStore ref(oc.config, kDenseSize);
    std::unique_ptr<ParamStore> store = NewRandomStore(oc.config, &rng, &ref);
    ASSERT_NE(store, nullptr);
    for (int64_t t = 1; t <= 3; ++t) {
      const std::vector<float> g = Uniform(&rng, kDenseSize - 13);
      const ScatteredFloats scattered(g, &rng);
      ASSERT_TRUE(store->ApplyDensePieces(13, scattered.bytes(), 0.5f, t).ok());
      ref.ApplyDense(13, g, 0.5f, t);
      ExpectMatches(store.get(), ref, absl::StrCat("apply step ", t));
    }
    // Sync aggregation from pieces: two workers' gradients, then the mean.
    for (int k = 0; k < 2; ++k) {
      const std::vector<float> g = Uniform(&rng, kDenseSize);
      const ScatteredFloats scattered(g, &rng);
      ASSERT_TRUE(store->AccumulateDensePieces(0, scattered.bytes()).ok());
      for (size_t i = 0; i < g.size(); ++i) ref.acc[i] += g[i];
    }
    ASSERT_TRUE(store->ApplyAccumulated(0.5f, 4).ok());
    ref.ApplyAccumulated(0.5f, 4);
    ExpectMatches(store.get(), ref, "accumulated from pieces");
    // Past the end: OUT_OF_RANGE, nothing applied.
    const std::vector<float> g = Uniform(&rng, 10);
    const ScatteredFloats scattered(g, &rng);
    EXPECT_EQ(store->ApplyDensePieces(kDenseSize - 5, scattered.bytes(), 1.0f, 5)
                  .code(),
              absl::StatusCode::kOutOfRange);
    ExpectMatches(store.get(), ref, "after a rejected push");
  }
}

TEST_P(UpdateBackendConformanceTest, SparseSyncAggregationMatchesReference) {
  std::mt19937 rng(11);
  constexpr uint32_t kDim = 5;
  constexpr uint64_t kRows = 40;
  for (const OptimizerCase& oc : AllOptimizerCases()) {
    SCOPED_TRACE(oc.name);
    std::unique_ptr<ParamStore> store = NewStore(oc.config, kRows * kDim);
    ASSERT_NE(store, nullptr);
    RefStore ref(oc.config, kRows * kDim);
    const std::vector<float> init = Uniform(&rng, kRows * kDim);
    ASSERT_TRUE(store->Write(0, init).ok());
    ref.w.assign(init.begin(), init.end());
    for (int64_t t = 1; t <= 3; ++t) {
      std::vector<uint64_t> touched;
      for (int k = 0; k < 2; ++k) {
        std::vector<uint64_t> rows(kRows);
        for (uint64_t r = 0; r < kRows; ++r) rows[r] = r;
        std::shuffle(rows.begin(), rows.end(), rng);
        rows.resize(12);
        const std::vector<float> g = Uniform(&rng, rows.size() * kDim);
        ASSERT_TRUE(store->AccumulateRows(rows, kDim, g).ok());
        for (size_t r = 0; r < rows.size(); ++r) {
          for (uint32_t j = 0; j < kDim; ++j) {
            ref.acc[rows[r] * kDim + j] += g[r * kDim + j];
          }
          if (std::find(touched.begin(), touched.end(), rows[r]) ==
              touched.end()) {
            touched.push_back(rows[r]);
          }
        }
      }
      ASSERT_TRUE(store->ApplyAccumulatedRows(touched, kDim, 0.5f, t).ok());
      ref.ApplyAccumulatedRows(touched, kDim, 0.5f, t);
      ExpectMatches(store.get(), ref, absl::StrCat("step ", t));
    }
  }
}

TEST_P(UpdateBackendConformanceTest, AccumulateRowsAddsRepeatedRows) {
  OptimizerConfig c;
  c.type = "sgd";
  c.learning_rate = 1.0f;
  std::unique_ptr<ParamStore> store = NewStore(c, 6);
  ASSERT_NE(store, nullptr);
  const std::vector<uint64_t> rows = {1, 1, 0};
  const std::vector<float> g = {0.25f, 0.5f, 1.0f, 2.0f, 4.0f, 8.0f};
  ASSERT_TRUE(store->AccumulateRows(rows, 2, g).ok());
  ASSERT_TRUE(store->ApplyAccumulated(1.0f, 1).ok());
  std::vector<float> w(6);
  ASSERT_TRUE(store->Read(0, absl::MakeSpan(w)).ok());
  // Exact in float: sums of powers of two.
  EXPECT_EQ(w, (std::vector<float>{-4.0f, -8.0f, -1.25f, -2.5f, 0.0f, 0.0f}));
}

TEST_P(UpdateBackendConformanceTest, AppendGrowsWithFreshState) {
  std::mt19937 rng(5);
  for (const OptimizerCase& oc : AllOptimizerCases()) {
    SCOPED_TRACE(oc.name);
    constexpr uint32_t kDim = 6;
    std::unique_ptr<ParamStore> store = NewStore(oc.config, 0);
    ASSERT_NE(store, nullptr);
    RefStore ref(oc.config, 0);
    int64_t t = 0;
    // Rows are appended in batches (exercising growth) and updated in
    // between, so state of old rows must survive each growth and new rows
    // must start fresh; the accumulator is used from the second batch on.
    for (int batch = 0; batch < 6; ++batch) {
      const std::vector<float> values = Uniform(&rng, (3 + batch * 7) * kDim);
      ASSERT_TRUE(store->Append(values).ok());
      ref.Grow(values);
      const uint64_t rows_now = store->size() / kDim;
      ASSERT_EQ(store->size(), ref.w.size());
      std::vector<uint64_t> rows;
      for (uint64_t r = 0; r < rows_now; r += 2) rows.push_back(r);
      const std::vector<float> g = Uniform(&rng, rows.size() * kDim);
      ++t;
      if (batch == 0) {
        ASSERT_TRUE(store->ApplyRows(rows, kDim, g, 1.0f, t).ok());
        ref.ApplyRows(rows, kDim, g, 1.0f, t);
      } else {
        ASSERT_TRUE(store->AccumulateRows(rows, kDim, g).ok());
        for (size_t r = 0; r < rows.size(); ++r) {
          for (uint32_t j = 0; j < kDim; ++j) {
            ref.acc[rows[r] * kDim + j] += g[r * kDim + j];
          }
        }
        ASSERT_TRUE(store->ApplyAccumulatedRows(rows, kDim, 1.0f, t).ok());
        ref.ApplyAccumulatedRows(rows, kDim, 1.0f, t);
      }
      ExpectMatches(store.get(), ref, absl::StrCat("batch ", batch));
    }
    // A dense pass over everything, then an empty append is a no-op.
    const std::vector<float> g = Uniform(&rng, store->size());
    ASSERT_TRUE(store->ApplyDense(0, g, 1.0f, t + 1).ok());
    ref.ApplyDense(0, g, 1.0f, t + 1);
    ASSERT_TRUE(store->Append({}).ok());
    ExpectMatches(store.get(), ref, "final dense");
  }
}

TEST_P(UpdateBackendConformanceTest, WriteReadAndSlotsRoundTrip) {
  std::mt19937 rng(3);
  OptimizerConfig c;
  c.type = "adam";
  std::unique_ptr<ParamStore> store = NewStore(c, 1000);
  ASSERT_NE(store, nullptr);
  ASSERT_EQ(store->num_slots(), 2);
  const std::vector<float> w = Uniform(&rng, 1000);
  const std::vector<float> m = Uniform(&rng, 333);
  const std::vector<float> v = Uniform(&rng, 1000, 0.0f, 1.0f);
  ASSERT_TRUE(store->Write(0, w).ok());
  ASSERT_TRUE(store->WriteSlot(0, 501, m).ok());
  ASSERT_TRUE(store->WriteSlot(1, 0, v).ok());
  std::vector<float> got(1000);
  ASSERT_TRUE(store->Read(0, absl::MakeSpan(got)).ok());
  EXPECT_EQ(got, w);
  std::vector<float> got_m(333);
  ASSERT_TRUE(store->ReadSlot(0, 501, absl::MakeSpan(got_m)).ok());
  EXPECT_EQ(got_m, m);
  std::vector<float> untouched(501);
  ASSERT_TRUE(store->ReadSlot(0, 0, absl::MakeSpan(untouched)).ok());
  EXPECT_EQ(untouched, std::vector<float>(501, 0.0f));
  ASSERT_TRUE(store->ReadSlot(1, 0, absl::MakeSpan(got)).ok());
  EXPECT_EQ(got, v);
  // Partial overwrite at an odd offset.
  const std::vector<float> patch = Uniform(&rng, 17);
  ASSERT_TRUE(store->Write(983, patch).ok());
  std::vector<float> tail(17);
  ASSERT_TRUE(store->Read(983, absl::MakeSpan(tail)).ok());
  EXPECT_EQ(tail, patch);

  // Restored state drives the next update: continue from (w, m, v) at t = 8.
  RefStore ref(c, 1000);
  ref.w.assign(w.begin(), w.end());
  for (size_t i = 983; i < 1000; ++i) ref.w[i] = patch[i - 983];
  for (size_t i = 0; i < 333; ++i) ref.s[0][501 + i] = m[i];
  ref.s[1].assign(v.begin(), v.end());
  const std::vector<float> g = Uniform(&rng, 1000);
  ASSERT_TRUE(store->ApplyDense(0, g, 1.0f, 8).ok());
  ref.ApplyDense(0, g, 1.0f, 8);
  ExpectMatches(store.get(), ref, "after restore");
}

TEST_P(UpdateBackendConformanceTest, LargeTransfersCrossChunkBoundaries) {
  // Larger than one staging chunk of the CUDA backend (8 Mi floats), and
  // misaligned, so chunked, double-buffered paths are covered; on the CPU
  // this is a plain big update.
  constexpr uint64_t kSize = (uint64_t{8} << 20) + 4097;
  std::mt19937 rng(21);
  OptimizerConfig c;
  c.type = "momentum";
  c.learning_rate = 0.1f;
  c.params["nesterov"] = 1.0f;
  std::unique_ptr<ParamStore> store = NewStore(c, kSize);
  ASSERT_NE(store, nullptr);
  RefStore ref(c, kSize);
  const std::vector<float> init = Uniform(&rng, kSize);
  ASSERT_TRUE(store->Write(0, init).ok());
  ref.w.assign(init.begin(), init.end());
  const std::vector<float> g = Uniform(&rng, kSize - 3);
  ASSERT_TRUE(store->ApplyDense(3, g, 1.0f, 1).ok());
  ref.ApplyDense(3, g, 1.0f, 1);
  ExpectMatches(store.get(), ref, "big");
}

TEST_P(UpdateBackendConformanceTest, RejectsBadArgumentsWithExactCodes) {
  OptimizerConfig c;
  c.type = "momentum";
  std::unique_ptr<ParamStore> store = NewStore(c, 100);
  ASSERT_NE(store, nullptr);
  std::vector<float> buf(10, 1.0f);
  std::vector<float> big(101, 1.0f);
  const auto kOutOfRange = absl::StatusCode::kOutOfRange;
  const auto kInvalid = absl::StatusCode::kInvalidArgument;

  absl::Status s = store->Read(95, absl::MakeSpan(buf));
  EXPECT_EQ(s.code(), kOutOfRange) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "[95, 95 + 10)")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "100")) << s;
  EXPECT_EQ(store->Read(101, absl::MakeSpan(buf.data(), 0)).code(),
            kOutOfRange);
  EXPECT_EQ(store->Read(UINT64_MAX, absl::MakeSpan(buf)).code(), kOutOfRange);
  EXPECT_EQ(store->Write(91, buf).code(), kOutOfRange);
  EXPECT_EQ(store->Write(0, big).code(), kOutOfRange);
  EXPECT_EQ(store->ApplyDense(91, buf, 1.0f, 1).code(), kOutOfRange);
  EXPECT_EQ(store->ApplyDense(UINT64_MAX - 2, buf, 1.0f, 1).code(),
            kOutOfRange);
  EXPECT_EQ(store->AccumulateDense(95, buf).code(), kOutOfRange);
  EXPECT_EQ(store->ReadSlot(0, 95, absl::MakeSpan(buf)).code(), kOutOfRange);
  EXPECT_EQ(store->WriteSlot(0, 95, buf).code(), kOutOfRange);

  // Slots that do not exist, bad steps.
  EXPECT_EQ(store->ReadSlot(1, 0, absl::MakeSpan(buf)).code(), kInvalid);
  EXPECT_EQ(store->ReadSlot(-1, 0, absl::MakeSpan(buf)).code(), kInvalid);
  EXPECT_EQ(store->WriteSlot(2, 0, buf).code(), kInvalid);
  EXPECT_EQ(store->ApplyDense(0, buf, 1.0f, 0).code(), kInvalid);
  EXPECT_EQ(store->ApplyAccumulated(1.0f, -1).code(), kInvalid);

  // Rows: 100 elements of dim 10 = rows 0..9.
  const std::vector<uint64_t> rows = {2, 10};
  std::vector<float> two_rows(20, 1.0f);
  s = store->ApplyRows(rows, 10, two_rows, 1.0f, 1);
  EXPECT_EQ(s.code(), kOutOfRange) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "row 10")) << s;
  EXPECT_EQ(store->ReadRows(rows, 10, absl::MakeSpan(two_rows)).code(),
            kOutOfRange);
  EXPECT_EQ(store->AccumulateRows(rows, 10, two_rows).code(), kOutOfRange);
  EXPECT_EQ(store->ApplyAccumulatedRows(rows, 10, 1.0f, 1).code(), kOutOfRange);
  const std::vector<uint64_t> huge_row = {UINT64_MAX / 10};
  EXPECT_EQ(store->ApplyAccumulatedRows(huge_row, 10, 1.0f, 1).code(),
            kOutOfRange);
  const std::vector<uint64_t> ok_rows = {2, 3};
  // Mismatched span sizes and dim 0.
  EXPECT_EQ(store->ApplyRows(ok_rows, 10, buf, 1.0f, 1).code(), kInvalid);
  EXPECT_EQ(store->ReadRows(ok_rows, 10, absl::MakeSpan(big)).code(), kInvalid);
  EXPECT_EQ(store->AccumulateRows(ok_rows, 9, two_rows).code(), kInvalid);
  EXPECT_EQ(store->ApplyRows(ok_rows, 0, two_rows, 1.0f, 1).code(), kInvalid);
  EXPECT_EQ(store->ApplyAccumulatedRows(ok_rows, 0, 1.0f, 1).code(), kInvalid);

  // Nothing above changed the store.
  std::vector<float> all(100, -1.0f);
  ASSERT_TRUE(store->Read(0, absl::MakeSpan(all)).ok());
  EXPECT_EQ(all, std::vector<float>(100, 0.0f));
  ASSERT_TRUE(store->ReadSlot(0, 0, absl::MakeSpan(all)).ok());
  EXPECT_EQ(all, std::vector<float>(100, 0.0f));
}

TEST_P(UpdateBackendConformanceTest, RejectsBadOptimizerConfigs) {
  auto expect_invalid = [this](OptimizerConfig c, const char* field) {
    absl::StatusOr<std::unique_ptr<ParamStore>> store =
        backend_->CreateStore(c, 10);
    ASSERT_FALSE(store.ok()) << field;
    EXPECT_EQ(store.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(absl::StrContains(store.status().message(), field))
        << store.status();
  };
  OptimizerConfig c;
  c.learning_rate = -0.1f;
  expect_invalid(c, "learning_rate");
  c = OptimizerConfig();
  c.learning_rate = NAN;
  expect_invalid(c, "learning_rate");
  c = OptimizerConfig();
  c.type = "momentum";
  c.params["momentum"] = 1.0f;
  expect_invalid(c, "momentum");
  c = OptimizerConfig();
  c.type = "adam";
  c.params["beta2"] = 1.5f;
  expect_invalid(c, "beta2");
  c = OptimizerConfig();
  c.type = "adagrad";
  c.params["epsilon"] = 0.0f;
  expect_invalid(c, "epsilon");
  c = OptimizerConfig();
  c.type = "ftrl";
  c.params["l1"] = -1.0f;
  expect_invalid(c, "l1");
  c = OptimizerConfig();
  c.type = "adamax";
  expect_invalid(c, "unknown optimizer 'adamax'");
  c = OptimizerConfig();
  c.clip_value = -1.0f;
  expect_invalid(c, "clip_value");
  c = OptimizerConfig();
  c.weight_decay = INFINITY;
  expect_invalid(c, "weight_decay");
}

// ---------------------------------------------------------------------------
// Storage types (StoreLayout) and row reuse.

std::vector<StoreLayout> HalfLayouts() {
  const ValueType f32 = ValueType::kFloat32;
  const ValueType f16 = ValueType::kFloat16;
  const ValueType bf16 = ValueType::kBfloat16;
  return {{f16, f32}, {bf16, f32}, {f16, f16}, {bf16, bf16}, {f32, f16}};
}

std::string LayoutName(const StoreLayout& l) {
  return absl::StrCat(ValueTypeName(l.values), "/", ValueTypeName(l.state));
}

TEST_P(UpdateBackendConformanceTest, HalfPrecisionValuesRoundTripExactly) {
  std::mt19937 rng(21);
  OptimizerConfig c;
  c.type = "adam";
  for (const StoreLayout& layout : HalfLayouts()) {
    SCOPED_TRACE(LayoutName(layout));
    absl::StatusOr<std::unique_ptr<ParamStore>> store =
        backend_->CreateStore(c, 0, layout);
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_EQ((*store)->layout(), layout);
    // Values over many binades, subnormals of float16, and beyond its range.
    std::vector<float> values = Uniform(&rng, 300, -4.0f, 4.0f);
    values.insert(values.end(), {1e-6f, -3e-7f, 70000.0f, -1e5f, 0.0f, 1.0f});
    const uint32_t dim = 6;
    values.resize(values.size() / dim * dim);
    ASSERT_TRUE((*store)->Append(values).ok());
    std::vector<float> got(values.size());
    ASSERT_TRUE((*store)->Read(0, absl::MakeSpan(got)).ok());
    std::vector<uint64_t> rows(values.size() / dim);
    for (uint64_t r = 0; r < rows.size(); ++r) rows[r] = rows.size() - 1 - r;
    std::vector<float> by_rows(values.size());
    ASSERT_TRUE((*store)->ReadRows(rows, dim, absl::MakeSpan(by_rows)).ok());
    for (size_t i = 0; i < values.size(); ++i) {
      const float want =
          static_cast<float>(RoundTo(layout.values, values[i]));
      ASSERT_EQ(got[i], want) << "element " << i << " = " << values[i];
      const size_t r = i / dim;
      ASSERT_EQ(by_rows[(rows.size() - 1 - r) * dim + i % dim], want);
    }
    // State slots round to the state type the same way.
    std::vector<float> state = Uniform(&rng, values.size());
    ASSERT_TRUE((*store)->WriteSlot(1, 0, state).ok());
    ASSERT_TRUE((*store)->ReadSlot(1, 0, absl::MakeSpan(got)).ok());
    for (size_t i = 0; i < state.size(); ++i) {
      ASSERT_EQ(got[i], static_cast<float>(RoundTo(layout.state, state[i])));
    }
  }
}

TEST_P(UpdateBackendConformanceTest, HalfPrecisionUpdatesMatchRoundedReference) {
  constexpr uint32_t kDim = 9;
  constexpr uint64_t kRows = 40;
  for (const StoreLayout& layout : HalfLayouts()) {
    std::mt19937 rng(31);
    for (const OptimizerCase& oc : AllOptimizerCases()) {
      SCOPED_TRACE(absl::StrCat(LayoutName(layout), " ", oc.name));
      absl::StatusOr<std::unique_ptr<ParamStore>> created =
          backend_->CreateStore(oc.config, kRows * kDim, layout);
      ASSERT_TRUE(created.ok()) << created.status();
      ParamStore* store = created->get();
      RefStore ref(oc.config, 0);
      ref.layout = layout;
      ref.Grow(std::vector<float>(kRows * kDim, 0.0f));
      const std::vector<float> init = Uniform(&rng, kRows * kDim);
      ASSERT_TRUE(store->Write(0, init).ok());
      for (size_t i = 0; i < init.size(); ++i) {
        ref.w[i] = RoundTo(layout.values, init[i]);
      }
      for (int64_t t = 1; t <= 4; ++t) {
        std::vector<uint64_t> rows(kRows);
        for (uint64_t r = 0; r < kRows; ++r) rows[r] = r;
        std::shuffle(rows.begin(), rows.end(), rng);
        rows.resize(15);
        const std::vector<float> g = Uniform(&rng, rows.size() * kDim);
        ASSERT_TRUE(store->ApplyRows(rows, kDim, g, 0.5f, t).ok());
        ref.ApplyRows(rows, kDim, g, 0.5f, t);
        // Sync path: accumulated rows, then a dense step over everything.
        const std::vector<float> a = Uniform(&rng, rows.size() * kDim);
        ASSERT_TRUE(store->AccumulateRows(rows, kDim, a).ok());
        for (size_t r = 0; r < rows.size(); ++r) {
          for (uint32_t j = 0; j < kDim; ++j) {
            ref.acc[rows[r] * kDim + j] += a[r * kDim + j];
          }
        }
        ASSERT_TRUE(store->ApplyAccumulatedRows(rows, kDim, 1.0f, t).ok());
        ref.ApplyAccumulatedRows(rows, kDim, 1.0f, t);
        const std::vector<float> d = Uniform(&rng, kRows * kDim - 3);
        ASSERT_TRUE(store->ApplyDense(3, d, 1.0f, t).ok());
        ref.ApplyDense(3, d, 1.0f, t);
        ExpectMatches(store, ref, absl::StrCat("step ", t));
      }
    }
  }
}

TEST_P(UpdateBackendConformanceTest, ResetRowsMakesFreshRows) {
  std::mt19937 rng(41);
  constexpr uint32_t kDim = 5;
  constexpr uint64_t kRows = 12;
  std::vector<StoreLayout> layouts = HalfLayouts();
  layouts.insert(layouts.begin(), StoreLayout());
  for (const StoreLayout& layout : layouts) {
    for (const OptimizerCase& oc : AllOptimizerCases()) {
      SCOPED_TRACE(absl::StrCat(LayoutName(layout), " ", oc.name));
      absl::StatusOr<std::unique_ptr<ParamStore>> created =
          backend_->CreateStore(oc.config, 0, layout);
      ASSERT_TRUE(created.ok()) << created.status();
      ParamStore* store = created->get();
      RefStore ref(oc.config, 0);
      ref.layout = layout;
      const std::vector<float> init = Uniform(&rng, kRows * kDim);
      ASSERT_TRUE(store->Append(init).ok());
      ref.Grow(init);
      std::vector<uint64_t> all(kRows);
      for (uint64_t r = 0; r < kRows; ++r) all[r] = r;
      // Every row gets optimizer state and a pending accumulated gradient.
      std::vector<float> g = Uniform(&rng, kRows * kDim);
      ASSERT_TRUE(store->ApplyRows(all, kDim, g, 1.0f, 1).ok());
      ref.ApplyRows(all, kDim, g, 1.0f, 1);
      g = Uniform(&rng, kRows * kDim);
      ASSERT_TRUE(store->AccumulateRows(all, kDim, g).ok());
      // Rows 7 and 2 are reused: new values, fresh state, no gradient.
      const std::vector<uint64_t> reused = {7, 2};
      const std::vector<float> fresh = Uniform(&rng, reused.size() * kDim);
      ASSERT_TRUE(store->ResetRows(reused, kDim, fresh).ok());
      for (size_t r = 0; r < reused.size(); ++r) {
        for (uint32_t j = 0; j < kDim; ++j) {
          const uint64_t i = reused[r] * kDim + j;
          ref.w[i] = RoundTo(layout.values, fresh[r * kDim + j]);
          for (int q = 0; q < ref.slots(); ++q) {
            ref.s[q][i] = RoundTo(layout.state, ref.InitialSlot(q));
          }
        }
      }
      for (uint64_t r = 0; r < kRows; ++r) {
        const bool was_reset = r == 7 || r == 2;
        for (uint32_t j = 0; j < kDim; ++j) {
          ref.acc[r * kDim + j] = was_reset ? 0.0 : g[r * kDim + j];
        }
      }
      ExpectMatches(store, ref, "after ResetRows");
      ASSERT_TRUE(store->ApplyAccumulatedRows(all, kDim, 1.0f, 2).ok());
      ref.ApplyAccumulatedRows(all, kDim, 1.0f, 2);
      ExpectMatches(store, ref, "accumulated step after ResetRows");
      // ReadSlotRows agrees with the reference row by row.
      for (int q = 0; q < store->num_slots(); ++q) {
        std::vector<float> got(reused.size() * kDim);
        ASSERT_TRUE(
            store->ReadSlotRows(q, reused, kDim, absl::MakeSpan(got)).ok());
        for (size_t r = 0; r < reused.size(); ++r) {
          for (uint32_t j = 0; j < kDim; ++j) {
            EXPECT_NEAR(got[r * kDim + j], ref.s[q][reused[r] * kDim + j],
                        1e-6 + 1e-2 * std::fabs(ref.s[q][reused[r] * kDim + j]));
          }
        }
      }
      const std::vector<float> one_row(fresh.begin(), fresh.begin() + kDim);
      EXPECT_EQ(store->ResetRows({kRows}, kDim, one_row).code(),
                absl::StatusCode::kOutOfRange);
      if (store->num_slots() > 0) {
        std::vector<float> out(kDim);
        EXPECT_EQ(store->ReadSlotRows(store->num_slots(), {0}, kDim,
                                      absl::MakeSpan(out))
                      .code(),
                  absl::StatusCode::kInvalidArgument);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, UpdateBackendConformanceTest,
                         ::testing::Values("cpu", "cuda"),
                         [](const ::testing::TestParamInfo<std::string>& i) {
                           return i.param;
                         });

// ---------------------------------------------------------------------------
// Factory contract and GPU-vs-CPU equivalence.

TEST(UpdateBackendFactoryTest, CpuAndAutoFollowTheContract) {
  absl::StatusOr<std::unique_ptr<UpdateBackend>> cpu =
      CreateUpdateBackend(DeviceKind::kCpu);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_EQ((*cpu)->name(), "cpu");

  absl::StatusOr<std::unique_ptr<UpdateBackend>> cuda =
      CreateUpdateBackend(DeviceKind::kCuda);
  absl::StatusOr<std::unique_ptr<UpdateBackend>> autob =
      CreateUpdateBackend(DeviceKind::kAuto);
  ASSERT_TRUE(autob.ok()) << autob.status();
  if (cuda.ok()) {
    EXPECT_TRUE(absl::StartsWith((*cuda)->name(), "cuda:"));
    EXPECT_EQ((*autob)->name(), (*cuda)->name());
  } else {
    EXPECT_EQ(cuda.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_TRUE(absl::StartsWith(cuda.status().message(),
                                 "device: cuda requested but "))
        << cuda.status();
    // One of the two documented reasons, with its detail in parentheses.
    const bool no_device =
        absl::StrContains(cuda.status().message(),
                          "no CUDA device is visible (cudaGetDeviceCount: ");
    const bool no_build = absl::StrContains(cuda.status().message(),
                                            "this build has no CUDA support (");
    EXPECT_TRUE(no_device || no_build) << cuda.status();
    EXPECT_EQ((*autob)->name(), "cpu");
  }
}

TEST(UpdateBackendCrossCheckTest, GpuMatchesCpuOnSameInputs) {
  absl::StatusOr<std::unique_ptr<UpdateBackend>> cuda =
      CreateUpdateBackend(DeviceKind::kCuda);
  if (!cuda.ok()) {
    GTEST_SKIP() << "CUDA backend not available, GPU-vs-CPU check not run: "
                 << cuda.status().message();
  }
  std::unique_ptr<UpdateBackend> cpu = CreateCpuUpdateBackend();
  constexpr uint64_t kSize = 100003;
  constexpr uint32_t kDim = 16;
  for (const OptimizerCase& oc : AllOptimizerCases()) {
    SCOPED_TRACE(oc.name);
    std::mt19937 rng(77);
    auto a = cpu->CreateStore(oc.config, kSize);
    auto b = (*cuda)->CreateStore(oc.config, kSize);
    ASSERT_TRUE(a.ok() && b.ok());
    const std::vector<float> init = Uniform(&rng, kSize);
    ASSERT_TRUE((*a)->Write(0, init).ok());
    ASSERT_TRUE((*b)->Write(0, init).ok());
    for (int64_t t = 1; t <= 4; ++t) {
      const std::vector<float> g = Uniform(&rng, kSize - 1);
      for (ParamStore* s : {a->get(), b->get()}) {
        ASSERT_TRUE(s->ApplyDense(1, g, 0.5f, t).ok());
        ASSERT_TRUE(s->AccumulateDense(0, g).ok());
        ASSERT_TRUE(s->ApplyAccumulated(0.25f, t).ok());
      }
      std::vector<uint64_t> rows;
      for (uint64_t r = t; r < kSize / kDim; r += 7) rows.push_back(r);
      const std::vector<float> rg = Uniform(&rng, rows.size() * kDim);
      for (ParamStore* s : {a->get(), b->get()}) {
        ASSERT_TRUE(s->ApplyRows(rows, kDim, rg, 1.0f, t).ok());
      }
    }
    std::vector<float> wa(kSize), wb(kSize);
    ASSERT_TRUE((*a)->Read(0, absl::MakeSpan(wa)).ok());
    ASSERT_TRUE((*b)->Read(0, absl::MakeSpan(wb)).ok());
    EXPECT_LE(RelativeError(wb, std::vector<double>(wa.begin(), wa.end())),
              kTolerance);
    for (int s = 0; s < (*a)->num_slots(); ++s) {
      ASSERT_TRUE((*a)->ReadSlot(s, 0, absl::MakeSpan(wa)).ok());
      ASSERT_TRUE((*b)->ReadSlot(s, 0, absl::MakeSpan(wb)).ok());
      EXPECT_LE(RelativeError(wb, std::vector<double>(wa.begin(), wa.end())),
                kTolerance)
          << "slot " << s;
    }
  }
}

// Half-precision layouts: the GPU rounds as the CPU does (both compute in
// float32 and round to nearest even), so the two agree to one unit of the
// stored type.
TEST(UpdateBackendCrossCheckTest, GpuMatchesCpuForHalfLayouts) {
  absl::StatusOr<std::unique_ptr<UpdateBackend>> cuda =
      CreateUpdateBackend(DeviceKind::kCuda);
  if (!cuda.ok()) {
    GTEST_SKIP() << "CUDA backend not available, GPU-vs-CPU check not run: "
                 << cuda.status().message();
  }
  std::unique_ptr<UpdateBackend> cpu = CreateCpuUpdateBackend();
  constexpr uint32_t kDim = 16;
  constexpr uint64_t kRows = 4001;
  OptimizerConfig c;
  c.type = "adagrad";
  c.learning_rate = 0.05f;
  c.params = {{"epsilon", 1e-10f}, {"initial_accumulator", 0.1f}};
  for (const StoreLayout& layout : HalfLayouts()) {
    SCOPED_TRACE(LayoutName(layout));
    std::mt19937 rng(5);
    auto a = cpu->CreateStore(c, 0, layout);
    auto b = (*cuda)->CreateStore(c, 0, layout);
    ASSERT_TRUE(a.ok() && b.ok());
    const std::vector<float> init = Uniform(&rng, kRows * kDim);
    for (ParamStore* s : {a->get(), b->get()}) ASSERT_TRUE(s->Append(init).ok());
    for (int64_t t = 1; t <= 3; ++t) {
      std::vector<uint64_t> rows;
      for (uint64_t r = t; r < kRows; r += 3) rows.push_back(r);
      const std::vector<float> g = Uniform(&rng, rows.size() * kDim);
      const std::vector<uint64_t> reset = {static_cast<uint64_t>(t + 1000)};
      const std::vector<float> fresh = Uniform(&rng, kDim);
      for (ParamStore* s : {a->get(), b->get()}) {
        ASSERT_TRUE(s->ApplyRows(rows, kDim, g, 1.0f, t).ok());
        ASSERT_TRUE(s->AccumulateRows(rows, kDim, g).ok());
        ASSERT_TRUE(s->ApplyAccumulatedRows(rows, kDim, 0.5f, t).ok());
        ASSERT_TRUE(s->ResetRows(reset, kDim, fresh).ok());
      }
    }
    const double tolerance = std::max(ToleranceFor(layout.values),
                                      ToleranceFor(layout.state));
    std::vector<float> wa(kRows * kDim), wb(kRows * kDim);
    ASSERT_TRUE((*a)->Read(0, absl::MakeSpan(wa)).ok());
    ASSERT_TRUE((*b)->Read(0, absl::MakeSpan(wb)).ok());
    EXPECT_LE(RelativeError(wb, std::vector<double>(wa.begin(), wa.end())),
              tolerance);
    ASSERT_TRUE((*a)->ReadSlot(0, 0, absl::MakeSpan(wa)).ok());
    ASSERT_TRUE((*b)->ReadSlot(0, 0, absl::MakeSpan(wb)).ok());
    EXPECT_LE(RelativeError(wb, std::vector<double>(wa.begin(), wa.end())),
              tolerance);
  }
}

}  // namespace
}  // namespace ps
