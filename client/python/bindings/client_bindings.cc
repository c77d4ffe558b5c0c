// ps_client._core.Client: ps::Client with Python buffers and futures.
//
// Every call into the C++ client runs with the GIL released (a call may
// block, and completion callbacks on other threads need the GIL).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

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

std::unique_ptr<PyFuture> MakeFuture(Future future, py::object result,
                                     std::vector<HeldBuffer> held) {
  return std::make_unique<PyFuture>(std::move(future), std::move(result),
                                    std::move(held));
}

std::unique_ptr<PyFuture> PullDense(const PyClient& self, uint32_t table,
                                    uint64_t offset, py::object out) {
  std::vector<HeldBuffer> held;
  held.push_back(HeldBuffer::Floats(out, /*writable=*/true, "out"));
  const absl::Span<float> dst = held[0].floats();
  Future future = self.Released(
      [&](Client& c) { return c.PullDense(table, offset, dst); });
  return MakeFuture(std::move(future), std::move(out), std::move(held));
}

std::unique_ptr<PyFuture> PushDense(const PyClient& self, uint32_t table,
                                    uint64_t offset, py::handle grads,
                                    bool zero_copy) {
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

std::unique_ptr<PyFuture> PushPullDense(const PyClient& self, uint32_t table,
                                        uint64_t offset, py::handle grads,
                                        py::object out, bool zero_copy) {
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

// Sparse calls copy keys and gradients before they return; only the
// out-buffer is held.
std::unique_ptr<PyFuture> PullSparse(const PyClient& self, uint32_t table,
                                     py::handle keys, py::object out) {
  std::vector<HeldBuffer> held;
  held.push_back(HeldBuffer::Floats(out, /*writable=*/true, "out"));
  const HeldBuffer key_buffer = HeldBuffer::Keys(keys, "keys");
  const absl::Span<float> dst = held[0].floats();
  Future future = self.Released([&](Client& c) {
    return c.PullSparse(table, key_buffer.keys(), dst);
  });
  return MakeFuture(std::move(future), std::move(out), std::move(held));
}

std::unique_ptr<PyFuture> PushSparse(const PyClient& self, uint32_t table,
                                     py::handle keys, py::handle grads) {
  const HeldBuffer key_buffer = HeldBuffer::Keys(keys, "keys");
  const HeldBuffer grad_buffer =
      HeldBuffer::Floats(grads, /*writable=*/false, "grads");
  Future future = self.Released([&](Client& c) {
    return c.PushSparse(table, key_buffer.keys(), grad_buffer.floats());
  });
  return MakeFuture(std::move(future), py::none(), {});
}

std::unique_ptr<PyFuture> PushPullSparse(const PyClient& self, uint32_t table,
                                         py::handle keys, py::handle grads,
                                         py::object out) {
  std::vector<HeldBuffer> held;
  held.push_back(HeldBuffer::Floats(out, /*writable=*/true, "out"));
  const HeldBuffer key_buffer = HeldBuffer::Keys(keys, "keys");
  const HeldBuffer grad_buffer =
      HeldBuffer::Floats(grads, /*writable=*/false, "grads");
  const absl::Span<float> dst = held[0].floats();
  Future future = self.Released([&](Client& c) {
    return c.PushPullSparse(table, key_buffer.keys(), grad_buffer.floats(),
                            dst);
  });
  return MakeFuture(std::move(future), std::move(out), std::move(held));
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
      .def(
          "create_table",
          [](const PyClient& self, const TableConfig& spec) {
            return ValueOrThrow(self.Released(
                [&](Client& cl) { return cl.CreateTable(spec); }));
          },
          py::arg("spec"));
}

void BindData(py::class_<PyClient>& c) {
  c.def("pull_dense", &PullDense, py::arg("table_id"), py::arg("offset"),
        py::arg("out"))
      .def("push_dense", &PushDense, py::arg("table_id"), py::arg("offset"),
           py::arg("grads"), py::arg("zero_copy"))
      .def("push_pull_dense", &PushPullDense, py::arg("table_id"),
           py::arg("offset"), py::arg("grads"), py::arg("out"),
           py::arg("zero_copy"))
      .def("pull_sparse", &PullSparse, py::arg("table_id"), py::arg("keys"),
           py::arg("out"))
      .def("push_sparse", &PushSparse, py::arg("table_id"), py::arg("keys"),
           py::arg("grads"))
      .def("push_pull_sparse", &PushPullSparse, py::arg("table_id"),
           py::arg("keys"), py::arg("grads"), py::arg("out"));
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
