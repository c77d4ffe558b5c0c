#include "common/command_line.h"

#include <cstdlib>
#include <iostream>
#include <utility>

#include "absl/algorithm/container.h"
#include "absl/flags/internal/parse.h"
#include "absl/flags/internal/usage.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"

namespace ps {
namespace {

// As Abseil's default filename normalization: no leading slashes.
std::string Normalize(absl::string_view file) {
  const size_t start = file.find_first_not_of('/');
  return start == absl::string_view::npos ? ""
                                          : std::string(file.substr(start));
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
  std::vector<char*> positional = fi::ParseCommandLineImpl(
      argc, argv, fi::ArgvListAction::kRemoveParsedArgs,
      fi::UsageFlagsAction::kIgnoreUsage,
      fi::OnUndefinedFlag::kAbortIfUndefined);
  if (fi::HandleUsageFlags(std::cout, absl::ProgramUsageMessage()) != -1) {
    std::cout.flush();
    std::exit(0);
  }
  return positional;
}

}  // namespace ps
