// The bearer-token check every RPC of a server runs (cluster.auth_token): the
// client sends metadata "authorization: Bearer <token>".
//
// Thread safety: stateless.
#ifndef PS_SERVER_BEARER_AUTH_H_
#define PS_SERVER_BEARER_AUTH_H_

#include <string>

#include "absl/status/status.h"
#include "grpcpp/grpcpp.h"

namespace ps {

// The metadata value a client must send for `auth_token` ("" when no token
// is required).
std::string ExpectedAuthorization(const std::string& auth_token);

// OK when `expected_authorization` is empty or the call's "authorization"
// metadata equals it (compared in constant time for equal lengths), else
// UNAUTHENTICATED naming what was wrong (never the token).
absl::Status CheckBearer(const grpc::ServerContextBase& context,
                         const std::string& expected_authorization);

}  // namespace ps

#endif  // PS_SERVER_BEARER_AUTH_H_
