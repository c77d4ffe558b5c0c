#include "common/command_line.h"

#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "gtest/gtest.h"

ABSL_FLAG(std::vector<std::string>, test_list, {}, "a list flag");
ABSL_FLAG(std::string, test_word, "", "a string flag");

namespace ps {
namespace {

std::vector<std::string> Strings(const std::vector<char*>& args) {
  return std::vector<std::string>(args.begin(), args.end());
}

// Abseil alone keeps the last of repeated list flags; every value counts
// here, in order, in both spellings, and positional arguments (also those
// after "--") stay where they were.
TEST(CommandLineTest, RepeatedListFlagKeepsEveryValueInOrder) {
  std::vector<std::string> words = {
      "prog",        "--test_list=a=1,b=2", "first",  "--test_word",
      "w",           "-test_list",          "c=3",    "--test_list=d=4",
      "--",          "--test_list=e"};
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  const std::vector<char*> positional = ParseCommandLineWithHelp(
      static_cast<int>(argv.size()), argv.data(), "test", {__FILE__});
  EXPECT_EQ(absl::GetFlag(FLAGS_test_list),
            (std::vector<std::string>{"a=1", "b=2", "c=3", "d=4"}));
  EXPECT_EQ(absl::GetFlag(FLAGS_test_word), "w");
  EXPECT_EQ(Strings(positional),
            (std::vector<std::string>{"prog", "first", "--test_list=e"}));
}

}  // namespace
}  // namespace ps
