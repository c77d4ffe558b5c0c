// Command-line parsing for the binaries' main(): Abseil flags with a --help
// that lists the binary's own flags.
//
// Abseil 20220623, as Debian ships it, lists under --help only the flags
// defined in a file named after the binary (<binary>.cc or <binary>_main.cc),
// so a ps_server whose flags live in server/main.cc printed "No flags
// matched"; and it exits with status 1 after printing any help.
//
// Thread safety: call once, at the top of main(), before other threads.
#ifndef PS_COMMON_COMMAND_LINE_H_
#define PS_COMMON_COMMAND_LINE_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace ps {

// Sets `usage` as the program usage message and parses the command line like
// absl::ParseCommandLine (unknown flags and bad values are fatal, with
// absl's message). --help and --helpshort list the flags defined in
// `flag_files`: the paths the compiler names them by, so pass __FILE__ from
// the file(s) that define the flags. --helpfull lists every flag,
// --help=SUBSTRING the matching ones. After printing any help (or
// --version) the process exits with status 0.
//
// A list flag (std::vector<std::string>) given more than once keeps every
// value, in order: `--set a=1 --set b=2` is `--set=a=1,b=2`. (Abseil itself
// keeps only the last, so an earlier override was dropped without a word.)
//
// Returns the positional arguments, argv[0] first.
std::vector<char*> ParseCommandLineWithHelp(
    int argc, char* argv[], absl::string_view usage,
    std::vector<std::string> flag_files);

}  // namespace ps

#endif  // PS_COMMON_COMMAND_LINE_H_
