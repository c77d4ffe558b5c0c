// The committed deploy/CONFIG_REFERENCE.md is what the parser's declarations
// render to (so the document and the parser cannot disagree), and it names
// every key the parser accepts.
#include "deploy/ctl/config_reference.h"

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "common/config.h"
#include "gtest/gtest.h"

namespace ps::ctl {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ConfigReferenceTest, CommittedFileMatchesTheParser) {
  const std::string committed = ReadFile("deploy/CONFIG_REFERENCE.md");
  ASSERT_FALSE(committed.empty()) << "deploy/CONFIG_REFERENCE.md is missing";
  EXPECT_EQ(committed, RenderConfigReference())
      << "deploy/CONFIG_REFERENCE.md is stale; regenerate it with\n"
         "  bazel run //deploy/ctl:ps_ctl -- config-reference > "
         "deploy/CONFIG_REFERENCE.md";
}

TEST(ConfigReferenceTest, EveryDeclaredKeyIsDocumented) {
  const std::string doc = RenderConfigReference();
  int keys = 0;
  for (const SectionDoc& section : ConfigReference()) {
    EXPECT_TRUE(absl::StrContains(doc, "## `" + section.path + "`"))
        << section.path;
    for (const KeyDoc& key : section.keys) {
      ++keys;
      EXPECT_FALSE(key.doc.empty()) << section.path << "." << key.name;
      EXPECT_FALSE(key.type.empty()) << section.path << "." << key.name;
    }
  }
  EXPECT_GT(keys, 60);
  // Keys the issue named as undocumented before.
  for (const char* key :
       {"`checkpoint_interval_s`", "`dedup_window`",
        "`reconnect_initial_backoff_ms`", "`weight_decay`", "`clip_value`",
        "`train_file`", "`value_type`", "`l1`"}) {
    EXPECT_TRUE(absl::StrContains(doc, key)) << key;
  }
}

// Defaults in the document are the structs' own: a default-constructed
// ClusterConfig's values appear as the documented defaults.
TEST(ConfigReferenceTest, DefaultsComeFromTheStructs) {
  const ClusterConfig defaults;
  for (const SectionDoc& section : ConfigReference()) {
    if (section.path != "server") continue;
    for (const KeyDoc& key : section.keys) {
      if (key.name == "heartbeat_timeout_ms") {
        EXPECT_EQ(key.default_value,
                  std::to_string(defaults.server.heartbeat_timeout_ms));
      }
      if (key.name == "worker_join_timeout_ms") {
        EXPECT_EQ(key.default_value, "120000");
      }
    }
  }
}

}  // namespace
}  // namespace ps::ctl
