// ps_client._core.Client: ps::Client with Python buffers and futures.
//
// Every call into the C++ client runs with the GIL released (a call may
// block, and completion callbacks on other threads need the GIL).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "client/python/bindings/bindings.h"
#include "client/python/bindings/buffer.h"
#include "client/python/bindings/py_future.h"
#include "client/python/bindings/status.h"
#include "common/config.h"

namespace py = pybind11;

namespace ps::python {
namespace {

// Owns the C++ client. Calls hold a reference while they run without the
// GIL, so close() (or garbage collection) on another thread never destroys
// the client under a running call.
class PyClient {
 public:
  explicit PyClient(std::unique_ptr<Client> client)
      : client_(std::move(client)) {}
  // The destructor joins the client's threads, whose callbacks may need the
  // GIL: it runs without it.
  ~PyClient() { Close(); }

  void Close() {
    std::shared_ptr<Client> last = std::move(client_);
    py::gil_scoped_release release;
    last.reset();
  }

  // Runs `call(client)` with the GIL released; returns its result.
  template <typename Call>
  auto Released(Call call) const {
    if (client_ == nullptr) {
      ThrowStatus(absl::FailedPreconditionError("the client is closed"));
    }
    std::shared_ptr<Client> client = client_;
    py::gil_scoped_release release;
    auto result = call(*client);
    client.reset();  // may be the last reference after a concurrent close()
    return result;
  }

 private:
  std::shared_ptr<Client> client_;
};

template <typename T>
T ValueOrThrow(absl::StatusOr<T> value) {
  ThrowIfError(value.status());
  return *std::move(value);
}

std::unique_ptr<PyClient> Connect(const ClientOptions& options) {
  absl::StatusOr<std::unique_ptr<Client>> client;
  {
    py::gil_scoped_release release;
    client = Client::Connect(options);
  }
  return std::make_unique<PyClient>(ValueOrThrow(std::move(client)));
}

// `obj` as a TableInfo, or null when it is not one.
const TableInfo* LoadTableInfo(py::handle obj) {
  // TableInfo's registration, looked up once (make_caster<TableInfo> would
  // look it up by type name on every call).
  static const py::detail::type_info* const kTableInfo =
      py::detail::get_type_info(typeid(TableInfo));
  // Only an object of that very type is loaded: a miss of the caster looks
  // for a foreign module's type (an attribute lookup that fails), ~5 us.
  if (Py_TYPE(obj.ptr()) != kTableInfo->type) return nullptr;
  py::detail::type_caster_generic caster(kTableInfo);
  if (!caster.load(obj, /*convert=*/false)) return nullptr;
  return static_cast<const TableInfo*>(caster.value);
}

// The table id of a data call's `table` argument: a TableInfo, a table id
// (an int, or any object with __index__) or a table name (NotFound when no
// table has it). TableInfos and ints are read here without calling into
// Python: every data call passes one, and a Python-level call costs a few
// microseconds of a 4 KiB pull (client/python/bench/RESULTS.md).
uint32_t TableIdOf(const PyClient& self, py::handle table) {
  if (const TableInfo* info = LoadTableInfo(table)) return info->table_id;
  if (PyUnicode_Check(table.ptr())) {
    const std::string name = table.cast<std::string>();
    return ValueOrThrow(
               self.Released([&](Client& c) { return c.GetTable(name); }))
        .table_id;
  }
  const py::object id =
      py::reinterpret_steal<py::object>(PyNumber_Index(table.ptr()));
  if (!id) {
    PyErr_Clear();
    throw py::type_error(
        "table: expected a TableInfo, a table id or a table name; got " +
        std::string(py::str(py::type::of(table))));
  }
  const unsigned long long value = PyLong_AsUnsignedLongLong(id.ptr());
  if (PyErr_Occurred() || value > std::numeric_limits<uint32_t>::max()) {
    PyErr_Clear();
    ThrowStatus(
        absl::NotFoundError("no table with id " + std::string(py::str(id))));
  }
  return static_cast<uint32_t>(value);
}

// The TableInfo of a data call's `table` argument (as TableIdOf), for the
// calls that need more than its id.
TableInfo TableInfoOf(const PyClient& self, py::handle table) {
  if (const TableInfo* info = LoadTableInfo(table)) return *info;
  const uint32_t id = TableIdOf(self, table);
  for (TableInfo& info :
       self.Released([](Client& c) { return c.ListTables(); })) {
    if (info.table_id == id) return std::move(info);
  }
  ThrowStatus(absl::NotFoundError(absl::StrCat(
      "no table with id ", id,
      " (a table created by another client since: look it up by name)")));
}

// A dense call's first element: OutOfRange (in the server's words) for a
// negative one, or, for a range to the table's end (`to_end`), one past the
// end, which no array length could express. The server checks the rest.
uint64_t CheckedOffset(const PyClient& self, py::handle table, int64_t offset,
                       const TableInfo* to_end) {
  if (offset >= 0 &&
      (to_end == nullptr || static_cast<uint64_t>(offset) <= to_end->size)) {
    return static_cast<uint64_t>(offset);
  }
  const TableInfo info = to_end != nullptr ? *to_end : TableInfoOf(self, table);
  ThrowStatus(absl::OutOfRangeError(
      absl::StrCat("range [", offset, ", ...) is outside table '", info.name,
                   "' of ", info.size, " elements")));
}

std::unique_ptr<PyFuture> MakeFuture(Future future, py::object result,
                                     std::vector<HeldBuffer> held) {
  return std::make_unique<PyFuture>(std::move(future), std::move(result),
                                    std::move(held));
}

// pull_dense into `out`, or, when it is None, into a new float32 array of
// `count` elements (None: to the end of the table), made here with numpy's C
// API and written straight through its data pointer. (An array made in
// Python and passed as `out` costs a buffer export, which numpy computes
// afresh for each new array: several us of a 4 KiB pull.) The future keeps
// `out` alive until the request ends.
std::unique_ptr<PyFuture> PullDense(const PyClient& self, py::handle table_arg,
                                    int64_t first, py::object out,
                                    std::optional<int64_t> count) {
  const uint32_t table = TableIdOf(self, table_arg);
  std::vector<HeldBuffer> held;
  uint64_t offset;
  absl::Span<float> dst;
  if (!out.is_none()) {
    offset = CheckedOffset(self, table_arg, first, nullptr);
    held.push_back(HeldBuffer::Floats(out, /*writable=*/true, "out"));
    dst = held[0].floats();
  } else {
    if (count.has_value()) {
      if (*count < 0) {
        throw py::value_error("count: expected >= 0; got " +
                              std::to_string(*count));
      }
      offset = CheckedOffset(self, table_arg, first, nullptr);
    } else {
      const TableInfo info = TableInfoOf(self, table_arg);
      offset = CheckedOffset(self, table_arg, first, &info);
      count = static_cast<int64_t>(info.size - offset);
    }
    py::array_t<float> result(static_cast<py::ssize_t>(*count));
    dst = absl::Span<float>(result.mutable_data(), static_cast<size_t>(*count));
    out = std::move(result);
  }
  Future future =
      self.Released([&](Client& c) { return c.PullDense(table, offset, dst); });
  return MakeFuture(std::move(future), std::move(out), std::move(held));
}

std::unique_ptr<PyFuture> PushDense(const PyClient& self, py::handle table_arg,
                                    int64_t first, py::handle grads,
                                    bool zero_copy) {
  const uint32_t table = TableIdOf(self, table_arg);
  const uint64_t offset = CheckedOffset(self, table_arg, first, nullptr);
  std::vector<HeldBuffer> held;
  held.push_back(HeldBuffer::Floats(grads, /*writable=*/false, "grads"));
  const absl::Span<const float> src = held[0].floats();
  Future future = self.Released([&](Client& c) {
    return zero_copy ? c.PushDenseZeroCopy(table, offset, src)
                     : c.PushDense(table, offset, src);
  });
  if (!zero_copy) held.clear();  // copied before PushDense returned
  return MakeFuture(std::move(future), py::none(), std::move(held));
}

std::unique_ptr<PyFuture> PushPullDense(const PyClient& self,
                                        py::handle table_arg, int64_t first,
                                        py::handle grads, py::object out,
                                        bool zero_copy) {
  const uint32_t table = TableIdOf(self, table_arg);
  const uint64_t offset = CheckedOffset(self, table_arg, first, nullptr);
  std::vector<HeldBuffer> held;
  held.push_back(HeldBuffer::Floats(out, /*writable=*/true, "out"));
  held.push_back(HeldBuffer::Floats(grads, /*writable=*/false, "grads"));
  const absl::Span<float> dst = held[0].floats();
  const absl::Span<const float> src = held[1].floats();
  Future future = self.Released([&](Client& c) {
    return zero_copy ? c.PushPullDenseZeroCopy(table, offset, src, dst)
                     : c.PushPullDense(table, offset, src, dst);
  });
  if (!zero_copy) held.pop_back();
  return MakeFuture(std::move(future), std::move(out), std::move(held));
}

// A sparse pull's destination: `out` (held), or, when it is None, a new
// float32 array of shape keys.shape + (dim,) made here (see PullDense for
// why here), which becomes `out`.
absl::Span<float> RowsOut(const PyClient& self, py::handle table_arg,
                          const HeldBuffer& keys, py::object& out,
                          std::vector<HeldBuffer>& held) {
  if (!out.is_none()) {
    held.push_back(HeldBuffer::Floats(out, /*writable=*/true, "out"));
    return held.back().floats();
  }
  std::vector<py::ssize_t> shape(keys.shape().begin(), keys.shape().end());
  shape.push_back(static_cast<py::ssize_t>(TableInfoOf(self, table_arg).dim));
  py::array_t<float> rows(shape);
  const absl::Span<float> dst(rows.mutable_data(),
                              static_cast<size_t>(rows.size()));
  out = std::move(rows);
  return dst;
}

// Sparse calls copy keys and gradients before they return; only the
// out-buffer is held.
std::unique_ptr<PyFuture> PullSparse(const PyClient& self, py::handle table_arg,
                                     py::handle keys, py::object out) {
  const uint32_t table = TableIdOf(self, table_arg);
  const HeldBuffer key_buffer = HeldBuffer::Keys(keys, "keys");
  std::vector<HeldBuffer> held;
  const absl::Span<float> dst = RowsOut(self, table_arg, key_buffer, out, held);
  Future future = self.Released(
      [&](Client& c) { return c.PullSparse(table, key_buffer.keys(), dst); });
  return MakeFuture(std::move(future), std::move(out), std::move(held));
}

std::unique_ptr<PyFuture> PushSparse(const PyClient& self, py::handle table_arg,
                                     py::handle keys, py::handle grads) {
  const uint32_t table = TableIdOf(self, table_arg);
  const HeldBuffer key_buffer = HeldBuffer::Keys(keys, "keys");
  const HeldBuffer grad_buffer =
      HeldBuffer::Floats(grads, /*writable=*/false, "grads");
  Future future = self.Released([&](Client& c) {
    return c.PushSparse(table, key_buffer.keys(), grad_buffer.floats());
  });
  return MakeFuture(std::move(future), py::none(), {});
}

std::unique_ptr<PyFuture> PushPullSparse(const PyClient& self,
                                         py::handle table_arg, py::handle keys,
                                         py::handle grads, py::object out) {
  const uint32_t table = TableIdOf(self, table_arg);
  const HeldBuffer key_buffer = HeldBuffer::Keys(keys, "keys");
  const HeldBuffer grad_buffer =
      HeldBuffer::Floats(grads, /*writable=*/false, "grads");
  std::vector<HeldBuffer> held;
  const absl::Span<float> dst = RowsOut(self, table_arg, key_buffer, out, held);
  Future future = self.Released([&](Client& c) {
    return c.PushPullSparse(table, key_buffer.keys(), grad_buffer.floats(),
                            dst);
  });
  return MakeFuture(std::move(future), std::move(out), std::move(held));
}

// The C++ SDK's own figure for python_vs_cpp_bench, on this very client
// (same process, connection and server as the Python calls it is compared
// with): `ops` calls of PullDense (op "pull", into `buffer`), PushDense
// ("push") or PushDenseZeroCopy ("push_zero_copy", from `buffer`) made from
// C++ with the GIL released, each timed from issue to the end of Wait().
// Returns the microseconds of each call; the first failure raises.
std::vector<double> SdkLatencies(const PyClient& self, const std::string& op,
                                 py::handle table_arg, py::handle buffer,
                                 int ops) {
  const uint32_t table = TableIdOf(self, table_arg);
  if (op != "pull" && op != "push" && op != "push_zero_copy") {
    throw py::value_error("op: expected pull, push or push_zero_copy; got " +
                          op);
  }
  const bool pull = op == "pull";
  const HeldBuffer held =
      HeldBuffer::Floats(buffer, /*writable=*/pull, "buffer");
  std::vector<double> latencies_us;
  latencies_us.reserve(std::max(ops, 0));
  const absl::Status status = self.Released([&](Client& c) {
    for (int i = 0; i < ops; ++i) {
      const auto start = std::chrono::steady_clock::now();
      const absl::Status s =
          pull           ? c.PullDense(table, 0, held.floats()).Wait()
          : op == "push" ? c.PushDense(table, 0, held.floats()).Wait()
                         : c.PushDenseZeroCopy(table, 0, held.floats()).Wait();
      if (!s.ok()) return s;
      latencies_us.push_back(std::chrono::duration<double, std::micro>(
                                 std::chrono::steady_clock::now() - start)
                                 .count());
    }
    return absl::OkStatus();
  });
  ThrowIfError(status);
  return latencies_us;
}

void BindConnect(py::class_<PyClient>& c) {
  c.def_static(
       "from_config",
       [](const ClusterConfig& config, int worker_index) {
         return Connect(ClientOptions::FromConfig(config, worker_index));
       },
       py::arg("config"), py::arg("worker_index"),
       "Connects with the servers, tables, client, TLS and token settings "
       "of a parsed cluster config (ps::ClientOptions::FromConfig). "
       "worker_index -1: not a worker.")
      .def_static(
          "connect",
          [](std::vector<std::string> servers, int worker_index,
             const ClientConfig& client, const TlsConfig& tls,
             std::string auth_token) {
            ClientOptions options;
            options.servers = std::move(servers);
            options.worker_id = worker_index;
            options.client = client;
            options.tls = tls;
            options.auth_token = std::move(auth_token);
            return Connect(options);
          },
          py::arg("servers"), py::arg("worker_index"), py::arg("client"),
          py::arg("tls"), py::arg("auth_token"),
          "Connects to servers (host:port, shard order), adopting their "
          "tables.")
      .def("close", &PyClient::Close,
           "Stops the heartbeat and closes the connections; requests still "
           "in flight fail with Cancelled. Later calls raise "
           "FailedPrecondition.");
}

void BindTables(py::class_<PyClient>& c) {
  c.def(
       "get_table",
       [](const PyClient& self, const std::string& name) {
         return ValueOrThrow(
             self.Released([&](Client& cl) { return cl.GetTable(name); }));
       },
       py::arg("name"))
      .def("list_tables",
           [](const PyClient& self) {
             return self.Released([](Client& cl) { return cl.ListTables(); });
           })
      .def("table_info", &TableInfoOf, py::arg("table"),
           "The TableInfo of a TableInfo, table id or table name; NotFound "
           "when the client knows no such table.")
      .def(
          "create_table",
          [](const PyClient& self, const TableConfig& spec) {
            return ValueOrThrow(self.Released(
                [&](Client& cl) { return cl.CreateTable(spec); }));
          },
          py::arg("spec"));
}

void BindData(py::class_<PyClient>& c) {
  c.def("pull_dense", &PullDense, py::arg("table"), py::arg("offset"),
        py::arg("out"), py::arg("count"),
        "out None: into a new float32 array of `count` elements (None: to "
        "the end of the table), which wait() returns.")
      .def("push_dense", &PushDense, py::arg("table"), py::arg("offset"),
           py::arg("grads"), py::arg("zero_copy"))
      .def("push_pull_dense", &PushPullDense, py::arg("table"),
           py::arg("offset"), py::arg("grads"), py::arg("out"),
           py::arg("zero_copy"))
      .def("pull_sparse", &PullSparse, py::arg("table"), py::arg("keys"),
           py::arg("out"),
           "out None: into a new float32 array of shape keys.shape + (dim,)")
      .def("push_sparse", &PushSparse, py::arg("table"), py::arg("keys"),
           py::arg("grads"))
      .def("push_pull_sparse", &PushPullSparse, py::arg("table"),
           py::arg("keys"), py::arg("grads"), py::arg("out"))
      .def("_sdk_latencies", &SdkLatencies, py::arg("op"), py::arg("table"),
           py::arg("buffer"), py::arg("ops"),
           "For python_vs_cpp_bench: microseconds of each of `ops` C++ SDK "
           "calls (pull / push / push_zero_copy of the whole table) made on "
           "this client from C++.");
}

void BindWorker(py::class_<PyClient>& c) {
  c.def("clock",
        [](const PyClient& self) {
          return ValueOrThrow(
              self.Released([](Client& cl) { return cl.Clock(); }));
        })
      .def_property_readonly(
          "current_clock",
          [](const PyClient& self) {
            return self.Released([](Client& cl) { return cl.clock(); });
          })
      .def("barrier",
           [](const PyClient& self) {
             ThrowIfError(
                 self.Released([](Client& cl) { return cl.Barrier(); }));
           })
      .def("rejoin",
           [](const PyClient& self) {
             return ValueOrThrow(
                 self.Released([](Client& cl) { return cl.Rejoin(); }));
           })
      .def("leave",
           [](const PyClient& self) {
             ThrowIfError(self.Released([](Client& cl) { return cl.Leave(); }));
           })
      .def_property_readonly("job_start_clock",
                             [](const PyClient& self) {
                               return self.Released([](Client& cl) {
                                 return cl.job_start_clock();
                               });
                             })
      .def("stats",
           [](const PyClient& self) {
             return ValueOrThrow(
                 self.Released([](Client& cl) { return cl.GetStats(); }));
           })
      .def("checkpoint",
           [](const PyClient& self) {
             return ValueOrThrow(
                 self.Released([](Client& cl) { return cl.Checkpoint(); }));
           })
      .def_property_readonly(
          "num_servers",
          [](const PyClient& self) {
            return self.Released([](Client& cl) { return cl.num_servers(); });
          })
      .def_property_readonly("worker_index", [](const PyClient& self) {
        return self.Released([](Client& cl) { return cl.worker_id(); });
      });
}

}  // namespace

void BindClient(py::module_& m) {
  py::class_<PyClient> c(m, "Client",
                         "A connected ps::Client (see ps_client.Client for "
                         "the documented API).");
  BindConnect(c);
  BindTables(c);
  BindData(c);
  BindWorker(c);
}

}  // namespace ps::python
