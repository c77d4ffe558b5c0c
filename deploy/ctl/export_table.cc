#include "deploy/ctl/export_table.h"

#include <cstring>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/optimizers/optimizer_registry.h"
#include "common/status_macros.h"
#include "deploy/ctl/channel.h"
#include "proto/ps.grpc.pb.h"
#include "proto/table_spec_conversion.h"

namespace ps::ctl {
namespace {

absl::Status FromGrpc(const grpc::Status& s, const std::string& address) {
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      absl::StrCat("server ", address, ": ", s.error_message()));
}

template <typename T>
std::vector<T> Copy(const std::string& bytes) {
  std::vector<T> out(bytes.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

struct Shard {
  std::string address;
  std::unique_ptr<proto::ParameterServer::Stub> stub;
};

// The table's spec as shard `index` reports it, checking the layout.
absl::StatusOr<TableConfig> TableOn(const ExportOptions& options, Shard& shard,
                                    uint32_t index) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
  AddAuth(options.client.auth_token, &context);
  proto::ShardInfo info;
  const grpc::Status s =
      shard.stub->GetShardInfo(&context, proto::ShardInfoRequest(), &info);
  if (!s.ok()) return FromGrpc(s, shard.address);
  const size_t shards = options.client.servers.size();
  if (info.shard_index() != index || info.num_shards() != shards) {
    return absl::FailedPreconditionError(absl::StrCat(
        "server ", shard.address, " is shard ", info.shard_index(), " of ",
        info.num_shards(), ", but is listed as shard ", index, " of ", shards));
  }
  for (const proto::TableSpec& spec : info.tables()) {
    if (spec.name() != options.table) continue;
    absl::StatusOr<TableConfig> config = FromTableSpec(spec);
    if (!config.ok()) return config.status();
    if (config->kind != TableKind::kSparse) {
      return absl::FailedPreconditionError(absl::StrCat(
          "table '", options.table, "' is dense; only sparse tables export "
          "rows"));
    }
    return config;
  }
  return absl::NotFoundError(absl::StrCat(
      "server ", shard.address, " has no table '", options.table, "'"));
}

// Streams shard `shard`'s rows into `writer`; returns how many.
absl::StatusOr<uint64_t> ExportShard(const ExportOptions& options,
                                     const TableConfig& table, Shard& shard,
                                     EmbeddingFileWriter* writer) {
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + options.timeout));
  AddAuth(options.client.auth_token, &context);
  proto::ExportRequest request;
  request.set_table_id(table.table_id);
  request.set_with_state(options.with_state);
  std::unique_ptr<grpc::ClientReader<proto::ExportChunk>> reader =
      shard.stub->ExportTable(&context, request);
  proto::ExportChunk chunk;
  uint64_t rows = 0;
  bool last = false;
  uint64_t total = 0;
  while (reader->Read(&chunk)) {
    const uint64_t n = chunk.num_rows();
    const uint64_t dim = table.dim;
    const uint64_t want_slots = options.with_state ? chunk.num_state_slots() : 0;
    if (last || chunk.dim() != dim || chunk.ids().size() != n * 8 ||
        chunk.values().size() != n * dim * 4 ||
        chunk.state().size() != want_slots * n * dim * 4) {
      context.TryCancel();
      reader->Finish();
      return absl::DataLossError(absl::StrCat(
          "server ", shard.address, " sent a malformed export chunk (", n,
          " rows, dim ", chunk.dim(), ", ", chunk.ids().size(), " id bytes, ",
          chunk.values().size(), " value bytes, ", chunk.state().size(),
          " state bytes)"));
    }
    RETURN_IF_ERROR(writer->Append(Copy<uint64_t>(chunk.ids()),
                                   Copy<float>(chunk.values()),
                                   Copy<float>(chunk.state())));
    rows += n;
    last = chunk.last();
    total = chunk.total_rows();
  }
  const grpc::Status s = reader->Finish();
  if (!s.ok()) return FromGrpc(s, shard.address);
  if (!last || total != rows) {
    return absl::DataLossError(absl::StrCat(
        "server ", shard.address, " ended the export after ", rows,
        " rows without its last chunk"));
  }
  return rows;
}

}  // namespace

absl::StatusOr<ExportSummary> ExportTableToFile(const ExportOptions& options) {
  const std::vector<std::string>& servers = options.client.servers;
  if (servers.empty()) return absl::InvalidArgumentError("no servers");
  std::vector<Shard> shards(servers.size());
  TableConfig table;
  for (size_t i = 0; i < servers.size(); ++i) {
    shards[i].address = servers[i];
    ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel,
                     MakeChannel(servers[i], options.client.tls));
    shards[i].stub = proto::ParameterServer::NewStub(channel);
    ASSIGN_OR_RETURN(TableConfig spec,
                     TableOn(options, shards[i], static_cast<uint32_t>(i)));
    if (i > 0 && !(spec == table)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "servers ", servers[0], " and ", servers[i],
          " disagree about table '", options.table, "'"));
    }
    table = spec;
  }
  EmbeddingFileHeader header;
  header.dim = table.dim;
  header.value_type = table.storage_type;
  header.num_state_slots =
      options.with_state
          ? static_cast<uint32_t>(FindOptimizer(table.optimizer.type)->num_slots)
          : 0;
  header.num_shards = static_cast<uint32_t>(servers.size());
  header.table = table.name;
  header.optimizer = table.optimizer.type;
  ASSIGN_OR_RETURN(std::unique_ptr<EmbeddingFileWriter> writer,
                   EmbeddingFileWriter::Create(options.out, header));
  ExportSummary summary;
  for (Shard& shard : shards) {
    ASSIGN_OR_RETURN(uint64_t rows,
                     ExportShard(options, table, shard, writer.get()));
    summary.rows_per_shard.push_back(rows);
  }
  ASSIGN_OR_RETURN(summary.header, writer->Finish());
  summary.file_bytes = kEmbeddingHeaderBytes +
                       summary.header.num_rows * summary.header.RecordBytes();
  return summary;
}

}  // namespace ps::ctl
