#include "deploy/launcher/effective_config.h"

#include "common/config.h"
#include "deploy/launcher/default_config.h"
#include "gtest/gtest.h"

namespace ps::launcher {
namespace {

TEST(EffectiveConfigTest, EmbeddedDefaultIsValid) {
  absl::StatusOr<EffectiveConfig> c =
      EffectiveConfig::Create(kDefaultConfigYaml, kDefaultConfigName, {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->num_servers(), 2);
  EXPECT_EQ(c->config().num_workers, 2);
  EXPECT_EQ(c->config().training.model, "mlp");
  ASSERT_EQ(c->config().tables.size(), 1u);
  EXPECT_EQ(c->config().tables[0].size, 235146u);
}

TEST(EffectiveConfigTest, AppliesOverridesAndRendersAddresses) {
  ConfigOverrides o;
  o.servers = 3;
  o.workers = 4;
  o.consistency = "ssp";
  o.staleness = 2;
  o.epochs = 7;
  o.sets = {"training.batch_size=32", "tables.0.optimizer.learning_rate=0.25",
            "training.hidden=[64, 32]", "tables.0.size=52650"};
  absl::StatusOr<EffectiveConfig> c =
      EffectiveConfig::Create(kDefaultConfigYaml, "default", o);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->num_servers(), 3);
  const ClusterConfig& cfg = c->config();
  EXPECT_EQ(cfg.num_workers, 4);
  EXPECT_EQ(cfg.training.epochs, 7);
  EXPECT_EQ(cfg.training.batch_size, 32);
  EXPECT_EQ(cfg.training.hidden, (std::vector<int>{64, 32}));
  EXPECT_EQ(cfg.tables[0].consistency, Consistency::kSsp);
  EXPECT_EQ(cfg.tables[0].staleness, 2u);
  EXPECT_FLOAT_EQ(cfg.tables[0].optimizer.learning_rate, 0.25f);

  absl::StatusOr<ClusterConfig> rendered = ParseClusterConfig(
      c->Render({"127.0.0.1:1000", "127.0.0.1:1001", "127.0.0.1:1002"}), "r");
  ASSERT_TRUE(rendered.ok()) << rendered.status();
  EXPECT_EQ(rendered->servers,
            (std::vector<std::string>{"127.0.0.1:1000", "127.0.0.1:1001",
                                      "127.0.0.1:1002"}));
  EXPECT_EQ(rendered->training.batch_size, 32);
}

TEST(EffectiveConfigTest, CheckpointOverridesAddTheServerSection) {
  // The embedded default has no server: section; the overrides create it.
  ConfigOverrides o;
  o.checkpoint_dir = "/tmp/ps launch: odd #dir";
  o.sets.push_back("server.checkpoint_interval_s=2");
  absl::StatusOr<EffectiveConfig> c =
      EffectiveConfig::Create(kDefaultConfigYaml, "default", o);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->config().server.checkpoint_dir, "/tmp/ps launch: odd #dir");
  EXPECT_EQ(c->config().server.checkpoint_interval_s, 2);
  absl::StatusOr<ClusterConfig> rendered =
      ParseClusterConfig(c->Render({"127.0.0.1:5", "127.0.0.1:6"}), "r");
  ASSERT_TRUE(rendered.ok()) << rendered.status();
  EXPECT_EQ(rendered->server.checkpoint_dir, "/tmp/ps launch: odd #dir");
  EXPECT_EQ(rendered->server.checkpoint_interval_s, 2);

  // Without them the server section stays as configured (absent: defaults).
  c = EffectiveConfig::Create(kDefaultConfigYaml, "default", {});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->config().server.checkpoint_dir, "");
  EXPECT_EQ(c->config().server.checkpoint_interval_s, 0);
}

TEST(EffectiveConfigTest, CheckpointAgreementPeersBecomesSharedDir) {
  // A Kubernetes-style config (each server its own volume) run locally: the
  // launched servers share one directory and cannot find each other.
  ConfigOverrides o;
  o.checkpoint_dir = "/tmp/ckpt";
  o.sets = {"server.checkpoint_agreement=peers",
            "server.checkpoint_peer_timeout_s=30"};
  absl::StatusOr<EffectiveConfig> c =
      EffectiveConfig::Create(kDefaultConfigYaml, "default", o);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->config().server.checkpoint_agreement,
            CheckpointAgreement::kSharedDir);
  absl::StatusOr<ClusterConfig> rendered =
      ParseClusterConfig(c->Render({"127.0.0.1:5", "127.0.0.1:6"}), "r");
  ASSERT_TRUE(rendered.ok()) << rendered.status();
  EXPECT_EQ(rendered->server.checkpoint_agreement,
            CheckpointAgreement::kSharedDir);
}

TEST(EffectiveConfigTest, SetCreatesSectionsTheFileLacks) {
  // The embedded default has no server: section.
  ConfigOverrides o;
  o.sets = {"server.heartbeat_timeout_ms=2000"};
  absl::StatusOr<EffectiveConfig> c =
      EffectiveConfig::Create(kDefaultConfigYaml, "default", o);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->config().server.heartbeat_timeout_ms, 2000);
  // A key below a scalar is still refused.
  o.sets = {"training.epochs.x=1"};
  c = EffectiveConfig::Create(kDefaultConfigYaml, "default", o);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("'x' is below a non-mapping node"),
            std::string::npos)
      << c.status();
}

TEST(EffectiveConfigTest, BadOverridesAreInvalidArgument) {
  ConfigOverrides o;
  o.sets = {"tables.5.size=3"};
  absl::StatusOr<EffectiveConfig> c =
      EffectiveConfig::Create(kDefaultConfigYaml, "default", o);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("index 5 is past the end of a list of 1"),
            std::string::npos)
      << c.status();
  o.sets = {"no_equals_sign"};
  c = EffectiveConfig::Create(kDefaultConfigYaml, "default", o);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  o.sets = {};
  o.consistency = "eventual";
  c = EffectiveConfig::Create(kDefaultConfigYaml, "default", o);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("default (with overrides)"),
            std::string::npos)
      << c.status();
  c = EffectiveConfig::Create("cluster: [", "bad.yaml", {});
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ps::launcher
