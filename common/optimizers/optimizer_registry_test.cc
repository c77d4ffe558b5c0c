#include "common/optimizers/optimizer_registry.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace ps {
namespace {

TEST(OptimizerRegistryTest, ListsEveryUnitInOrder) {
  EXPECT_EQ(OptimizerNames(),
            (std::vector<std::string>{"sgd", "momentum", "adagrad", "adam",
                                      "adamw", "ftrl"}));
  for (const OptimizerInfo& info : Optimizers()) {
    EXPECT_EQ(FindOptimizer(info.name), &info);
    EXPECT_EQ(static_cast<int>(info.slot_names.size()), info.num_slots);
  }
  EXPECT_EQ(FindOptimizer("adamax"), nullptr);
  EXPECT_EQ(FindOptimizer("ftrl")->num_slots, 2);
  EXPECT_TRUE(FindOptimizer("adamw")->decoupled_weight_decay);
}

TEST(OptimizerRegistryTest, CommonDefaultsAreOptimizerConfigs) {
  const OptimizerConfig defaults;
  const auto common = CommonOptimizerParams();
  ASSERT_EQ(common.size(), 3u);
  EXPECT_EQ(common[0].default_value, defaults.learning_rate);
  EXPECT_EQ(common[1].default_value, defaults.weight_decay);
  EXPECT_EQ(common[2].default_value, defaults.clip_value);
}

TEST(OptimizerRegistryTest, ResolvesSettingsInUnitOrderWithDefaults) {
  OptimizerConfig c;
  c.type = "ftrl";
  c.params["l1"] = 0.5f;
  absl::StatusOr<ResolvedOptimizer> r = ResolveOptimizer(c);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->params, (std::vector<float>{1.0f, 0.5f, 0.0f, 0.0f}));
  c.params["initial_accumulator"] = 0.25f;
  r = ResolveOptimizer(c);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->InitialSlot(0), 0.0f);   // z
  EXPECT_EQ(r->InitialSlot(1), 0.25f);  // n
}

TEST(OptimizerRegistryTest, ValidatorNamesTheKey) {
  OptimizerConfig c;
  c.type = "momentum";
  c.params["nesterov"] = 2.0f;
  EXPECT_EQ(ValidateOptimizerConfig(c).message(),
            "optimizer.nesterov: value 2 out of range; allowed: true, false");
  c.params.clear();
  c.clip_value = -1;
  EXPECT_EQ(ValidateOptimizerConfig(c).message(),
            "optimizer.clip_value: value -1 out of range; allowed: a number "
            ">= 0 (0 = off)");
  c.clip_value = 0;
  c.params["l1"] = 0.1f;
  EXPECT_EQ(ValidateOptimizerConfig(c).message(),
            "optimizer.l1: not used by optimizer momentum; remove l1 or set "
            "type: ftrl");
  c.params.clear();
  c.params["bogus"] = 1;
  EXPECT_EQ(ValidateOptimizerConfig(c).message(),
            "optimizer.bogus: not used by optimizer momentum; no optimizer "
            "has this setting");
}

TEST(OptimizerRegistryTest, EqualityComparesEffectiveSettings) {
  OptimizerConfig a;
  a.type = "adam";
  OptimizerConfig b = a;
  b.params["beta1"] = 0.9f;  // the default
  EXPECT_EQ(a, b);
  b.params["beta1"] = 0.8f;
  EXPECT_NE(a, b);
  OptimizerConfig c = a;
  c.learning_rate = 0.5f;
  EXPECT_NE(a, c);
}

}  // namespace
}  // namespace ps
