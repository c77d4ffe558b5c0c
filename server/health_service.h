// The standard gRPC health service (grpc.health.v1.Health, see
// proto/health.proto) on the ServerQueue. It replaces gRPC's built-in one,
// which runs on the callback API: that alone would start the callback
// threads whose wake-ups server/server_queue.h is about.
//
// Check answers SERVING or NOT_SERVING for a service given a status, and
// NOT_FOUND for any other name. Watch sends the status at once
// (SERVICE_UNKNOWN for a name without one) and then every change, until the
// client cancels; on Shutdown() it sends NOT_SERVING and ends the stream
// with UNAVAILABLE, so a watcher never holds up the server's shutdown.
// Thread-safe.
#ifndef PS_SERVER_HEALTH_SERVICE_H_
#define PS_SERVER_HEALTH_SERVICE_H_

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "proto/health.grpc.pb.h"
#include "server/server_queue.h"

namespace ps {

class HealthWatch;  // health_service.cc

class HealthService final
    : public grpc::health::v1::Health::WithAsyncMethod_Check<
          grpc::health::v1::Health::WithAsyncMethod_Watch<
              grpc::health::v1::Health::Service>> {
 public:
  // `service` ("" = the server as a whole) answers SERVING or NOT_SERVING.
  // Ignored after Shutdown().
  void SetServingStatus(const std::string& service, bool serving);
  // Every known service answers NOT_SERVING from now on, for good; open
  // Watch streams get NOT_SERVING and end.
  void Shutdown();

  // Serves Check and Watch on `queue` from now on. Call once, after
  // BuildAndStart.
  void Serve(ServerQueue* queue);

 private:
  friend class HealthWatch;
  using ServingStatus = grpc::health::v1::HealthCheckResponse::ServingStatus;

  grpc::Status Answer(const grpc::health::v1::HealthCheckRequest& request,
                      grpc::health::v1::HealthCheckResponse* response);
  // Makes a fresh HealthWatch wait for the next Watch call.
  void SpawnWatch(ServerQueue* queue);
  // A Watch call arrived: it gets its service's status now and on every
  // change. Unregister() once it ended.
  void Register(HealthWatch* watch, const std::string& service);
  void Unregister(HealthWatch* watch);
  // The status Watch reports for `service`.
  ServingStatus StatusLocked(const std::string& service) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Tells every watcher of `service` (every watcher when null) its status.
  void NotifyLocked(const std::string* service)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  absl::flat_hash_map<std::string, bool> serving_ ABSL_GUARDED_BY(mu_);
  // Open Watch calls and their service names.
  absl::flat_hash_map<HealthWatch*, std::string> watches_ ABSL_GUARDED_BY(mu_);
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace ps

#endif  // PS_SERVER_HEALTH_SERVICE_H_
