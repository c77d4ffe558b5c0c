// The standard gRPC health service (grpc.health.v1.Health/Check, see
// proto/health.proto) on the ServerQueue. It replaces gRPC's built-in one,
// which runs on the callback API: that alone would start the callback
// threads whose wake-ups server/server_queue.h is about. Watch is not
// offered (UNIMPLEMENTED); Kubernetes' gRPC probes and ps_ctl use Check.
//
// Check answers SERVING or NOT_SERVING for a service given a status, and
// NOT_FOUND for any other name (the protocol's rule). Thread-safe.
#ifndef PS_SERVER_HEALTH_SERVICE_H_
#define PS_SERVER_HEALTH_SERVICE_H_

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "proto/health.grpc.pb.h"
#include "server/server_queue.h"

namespace ps {

class HealthService final
    : public grpc::health::v1::Health::WithAsyncMethod_Check<
          grpc::health::v1::Health::Service> {
 public:
  // `service` ("" = the server as a whole) answers SERVING or NOT_SERVING.
  // Ignored after Shutdown().
  void SetServingStatus(const std::string& service, bool serving);
  // Every known service answers NOT_SERVING from now on, for good.
  void Shutdown();

  // Serves Check on `queue` from now on. Call once, after BuildAndStart.
  void Serve(ServerQueue* queue);

 private:
  grpc::Status Answer(const grpc::health::v1::HealthCheckRequest& request,
                      grpc::health::v1::HealthCheckResponse* response);

  absl::Mutex mu_;
  absl::flat_hash_map<std::string, bool> serving_ ABSL_GUARDED_BY(mu_);
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace ps

#endif  // PS_SERVER_HEALTH_SERVICE_H_
