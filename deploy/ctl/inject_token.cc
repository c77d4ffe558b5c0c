#include "deploy/ctl/inject_token.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/config.h"
#include "common/file_util.h"
#include "deploy/ctl/write_file.h"

namespace ps::ctl {

absl::StatusOr<std::string> ConfigWithToken(
    const std::string& config_text, const std::string& config_name,
    const std::string& token_file_text) {
  absl::StatusOr<ClusterConfig> config =
      ParseClusterConfig(config_text, config_name);
  if (!config.ok()) return config.status();
  if (!config->auth_token.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        config_name,
        ": auth_token is set in the config itself; remove it and "
        "keep the token in the Secret only (a ConfigMap is not secret)"));
  }
  const std::string token(absl::StripTrailingAsciiWhitespace(token_file_text));
  if (token.empty()) {
    return absl::InvalidArgumentError(
        "the token file is empty; create the Secret with a token, e.g. "
        "--from-literal=token=$(openssl rand -hex 32)");
  }
  for (size_t i = 0; i < token.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(token[i]);
    if (c < '!' || c > '~') {
      return absl::InvalidArgumentError(absl::StrCat(
          "the token has a character that is not printable ASCII or is a "
          "space (byte ",
          static_cast<int>(c), " at offset ", i,
          "); use e.g. $(openssl rand -hex 32)"));
    }
  }
  std::string out = config_text;
  if (!out.empty() && out.back() != '\n') out += '\n';
  // Single-quoted YAML: only the quote itself needs escaping (doubled).
  absl::StrAppend(&out, "auth_token: '",
                  absl::StrReplaceAll(token, {{"'", "''"}}), "'\n");
  // The appended line must have become the config's token (a config that
  // ends in a "..." document marker or an open flow collection would not).
  absl::StatusOr<ClusterConfig> check = ParseClusterConfig(out, config_name);
  if (!check.ok() || check->auth_token != token) {
    return absl::InvalidArgumentError(
        absl::StrCat(config_name, ": cannot append auth_token to this file (",
                     check.ok() ? "the token did not take effect"
                                : std::string(check.status().message()),
                     "); end it with a top-level block mapping"));
  }
  return out;
}

absl::Status InjectToken(const std::string& config_path,
                         const std::string& token_path,
                         const std::string& out_path) {
  absl::StatusOr<std::string> config = ReadFileToString(config_path, "config");
  if (!config.ok()) return config.status();
  absl::StatusOr<std::string> token =
      ReadFileToString(token_path, "token file");
  if (!token.ok()) return token.status();
  absl::StatusOr<std::string> out =
      ConfigWithToken(*config, config_path, *token);
  if (!out.ok()) return out.status();
  return WriteFileAtomically(out_path, *out, 0600);
}

}  // namespace ps::ctl
