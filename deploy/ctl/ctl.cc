#include "deploy/ctl/ctl.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/config.h"
#include "deploy/ctl/capacity.h"
#include "deploy/ctl/health_probe.h"
#include "deploy/ctl/replication_status.h"

namespace ps::ctl {
namespace {

// Columns padded to their widest cell, two spaces apart.
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) {
    rows_.push_back(std::move(header));
  }
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void Print(std::ostream& out) const {
    std::vector<size_t> width;
    for (const auto& row : rows_) {
      width.resize(std::max(width.size(), row.size()), 0);
      for (size_t i = 0; i < row.size(); ++i) {
        width[i] = std::max(width[i], row[i].size());
      }
    }
    for (const auto& row : rows_) {
      std::string line;
      for (size_t i = 0; i < row.size(); ++i) {
        line += row[i];
        if (i + 1 < row.size()) line += std::string(width[i] - row[i].size() + 2, ' ');
      }
      out << line << "\n";
    }
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

struct Probe {
  std::string address;
  absl::StatusOr<Health> health;
};

const char* HealthName(const absl::StatusOr<Health>& health) {
  if (!health.ok()) return "UNREACHABLE";
  return *health == Health::kServing ? "SERVING" : "NOT_SERVING";
}

// Probes every shard's server in parallel: servers[i], or the elected
// primary of a replicated shard (none elected: an error naming etcd).
std::vector<Probe> ProbeAll(const CtlOptions& options,
                            const std::vector<ShardReplication>& replication) {
  const std::vector<std::string>& servers = options.client.servers;
  std::vector<Probe> probes(servers.size(),
                            Probe{"", absl::UnknownError("not probed")});
  std::vector<std::thread> threads;
  threads.reserve(servers.size());
  for (size_t i = 0; i < servers.size(); ++i) {
    probes[i].address = servers[i];
    if (i < replication.size()) {
      probes[i].address = replication[i].primary;
      if (replication[i].primary.empty()) {
        // Between a primary's loss and the next election this is brief; a
        // set left by a run whose servers all stopped stays.
        const std::vector<std::string>& in_sync = replication[i].in_sync;
        probes[i].health = absl::UnavailableError(absl::StrCat(
            "no primary elected in etcd ",
            absl::StrJoin(options.etcd_endpoints, ","),
            in_sync.empty()
                ? std::string()
                : absl::StrCat(
                      "; in_sync is [", absl::StrJoin(in_sync, ","),
                      "]: if every server of the cluster has stopped, that "
                      "set is stale and `ps_ctl clear-replication` with the "
                      "cluster's config clears it")));
        continue;
      }
    }
    threads.emplace_back([&options, &probes, i] {
      probes[i].health = ProbeHealth(probes[i].address, options.client.tls,
                                     options.timeout);
    });
  }
  for (std::thread& t : threads) t.join();
  return probes;
}

// Reports shards that are not serving. Returns true if all are.
bool ReportProbes(const CtlOptions& options, const std::vector<Probe>& probes,
                  std::ostream& out, std::ostream& err) {
  bool all_serving = true;
  for (size_t i = 0; i < probes.size(); ++i) {
    const Probe& p = probes[i];
    if (!p.health.ok()) {
      all_serving = false;
      err << "ps_ctl: shard " << i << ": " << p.health.status().message()
          << "\n";
    } else if (*p.health != Health::kServing) {
      all_serving = false;
      err << "ps_ctl: shard " << i << ": server " << p.address
          << " is up but NOT_SERVING (starting, restoring or shutting down)\n";
    }
  }
  if (all_serving) return true;
  // The status command still shows which shards are fine.
  if (options.command == "status") {
    if (options.json) {
      std::vector<std::string> shards;
      for (size_t i = 0; i < probes.size(); ++i) {
        std::string shard = absl::StrCat(
            "{\"shard\":", i, ",\"address\":", JsonString(probes[i].address),
            ",\"health\":\"", HealthName(probes[i].health), "\"");
        if (!probes[i].health.ok()) {
          absl::StrAppend(&shard, ",\"error\":",
                          JsonString(std::string(
                              probes[i].health.status().message())));
        }
        shards.push_back(shard + "}");
      }
      out << "{\"ok\":false,\"shards\":[" << absl::StrJoin(shards, ",")
          << "]}\n";
    } else {
      TextTable table({"SHARD", "ADDRESS", "HEALTH"});
      for (size_t i = 0; i < probes.size(); ++i) {
        table.Add({absl::StrCat(i), probes[i].address,
                   HealthName(probes[i].health)});
      }
      table.Print(out);
    }
  }
  return false;
}

absl::StatusOr<std::unique_ptr<Client>> ConnectClient(
    const CtlOptions& options, absl::Duration rpc_timeout) {
  ClientOptions client = options.client;
  client.worker_id = -1;
  client.client.rpc_timeout_ms =
      std::max<int64_t>(absl::ToInt64Milliseconds(rpc_timeout), 1);
  return Client::Connect(client);
}

int Fail(std::ostream& err, const absl::Status& status) {
  err << "ps_ctl: " << status.message() << "\n";
  return kExitError;
}

std::string TableSize(const TableInfo& t) {
  return t.kind == TableKind::kDense ? absl::StrCat(t.size)
                                     : absl::StrCat("dim ", t.dim);
}

std::string StatusJson(const std::vector<TableInfo>& tables,
                       const std::vector<ShardStats>& stats,
                       const std::vector<Probe>& probes) {
  std::vector<std::string> table_json;
  for (const TableInfo& t : tables) {
    table_json.push_back(absl::StrCat(
        "{\"name\":", JsonString(t.name), ",\"table_id\":", t.table_id,
        ",\"kind\":\"", TableKindName(t.kind), "\",\"consistency\":\"",
        ConsistencyName(t.consistency), "\",\"size\":", t.size,
        ",\"dim\":", t.dim, ",\"staleness\":", t.staleness, "}"));
  }
  std::vector<std::string> shard_json;
  for (size_t i = 0; i < stats.size(); ++i) {
    const ShardStats& s = stats[i];
    std::vector<std::string> ts, ws;
    for (const ShardStats::Table& t : s.tables) {
      ts.push_back(absl::StrCat(
          "{\"name\":", JsonString(t.name), ",\"version\":", t.version,
          ",\"step\":", t.step, ",\"num_elements\":", t.num_elements,
          ",\"num_rows\":", t.num_rows, "}"));
    }
    for (const ShardStats::Worker& w : s.workers) {
      ws.push_back(absl::StrCat("{\"worker_id\":", w.worker_id,
                                ",\"clock\":", w.clock, ",\"live\":",
                                w.live ? "true" : "false", ",\"state\":",
                                JsonString(w.state), "}"));
    }
    shard_json.push_back(absl::StrCat(
        "{\"shard\":", s.shard_index, ",\"address\":", JsonString(s.address),
        ",\"health\":\"", HealthName(probes[i].health), "\",\"tables\":[",
        absl::StrJoin(ts, ","), "],\"workers\":[", absl::StrJoin(ws, ","),
        "],\"job_id\":", JsonString(s.job_id),
        ",\"job_generation\":", s.job_generation,
        ",\"job_start_clock\":", s.job_start_clock, "}"));
  }
  return absl::StrCat("{\"ok\":true,\"tables\":[",
                      absl::StrJoin(table_json, ","), "],\"shards\":[",
                      absl::StrJoin(shard_json, ","), "]}\n");
}

void PrintShards(const std::vector<ShardStats>& stats,
                 const std::vector<Probe>& probes, std::ostream& out) {
  TextTable shards({"SHARD", "ADDRESS", "HEALTH", "TABLES", "LIVE_WORKERS",
                    "JOB", "GENERATION"});
  for (size_t i = 0; i < stats.size(); ++i) {
    const ShardStats& s = stats[i];
    const int64_t live = std::count_if(
        s.workers.begin(), s.workers.end(),
        [](const ShardStats::Worker& w) { return w.live; });
    shards.Add({absl::StrCat(s.shard_index), s.address,
                HealthName(probes[i].health), absl::StrCat(s.tables.size()),
                absl::StrCat(live, "/", s.workers.size()),
                s.job_id.empty() ? "-" : s.job_id,
                absl::StrCat(s.job_generation)});
  }
  shards.Print(out);
}

void PrintTablesPerShard(const std::vector<TableInfo>& tables,
                         const std::vector<ShardStats>& stats,
                         std::ostream& out) {
  TextTable table_rows({"TABLE", "ID", "KIND", "CONSISTENCY", "SIZE", "SHARD",
                        "VERSION", "STEP", "ELEMENTS", "ROWS"});
  for (const TableInfo& t : tables) {
    for (const ShardStats& s : stats) {
      for (const ShardStats::Table& st : s.tables) {
        if (st.name != t.name) continue;
        table_rows.Add({t.name, absl::StrCat(t.table_id), TableKindName(t.kind),
                        ConsistencyName(t.consistency), TableSize(t),
                        absl::StrCat(s.shard_index), absl::StrCat(st.version),
                        absl::StrCat(st.step), absl::StrCat(st.num_elements),
                        absl::StrCat(st.num_rows)});
      }
    }
  }
  table_rows.Print(out);
}

void PrintWorkers(const std::vector<ShardStats>& stats, std::ostream& out) {
  TextTable workers({"WORKER", "SHARD", "CLOCK", "LIVE", "STATE"});
  for (const ShardStats& s : stats) {
    for (const ShardStats::Worker& w : s.workers) {
      workers.Add({absl::StrCat(w.worker_id), absl::StrCat(s.shard_index),
                   absl::StrCat(w.clock), w.live ? "yes" : "no", w.state});
    }
  }
  workers.Print(out);
}

// Each replicated shard's primary, term and in_sync set.
void PrintReplication(const std::vector<ShardReplication>& replication,
                      std::ostream& out) {
  TextTable table({"SHARD", "PRIMARY", "TERM", "IN_SYNC"});
  for (const ShardReplication& r : replication) {
    table.Add({absl::StrCat(r.shard), r.primary.empty() ? "-" : r.primary,
               absl::StrCat(r.term),
               absl::StrCat(r.in_sync.size(), " [",
                            absl::StrJoin(r.in_sync, ","), "]")});
  }
  table.Print(out);
}

std::string ReplicationJson(const std::vector<ShardReplication>& replication) {
  std::vector<std::string> shards;
  for (const ShardReplication& r : replication) {
    std::vector<std::string> ids;
    for (const std::string& id : r.in_sync) ids.push_back(JsonString(id));
    shards.push_back(absl::StrCat(
        "{\"shard\":", r.shard, ",\"primary\":", JsonString(r.primary),
        ",\"term\":", r.term, ",\"in_sync\":[", absl::StrJoin(ids, ","),
        "]}"));
  }
  return absl::StrCat("[", absl::StrJoin(shards, ","), "]");
}

int Status(const CtlOptions& options, const std::vector<Probe>& probes,
           const std::vector<ShardReplication>& replication, Client& client,
           std::ostream& out, std::ostream& err) {
  absl::StatusOr<std::vector<ShardStats>> stats = client.GetStats();
  if (!stats.ok()) return Fail(err, stats.status());
  const std::vector<TableInfo> tables = client.ListTables();
  if (options.json) {
    std::string json = StatusJson(tables, *stats, probes);
    if (!replication.empty()) {
      // Before the closing "}\n".
      json.insert(json.size() - 2,
                  absl::StrCat(",\"replication\":", ReplicationJson(replication)));
    }
    out << json;
    return kExitOk;
  }
  PrintShards(*stats, probes, out);
  out << "\n";
  if (!replication.empty()) {
    PrintReplication(replication, out);
    out << "\n";
  }
  PrintTablesPerShard(tables, *stats, out);
  const bool any_worker =
      std::any_of(stats->begin(), stats->end(),
                  [](const ShardStats& s) { return !s.workers.empty(); });
  if (any_worker) {
    out << "\n";
    PrintWorkers(*stats, out);
  }
  return kExitOk;
}

// The shards' counters of every table, in the order the cluster lists the
// tables (then any only the shards know), each table's rows in shard order.
struct TableCounters {
  std::vector<std::string> names;
  std::map<std::string, std::vector<std::pair<uint32_t, ShardStats::Table>>>
      rows;
  std::set<std::string> sparse;

  // One table's counters summed over its shards.
  ShardStats::Table Sum(const std::string& name) const {
    ShardStats::Table total;
    total.name = name;
    for (const auto& [shard, t] : rows.at(name)) {
      total.pushes += t.pushes;
      total.pulls += t.pulls;
      total.bytes_in += t.bytes_in;
      total.bytes_out += t.bytes_out;
      total.version += t.version;
      total.num_rows += t.num_rows;
      total.rows_admitted += t.rows_admitted;
      total.rows_evicted += t.rows_evicted;
      total.ids_pending += t.ids_pending;
      total.memory_bytes += t.memory_bytes;
    }
    return total;
  }
};

TableCounters GroupByTable(const std::vector<TableInfo>& tables,
                           const std::vector<ShardStats>& stats) {
  TableCounters c;
  for (const TableInfo& t : tables) {
    c.names.push_back(t.name);
    c.rows[t.name];
    if (t.kind == TableKind::kSparse) c.sparse.insert(t.name);
  }
  for (const ShardStats& s : stats) {
    for (const ShardStats::Table& t : s.tables) {
      if (c.rows.count(t.name) == 0) c.names.push_back(t.name);
      c.rows[t.name].emplace_back(s.shard_index, t);
    }
  }
  return c;
}

std::string StatsJson(const TableCounters& c,
                      const std::vector<ShardStats>& stats) {
  // Sparse tables add their row lifecycle (rows: live rows).
  auto counters_json = [&c](const ShardStats::Table& t) {
    std::string json = absl::StrCat(
        "\"pushes\":", t.pushes, ",\"pulls\":", t.pulls, ",\"bytes_in\":",
        t.bytes_in, ",\"bytes_out\":", t.bytes_out, ",\"updates\":", t.version);
    if (c.sparse.count(t.name) > 0) {
      absl::StrAppend(&json, ",\"rows\":", t.num_rows, ",\"rows_admitted\":",
                      t.rows_admitted, ",\"rows_evicted\":", t.rows_evicted,
                      ",\"ids_pending\":", t.ids_pending,
                      ",\"memory_bytes\":", t.memory_bytes);
    }
    return json;
  };
  std::vector<std::string> tables;
  for (const std::string& name : c.names) {
    std::vector<std::string> shards;
    for (const auto& [shard, t] : c.rows.at(name)) {
      shards.push_back(
          absl::StrCat("{\"shard\":", shard, ",", counters_json(t), "}"));
    }
    tables.push_back(absl::StrCat("{\"name\":", JsonString(name), ",",
                                  counters_json(c.Sum(name)), ",\"shards\":[",
                                  absl::StrJoin(shards, ","), "]}"));
  }
  std::vector<std::string> memory;
  for (const ShardStats& s : stats) {
    memory.push_back(absl::StrCat("{\"shard\":", s.shard_index,
                                  ",\"used_bytes\":", s.memory_used_bytes,
                                  ",\"cap_bytes\":", s.memory_cap_bytes,
                                  ",\"heap_allocated_bytes\":",
                                  s.heap_allocated_bytes,
                                  ",\"heap_free_bytes\":", s.heap_free_bytes,
                                  "}"));
  }
  return absl::StrCat("{\"ok\":true,\"tables\":[", absl::StrJoin(tables, ","),
                      "],\"memory\":[", absl::StrJoin(memory, ","), "]}\n");
}

void PrintTraffic(const TableCounters& c, std::ostream& out) {
  TextTable table({"TABLE", "SHARD", "PUSHES", "PULLS", "BYTES_IN",
                   "BYTES_OUT", "UPDATES"});
  auto add = [&table](const std::string& name, const std::string& shard,
                      const ShardStats::Table& t) {
    table.Add({name, shard, absl::StrCat(t.pushes), absl::StrCat(t.pulls),
               absl::StrCat(t.bytes_in), absl::StrCat(t.bytes_out),
               absl::StrCat(t.version)});
  };
  for (const std::string& name : c.names) {
    for (const auto& [shard, t] : c.rows.at(name)) {
      add(name, absl::StrCat(shard), t);
    }
    add(name, "all", c.Sum(name));
  }
  table.Print(out);
}

void PrintRowLifecycle(const TableCounters& c, std::ostream& out) {
  TextTable lifecycle(
      {"TABLE", "SHARD", "ROWS", "ADMITTED", "EVICTED", "PENDING", "MEMORY"});
  auto add = [&lifecycle](const std::string& name, const std::string& shard,
                          const ShardStats::Table& t) {
    lifecycle.Add({name, shard, absl::StrCat(t.num_rows),
                   absl::StrCat(t.rows_admitted), absl::StrCat(t.rows_evicted),
                   absl::StrCat(t.ids_pending), HumanBytes(t.memory_bytes)});
  };
  for (const std::string& name : c.names) {
    if (c.sparse.count(name) == 0) continue;
    for (const auto& [shard, t] : c.rows.at(name)) {
      add(name, absl::StrCat(shard), t);
    }
    add(name, "all", c.Sum(name));
  }
  lifecycle.Print(out);
}

void PrintMemory(const std::vector<ShardStats>& stats, std::ostream& out) {
  TextTable memory(
      {"SHARD", "TABLE_MEMORY", "MEMORY_CAP", "HEAP_IN_USE", "HEAP_FREE"});
  for (const ShardStats& s : stats) {
    memory.Add({absl::StrCat(s.shard_index), HumanBytes(s.memory_used_bytes),
                s.memory_cap_bytes == 0 ? "none"
                                        : HumanBytes(s.memory_cap_bytes),
                HumanBytes(s.heap_allocated_bytes),
                HumanBytes(s.heap_free_bytes)});
  }
  memory.Print(out);
}

int Stats(const CtlOptions& options, Client& client, std::ostream& out,
          std::ostream& err) {
  absl::StatusOr<std::vector<ShardStats>> stats = client.GetStats();
  if (!stats.ok()) return Fail(err, stats.status());
  const TableCounters counters = GroupByTable(client.ListTables(), *stats);
  if (options.json) {
    out << StatsJson(counters, *stats);
    return kExitOk;
  }
  PrintTraffic(counters, out);
  if (!counters.sparse.empty()) {
    out << "\n";
    PrintRowLifecycle(counters, out);
  }
  out << "\n";
  PrintMemory(*stats, out);
  return kExitOk;
}

int Checkpoint(const CtlOptions& options, Client& client, std::ostream& out,
               std::ostream& err) {
  const absl::Time start = absl::Now();
  absl::StatusOr<std::vector<std::string>> paths = client.Checkpoint();
  if (!paths.ok()) return Fail(err, paths.status());
  const int64_t ms = absl::ToInt64Milliseconds(absl::Now() - start);
  const std::vector<std::string>& servers = options.client.servers;
  if (options.json) {
    std::vector<std::string> shards;
    for (size_t i = 0; i < paths->size(); ++i) {
      shards.push_back(absl::StrCat("{\"shard\":", i, ",\"address\":",
                                    JsonString(servers[i]), ",\"path\":",
                                    JsonString((*paths)[i]), "}"));
    }
    out << "{\"ok\":true,\"duration_ms\":" << ms << ",\"checkpoints\":["
        << absl::StrJoin(shards, ",") << "]}\n";
    return kExitOk;
  }
  TextTable table({"SHARD", "ADDRESS", "CHECKPOINT"});
  for (size_t i = 0; i < paths->size(); ++i) {
    table.Add({absl::StrCat(i), servers[i], (*paths)[i]});
  }
  table.Print(out);
  out << "checkpointed " << paths->size() << " shards in " << ms << " ms\n";
  return kExitOk;
}

}  // namespace

std::string JsonString(const std::string& text) {
  std::string json = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        json += "\\\"";
        break;
      case '\\':
        json += "\\\\";
        break;
      case '\n':
        json += "\\n";
        break;
      case '\r':
        json += "\\r";
        break;
      case '\t':
        json += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof(escaped), "\\u%04x",
                        static_cast<unsigned>(static_cast<unsigned char>(c)));
          json += escaped;
        } else {
          json += c;
        }
    }
  }
  return json + "\"";
}

int RunCommand(const CtlOptions& options, std::ostream& out,
               std::ostream& err) {
  if (options.command != "status" && options.command != "stats" &&
      options.command != "checkpoint") {
    err << "ps_ctl: unknown command '" << options.command
        << "' (expected status, stats or checkpoint)\n";
    return kExitUsage;
  }
  if (options.client.servers.empty()) {
    err << "ps_ctl: no servers (pass --config FILE or --servers a,b)\n";
    return kExitUsage;
  }
  std::vector<ShardReplication> replication;
  if (!options.etcd_endpoints.empty()) {
    absl::StatusOr<std::vector<ShardReplication>> read = ReadReplication(
        options.etcd_endpoints, options.etcd_tls, options.cluster_id,
        static_cast<uint32_t>(options.client.servers.size()), options.timeout);
    if (!read.ok()) return Fail(err, read.status());
    replication = *std::move(read);
  }
  const std::vector<Probe> probes = ProbeAll(options, replication);
  if (!ReportProbes(options, probes, out, err)) return kExitError;

  absl::StatusOr<std::unique_ptr<Client>> client = ConnectClient(
      options, options.command == "checkpoint" ? options.checkpoint_timeout
                                               : options.timeout);
  if (!client.ok()) return Fail(err, client.status());
  if (options.command == "status") {
    return Status(options, probes, replication, **client, out, err);
  }
  if (options.command == "stats") return Stats(options, **client, out, err);
  return Checkpoint(options, **client, out, err);
}

}  // namespace ps::ctl
