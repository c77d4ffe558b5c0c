// Configs, table descriptions and shard statistics as Python classes.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>

#include "client/client.h"
#include "client/python/bindings/bindings.h"
#include "client/python/bindings/status.h"
#include "common/config.h"

namespace py = pybind11;

namespace ps::python {
namespace {

template <typename T>
T ValueOrThrow(absl::StatusOr<T> value) {
  ThrowIfError(value.status());
  return *std::move(value);
}

void BindClientSettings(py::module_& m) {
  py::class_<ClientConfig>(m, "ClientConfig",
                           "The `client:` section of a cluster config "
                           "(common/config.h documents each field and its "
                           "default).")
      .def(py::init<>())
      .def_readwrite("chunk_bytes", &ClientConfig::chunk_bytes)
      .def_readwrite("rpc_timeout_ms", &ClientConfig::rpc_timeout_ms)
      .def_readwrite("heartbeat_interval_ms",
                     &ClientConfig::heartbeat_interval_ms)
      .def_readwrite("reconnect_initial_backoff_ms",
                     &ClientConfig::reconnect_initial_backoff_ms)
      .def_readwrite("reconnect_max_backoff_ms",
                     &ClientConfig::reconnect_max_backoff_ms)
      .def_readwrite("max_reconnect_attempts",
                     &ClientConfig::max_reconnect_attempts)
      .def_readwrite("keepalive_ms", &ClientConfig::keepalive_ms)
      .def_readwrite("keepalive_timeout_ms",
                     &ClientConfig::keepalive_timeout_ms);

  py::class_<TlsConfig>(m, "TlsConfig",
                        "The `tls:` section of a cluster config: PEM file "
                        "paths; enabled turns TLS on.")
      .def(py::init<>())
      .def_readwrite("enabled", &TlsConfig::enabled)
      .def_readwrite("cert_file", &TlsConfig::cert_file)
      .def_readwrite("key_file", &TlsConfig::key_file)
      .def_readwrite("ca_file", &TlsConfig::ca_file)
      .def_readwrite("server_name_override", &TlsConfig::server_name_override);
}

void BindClusterConfig(py::module_& m) {
  py::class_<TableConfig>(m, "TableConfig",
                          "A validated table schema (from a cluster config; "
                          "Client.create_table takes one).")
      .def_readonly("name", &TableConfig::name)
      .def_property_readonly(
          "kind", [](const TableConfig& t) { return TableKindName(t.kind); })
      .def_readonly("size", &TableConfig::size)
      .def_readonly("dim", &TableConfig::dim)
      .def_property_readonly("consistency",
                             [](const TableConfig& t) {
                               return ConsistencyName(t.consistency);
                             })
      .def_readonly("staleness", &TableConfig::staleness);

  py::class_<ClusterConfig>(m, "ClusterConfig",
                            "A parsed and validated cluster config "
                            "(ps::ClusterConfig).")
      .def_readonly("source_path", &ClusterConfig::source_path)
      .def_readwrite("servers", &ClusterConfig::servers,
                     "Server addresses, shard order (assignable, e.g. to "
                     "the real ports of a test cluster).")
      .def_readonly("num_workers", &ClusterConfig::num_workers)
      .def_readonly("tables", &ClusterConfig::tables)
      .def_readwrite("client", &ClusterConfig::client)
      .def_readwrite("tls", &ClusterConfig::tls)
      .def_readwrite("auth_token", &ClusterConfig::auth_token);

  m.def(
      "load_cluster_config",
      [](const std::string& path) {
        return ValueOrThrow(LoadClusterConfig(path));
      },
      py::arg("path"),
      "Reads and validates a cluster config file (ps::LoadClusterConfig). "
      "Raises InvalidArgument naming file:line:column and key, or NotFound.");
  m.def(
      "parse_cluster_config",
      [](const std::string& text, const std::string& source_name) {
        return ValueOrThrow(ParseClusterConfig(text, source_name));
      },
      py::arg("text"), py::arg("source_name"),
      "Same as load_cluster_config, from YAML text; source_name stands in "
      "for the file name in messages.");
}

void BindTableInfo(py::module_& m) {
  py::class_<TableInfo>(m, "TableInfo",
                        "What a client knows about a table. Usable wherever "
                        "a table id is expected (__index__).")
      .def_readonly("name", &TableInfo::name)
      .def_readonly("table_id", &TableInfo::table_id)
      .def_property_readonly(
          "kind", [](const TableInfo& t) { return TableKindName(t.kind); })
      .def_readonly("size", &TableInfo::size, "Dense: number of elements.")
      .def_readonly("dim", &TableInfo::dim, "Sparse: row width.")
      .def_property_readonly(
          "consistency",
          [](const TableInfo& t) { return ConsistencyName(t.consistency); })
      .def_readonly("staleness", &TableInfo::staleness)
      .def("__index__", [](const TableInfo& t) { return t.table_id; })
      .def("__repr__", [](const TableInfo& t) {
        return std::string("TableInfo(name='") + t.name +
               "', table_id=" + std::to_string(t.table_id) + ", kind='" +
               TableKindName(t.kind) + "', size=" + std::to_string(t.size) +
               ", dim=" + std::to_string(t.dim) + ", consistency='" +
               ConsistencyName(t.consistency) +
               "', staleness=" + std::to_string(t.staleness) + ")";
      });
}

void BindStats(py::module_& m) {
  py::class_<ShardStats> shard(m, "ShardStats", "Statistics of one shard.");
  py::class_<ShardStats::Table>(shard, "Table")
      .def_readonly("name", &ShardStats::Table::name)
      .def_readonly("version", &ShardStats::Table::version)
      .def_readonly("step", &ShardStats::Table::step)
      .def_readonly("num_rows", &ShardStats::Table::num_rows)
      .def_readonly("num_elements", &ShardStats::Table::num_elements)
      .def_readonly("pushes", &ShardStats::Table::pushes)
      .def_readonly("pulls", &ShardStats::Table::pulls)
      .def_readonly("bytes_in", &ShardStats::Table::bytes_in)
      .def_readonly("bytes_out", &ShardStats::Table::bytes_out)
      .def_readonly("rows_admitted", &ShardStats::Table::rows_admitted)
      .def_readonly("rows_evicted", &ShardStats::Table::rows_evicted)
      .def_readonly("ids_pending", &ShardStats::Table::ids_pending)
      .def_readonly("table_clock", &ShardStats::Table::table_clock)
      .def_readonly("memory_bytes", &ShardStats::Table::memory_bytes)
      .def_readonly("bytes_per_row", &ShardStats::Table::bytes_per_row);
  py::class_<ShardStats::Worker>(shard, "Worker")
      .def_readonly("worker_id", &ShardStats::Worker::worker_id)
      .def_readonly("clock", &ShardStats::Worker::clock)
      .def_readonly("live", &ShardStats::Worker::live)
      .def_readonly("state", &ShardStats::Worker::state);
  shard.def_readonly("shard_index", &ShardStats::shard_index)
      .def_readonly("address", &ShardStats::address)
      .def_readonly("tables", &ShardStats::tables)
      .def_readonly("workers", &ShardStats::workers)
      .def_readonly("job_id", &ShardStats::job_id)
      .def_readonly("job_generation", &ShardStats::job_generation)
      .def_readonly("job_start_clock", &ShardStats::job_start_clock)
      .def_readonly("memory_cap_bytes", &ShardStats::memory_cap_bytes)
      .def_readonly("memory_used_bytes", &ShardStats::memory_used_bytes)
      .def_readonly("heap_allocated_bytes", &ShardStats::heap_allocated_bytes)
      .def_readonly("heap_free_bytes", &ShardStats::heap_free_bytes);
}

}  // namespace

void BindConfig(py::module_& m) {
  BindClientSettings(m);
  BindClusterConfig(m);
  BindTableInfo(m);
  BindStats(m);
}

}  // namespace ps::python
