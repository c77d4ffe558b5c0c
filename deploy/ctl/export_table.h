// `ps_ctl export`: streams every row of one sparse table out of a running
// cluster (the ExportTable RPC of every shard, in shard order) into an
// embedding export file (client/export/embedding_file.h).
//
// The table is looked up by name in each shard's ShardInfo (all shards must
// agree on its spec and on the shard layout); values are written in the
// table's storage_type, so the file holds exactly what the servers store.
// Training may go on meanwhile (see ShardTable::ExportRows for what a live
// export may miss or repeat).
//
// Thread safety: ExportTableToFile is thread-safe (no shared state).
#ifndef PS_DEPLOY_CTL_EXPORT_TABLE_H_
#define PS_DEPLOY_CTL_EXPORT_TABLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "client/client.h"
#include "client/export/embedding_file.h"

namespace ps::ctl {

struct ExportOptions {
  ClientOptions client;  // servers (shard order), tls, auth_token
  std::string table;     // a sparse table's name
  std::string out;       // the file to write (replaced atomically)
  bool with_state = false;  // also every row's optimizer state
  absl::Duration timeout = absl::Minutes(30);  // per shard
};

struct ExportSummary {
  EmbeddingFileHeader header;  // as written
  std::vector<uint64_t> rows_per_shard;
  uint64_t file_bytes = 0;
};

// Errors name the server: UNAVAILABLE (unreachable), NOT_FOUND (no such
// table), FAILED_PRECONDITION (a dense table, or shards that disagree about
// the layout), DATA_LOSS (a stream that ended early or sent malformed
// chunks), INTERNAL (the file). Nothing is left at `out` on error.
absl::StatusOr<ExportSummary> ExportTableToFile(const ExportOptions& options);

}  // namespace ps::ctl

#endif  // PS_DEPLOY_CTL_EXPORT_TABLE_H_
