#include "common/command_line.h"

#include <cstdlib>
#include <deque>
#include <iostream>
#include <map>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/flags/commandlineflag.h"
#include "absl/flags/internal/parse.h"
#include "absl/flags/internal/usage.h"
#include "absl/flags/usage.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace ps {
namespace {

// As Abseil's default filename normalization: no leading slashes.
std::string Normalize(absl::string_view file) {
  const size_t start = file.find_first_not_of('/');
  return start == absl::string_view::npos ? ""
                                          : std::string(file.substr(start));
}

// argv with every list flag (std::vector<std::string>) that occurs more than
// once replaced by one --name=<values joined by commas> where it first
// occurs. Arguments after "--" are left alone. The strings made here live as
// long as the process (Abseil keeps pointers into argv).
std::vector<char*> MergeRepeatedListFlags(int argc, char* argv[]) {
  std::map<std::string, size_t> first_at;  // flag -> its index in `out`
  std::map<std::string, std::vector<std::string>> values;
  std::vector<char*> out;
  int i = 0;
  if (argc > 0) out.push_back(argv[i++]);  // the program
  for (; i < argc && absl::string_view(argv[i]) != "--"; ++i) {
    absl::string_view body = argv[i];
    if (!absl::ConsumePrefix(&body, "--") &&
        !absl::ConsumePrefix(&body, "-")) {
      out.push_back(argv[i]);  // positional
      continue;
    }
    const size_t eq = body.find('=');
    const std::string name(body.substr(0, eq));
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag == nullptr || !flag->IsOfType<std::vector<std::string>>()) {
      out.push_back(argv[i]);
      continue;
    }
    std::string value;
    if (eq != absl::string_view::npos) {
      value = std::string(body.substr(eq + 1));
    } else if (i + 1 < argc) {
      value = argv[++i];  // "--name value", as Abseil reads it
    }
    values[name].push_back(std::move(value));
    if (first_at.emplace(name, out.size()).second) out.push_back(nullptr);
  }
  for (; i < argc; ++i) out.push_back(argv[i]);
  static auto* merged = new std::deque<std::string>();
  for (const auto& [name, index] : first_at) {
    merged->push_back(
        absl::StrCat("--", name, "=", absl::StrJoin(values[name], ",")));
    out[index] = merged->back().data();
  }
  return out;
}

}  // namespace

std::vector<char*> ParseCommandLineWithHelp(
    int argc, char* argv[], absl::string_view usage,
    std::vector<std::string> flag_files) {
  absl::SetProgramUsageMessage(usage);
  for (std::string& file : flag_files) file = Normalize(file);
  auto own_flags = [files = std::move(flag_files)](absl::string_view file) {
    return absl::c_linear_search(files, Normalize(file));
  };
  absl::FlagsUsageConfig config;
  config.contains_help_flags = own_flags;
  config.contains_helpshort_flags = own_flags;
  config.contains_helppackage_flags = own_flags;
  absl::SetFlagsUsageConfig(std::move(config));
  // absl::ParseCommandLine would exit(1) after help; Abseil 20220623 has no
  // public call that parses without acting on the usage flags (later
  // releases add absl::ParseAbseilFlagsOnly), so the internal steps it is
  // made of are called here, and the help exit status is ours.
  namespace fi = absl::flags_internal;
  std::vector<char*> args = MergeRepeatedListFlags(argc, argv);
  std::vector<char*> positional = fi::ParseCommandLineImpl(
      static_cast<int>(args.size()), args.data(),
      fi::ArgvListAction::kRemoveParsedArgs,
      fi::UsageFlagsAction::kIgnoreUsage,
      fi::OnUndefinedFlag::kAbortIfUndefined);
  if (fi::HandleUsageFlags(std::cout, absl::ProgramUsageMessage()) != -1) {
    std::cout.flush();
    std::exit(0);
  }
  return positional;
}

}  // namespace ps
