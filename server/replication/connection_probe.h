// Whether a process listens at an address, told apart from "no answer":
// a TCP connect that is *refused* means the host is reachable and nothing
// listens on the port (the process that did is gone), while a partition or
// a dropped packet gives silence (a timeout). A backup uses this to end the
// term of a primary whose process died at once, instead of after its lease
// (DESIGN.md section 6).
//
// Thread safety: stateless, any thread.
#ifndef PS_SERVER_REPLICATION_CONNECTION_PROBE_H_
#define PS_SERVER_REPLICATION_CONNECTION_PROBE_H_

#include <string>

#include "absl/time/time.h"

namespace ps::replication {

// True only when a TCP connect to `address` ("host:port", "[v6]:port";
// the host a name or a literal) is refused (ECONNREFUSED) within `timeout`.
// False when it connects (the connection is closed again at once), times
// out, cannot be resolved, or fails any other way: none of those proves
// that the process is gone.
bool ConnectionRefused(const std::string& address, absl::Duration timeout);

}  // namespace ps::replication

#endif  // PS_SERVER_REPLICATION_CONNECTION_PROBE_H_
