// `ps_ctl inject-token`: the cluster config a pod runs with, made from the
// ConfigMap's cluster.yaml (which carries no secret) and the bearer token of a
// Kubernetes Secret, by an init container (deploy/k8s/base).
//
// The output is the config's text unchanged plus one last line
// `auth_token: '<token>'`, so a parse error in it still names the line and
// column of the ConfigMap's file. The token is the token file's content
// without trailing whitespace (`kubectl create secret --from-file` keeps a
// final newline); it must be printable ASCII without spaces (it travels as a
// gRPC metadata value).
#ifndef PS_DEPLOY_CTL_INJECT_TOKEN_H_
#define PS_DEPLOY_CTL_INJECT_TOKEN_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace ps::ctl {

// The config text with the token appended. Errors (INVALID_ARGUMENT):
// `config_text` is not a valid config (the parser's file:line:column
// message, with `config_name` as the file), it already sets a non-empty
// auth_token (a secret in a ConfigMap), the token is empty or has a
// character outside '!'..'~'.
absl::StatusOr<std::string> ConfigWithToken(const std::string& config_text,
                                            const std::string& config_name,
                                            const std::string& token_file_text);

// Reads both files and writes ConfigWithToken() to `out_path` (mode 0600,
// atomically). NOT_FOUND for a missing input; errors of ConfigWithToken;
// INTERNAL when the output cannot be written.
absl::Status InjectToken(const std::string& config_path,
                         const std::string& token_path,
                         const std::string& out_path);

}  // namespace ps::ctl

#endif  // PS_DEPLOY_CTL_INJECT_TOKEN_H_
