// The ExportTable RPC (ps.proto): a server-streaming call on the
// ServerQueue (server/server_queue.h) that sends one sparse table's live
// rows on this shard, chunk by chunk (ShardTable::ExportRows).
//
// One ExportCall object per call, as UnaryCall does for unary methods: it
// waits for the next call, spawns the next waiting object when one arrives,
// checks the bearer token, then alternates "read a chunk under the table's
// lock" and "write it", with at most one write in flight, and finishes
// once. A chunk is read on the queue thread: it is bounded (kExportChunkBytes
// of values by default, a copy of well under a millisecond), and training
// continues between chunks. A client that goes away ends the call at its
// next write.
//
// Thread safety: every method runs on the queue's thread.
#ifndef PS_SERVER_EXPORT_CALL_H_
#define PS_SERVER_EXPORT_CALL_H_

#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "grpcpp/grpcpp.h"
#include "proto/ps.grpc.pb.h"
#include "proto/ps.pb.h"
#include "server/server_queue.h"
#include "server/shard.h"

namespace ps {

// Values per chunk when the request does not say (about 1 MiB).
inline constexpr uint64_t kExportChunkBytes = uint64_t{1} << 20;
// The largest max_rows_per_chunk a request may ask for (a chunk must stay
// far below gRPC's message limit).
inline constexpr uint64_t kExportMaxChunkBytes = uint64_t{32} << 20;

struct ExportMethod {
  // Asks gRPC for the next ExportTable call (tag on `cq`).
  std::function<void(grpc::ServerContext*, proto::ExportRequest*,
                     grpc::ServerAsyncWriter<proto::ExportChunk>*,
                     grpc::ServerCompletionQueue* cq, void* tag)>
      request;
  // OK when the call may proceed (the bearer token checked out).
  std::function<absl::Status(const grpc::ServerContext&)> authorize;
  Shard* shard = nullptr;
};

// Serves ExportTable on `queue` from now on (after BuildAndStart).
void ServeExportTable(ServerQueue* queue, ExportMethod method);

}  // namespace ps

#endif  // PS_SERVER_EXPORT_CALL_H_
