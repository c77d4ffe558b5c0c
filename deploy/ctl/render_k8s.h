// `ps_ctl render-k8s`: a Kustomize overlay for N servers and M workers from
// one cluster description.
//
// The description is the base's cluster.yaml (deploy/k8s/base/cluster.yaml:
// tables, optimizer, training, server and client settings) plus this
// command's flags (sizes, device, image, namespace). The output directory
// gets two generated files (more with R >= 3 replicas, below):
//
//   cluster.yaml        the description with cluster.servers set to the
//                       StatefulSet's pod DNS names
//                       ps-server-<i>.ps-server.<namespace>.svc.cluster.local:50051,
//                       cluster.num_workers = M and server.device /
//                       training.device = the device; validated by the
//                       project's parser before it is written;
//   kustomization.yaml  the base (the directory of --config), the gpu
//                       component for cuda, the namespace, the ConfigMap
//                       replaced by that cluster.yaml, StatefulSet replicas N,
//                       Job completions = parallelism = M, the image, and
//                       with --worker_command the worker container's
//                       command (a trainer of your own, e.g. the Python
//                       client's; it keeps ps_worker's arguments,
//                       --config=/run/ps/cluster.yaml, and its index is
//                       the pod's JOB_COMPLETION_INDEX).
//                       Its header holds the command that made it.
//
// Replicated shards: the description's replication.factor R decides (or
// --replication_factor, for a replicated description). With R >= 2 the
// kustomization adds the replicated component (the second server
// StatefulSet ps-server-r1, anti-affinity, policies) and replicas N for
// every rank's StatefulSet; for R >= 3 the overlay also gets
// replica-<r>/kustomization.yaml per further rank r (StatefulSet
// ps-server-r<r>, from components/replicated/replica), lists them as
// resources and gives the completion hook (and its Role) their StatefulSets
// too; when the description names no etcd
// (replication.etcd_endpoints), it adds the example etcd component and
// cluster.yaml gets ps-etcd.<namespace>.svc.cluster.local:2379; an empty
// replication.cluster_id becomes the namespace. The completion hook gets
// --etcd=http://<first etcd endpoint> and --etcd_prefix=/ps/<cluster_id>/
// (also for an etcd outside the manifests), so it clears the cluster's keys
// once the servers are gone. The description's own validation (async tables
// only, no checkpoint_dir) applies as for servers.
//
// So going from 2 x 2 to 20 x 200 is one command (or one edit of that header
// line and a re-run); `check` mode tells whether an overlay is what its
// command renders now (tests/k8s runs it on every committed overlay).
//
// The names ps-server (StatefulSet and Service), ps-worker (Job),
// ps-completion-hook (Job), ps-config (ConfigMap), ps-image (image
// placeholder), the gRPC port 50051, ps-etcd (port 2379) and the components
// at <base>/../components/{gpu,replicated,etcd} are those of deploy/k8s;
// tests/k8s checks that the rendered overlays agree with the manifests.
#ifndef PS_DEPLOY_CTL_RENDER_K8S_H_
#define PS_DEPLOY_CTL_RENDER_K8S_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace ps::ctl {

struct RenderOptions {
  // The cluster description: a valid cluster config in the Kustomize base
  // directory (deploy/k8s/base/cluster.yaml); its directory is the base.
  std::string config_path;
  int num_servers = 0;  // >= 1
  int num_workers = 0;  // >= 1
  std::string device;   // "cpu" or "cuda"
  // REGISTRY/NAME:TAG or REGISTRY/NAME@sha256:DIGEST; not ":latest".
  std::string image;
  std::string name_space = "ps";  // a DNS label
  std::string out_dir;            // the overlay directory
  // The worker container's command, word by word; empty: the base's
  // (/opt/ps/bin/ps_worker). No empty words, none with a comma (the flag
  // separates words with commas).
  std::vector<std::string> worker_command;
  // Replicas per shard, 2..16, in place of the description's
  // replication.factor (which must be above 1: the description decides
  // whether shards are replicated); 0 keeps the description's.
  int replication_factor = 0;
};

// The command line that renders `options` (relative paths kept as given), as
// recorded in the kustomization's header.
std::string RenderCommandLine(const RenderOptions& options);

// The overlay's files, file name -> content. INVALID_ARGUMENT for a bad
// option, a description that is not a valid config (the parser's
// file:line:column message) or a replication the manifests cannot run
// (a lease TTL under the example etcd's minimum; --replication_factor for a
// description without replication); NOT_FOUND when
// it cannot be read.
absl::StatusOr<std::map<std::string, std::string>> RenderOverlay(
    const RenderOptions& options);

// Renders and writes the files into options.out_dir (created if missing).
// Also prints a summary (sizes, per-server table memory) to `summary`.
absl::Status WriteOverlay(const RenderOptions& options, std::string* summary);

// Renders and compares with the files in options.out_dir: OK when equal;
// FAILED_PRECONDITION naming the stale or missing files and the command to
// re-run otherwise.
absl::Status CheckOverlay(const RenderOptions& options);

}  // namespace ps::ctl

#endif  // PS_DEPLOY_CTL_RENDER_K8S_H_
