#include "server/bearer_auth.h"

namespace ps {

std::string ExpectedAuthorization(const std::string& auth_token) {
  return auth_token.empty() ? "" : "Bearer " + auth_token;
}

absl::Status CheckBearer(const grpc::ServerContextBase& context,
                         const std::string& expected_authorization) {
  if (expected_authorization.empty()) return absl::OkStatus();
  const auto& metadata = context.client_metadata();
  auto it = metadata.find("authorization");
  if (it == metadata.end()) {
    return absl::UnauthenticatedError("missing authorization metadata");
  }
  const std::string given(it->second.data(), it->second.size());
  // Compare without an early exit so timing does not reveal the prefix.
  bool equal = given.size() == expected_authorization.size();
  unsigned char diff = 0;
  for (size_t i = 0; equal && i < given.size(); ++i) {
    diff |= static_cast<unsigned char>(given[i] ^ expected_authorization[i]);
  }
  if (!equal || diff != 0) {
    return absl::UnauthenticatedError("invalid bearer token");
  }
  return absl::OkStatus();
}

}  // namespace ps
