// The machine-readable lines a worker prints on stdout (the worker
// contract, deploy/launcher/WORKER_CONTRACT.md; ps_worker's are described in
// worker/train_loop.h): "KIND key=value key=value ...".
#ifndef PS_DEPLOY_LAUNCHER_PROTOCOL_LINE_H_
#define PS_DEPLOY_LAUNCHER_PROTOCOL_LINE_H_

#include <map>
#include <optional>
#include <string>

namespace ps::launcher {

// A parsed "KIND key=value key=value ..." line. Values end at the next
// space, except that a value may contain spaces when the next token has no
// '=' (e.g. "device=cpu (OpenBLAS)").
struct ProtocolLine {
  std::string kind;  // START, PROGRESS, EVAL, FINAL, DONE
  std::map<std::string, std::string> fields;
  // The field as a number; nullopt when absent or not numeric.
  std::optional<double> Number(const std::string& key) const;
};

// Parses `line` when it starts with one of the kinds above; nullopt for any
// other line (ordinary log output).
std::optional<ProtocolLine> ParseProtocolLine(const std::string& line);

}  // namespace ps::launcher

#endif  // PS_DEPLOY_LAUNCHER_PROTOCOL_LINE_H_
