#!/usr/bin/python3
"""Offline validation of the Kubernetes manifests in deploy/k8s.

For each kustomization directory given, runs these checks and prints one line
per check ("PASS <dir> <check>" or "FAIL <dir> <check>: <why>"):

  render            `kubectl kustomize DIR` renders the manifests.
  yamllint          yamllint --strict (tests/k8s/yamllint.yaml) over the YAML
                    sources of DIR and of every local directory it includes.
  schema-types      every rendered document, written as a TypeScript object
                    literal typed with its kind's interface from
                    kubernetes-models, passes `tsc --strict --noEmit`
                    (unknown fields, wrong types, missing required fields).
  schema-validate   `new Kind(doc).validate()` of kubernetes-models under node
                    (JSON schema: types, required fields, formats such as
                    quantities).
  config-parse      the cluster YAML in the ConfigMap the servers mount is
                    valid per our own parser (check_cluster_config).
  config-mount      servers and workers read the same key of that ConfigMap
                    through --config: mounted directly, or via an emptyDir
                    file that a `ps_ctl inject-token` init container writes
                    from it.
  server-addresses  cluster.servers are exactly the StatefulSet's pod DNS
                    names <sts>-<i>.<svc>.<ns>.svc.cluster.local:<grpc port>,
                    i < replicas, behind a headless Service that publishes
                    not-ready addresses.
  worker-count      cluster.num_workers == the Indexed Job's completions ==
                    its parallelism.
  probe-ports       the servers' gRPC readiness and liveness probes (and any
                    other probe) target the container's gRPC port, the one in
                    cluster.servers; Service target ports exist on the
                    container.
  metrics-port      server.metrics_port is the container's and the Service's
                    "metrics" port.
  checkpoint-mount  a volumeClaimTemplate is mounted at server.checkpoint_dir,
                    and server.checkpoint_agreement is peers (per-pod
                    claims).
  selectors         the StatefulSet's, Service's and PodDisruptionBudget's
                    selectors select the server pods; a PDB exists.
  labels            every object and pod template carries the
                    app.kubernetes.io/{name,instance,component,part-of,version}
                    labels.
  gpu-resources     a cuda device in the config comes with an nvidia.com/gpu
                    limit on that container, a cpu device without one.
  images            every image has an explicit tag or digest, not "latest".
  grace-period      the servers' terminationGracePeriodSeconds covers the
                    final checkpoint: 5 s RPC drain + 10 s + twice the largest
                    shard's checkpoint bytes at 50 MiB/s.
  scrape-annotation the server pods' prometheus.io/scrape is "true" and
                    prometheus.io/port is server.metrics_port (path /metrics).
  memory-limit      the server container's memory limit holds the largest
                    shard's dense tables (elements x 4 B x (1 + optimizer
                    slots + 1 if sync), deploy/ctl/capacity.h) plus 256 MiB
                    for the process; not checked for device cuda.
  image-versions    every container (servers, workers, hook, admin, init
                    containers) runs the same image.
  auth-token        servers, workers and the admin pod get their config with
                    a bearer token from one (non-optional) Secret through
                    `ps_ctl inject-token`; the ConfigMap has no auth_token.
  network-policy    NetworkPolicies select the server pods and admit to
                    their gRPC port only pods of component worker or admin
                    (and server, with replication or checkpoint_agreement
                    peers), and do admit them.
  job-limits        the worker Job sets backoffLimitPerIndex (with
                    restartPolicy Never), activeDeadlineSeconds and
                    ttlSecondsAfterFinished.
  job-id            the worker container's PS_JOB_ID comes from the Job's
                    uid label (one job per Job object).
  completion-hook   the completion-hook Job targets the worker Job and the
                    StatefulSet by name, outlasts the workers' deadline and
                    its service account may get the Job and patch the
                    StatefulSet's scale; with replication, it also gets
                    --etcd http://<first etcd endpoint> and --etcd_prefix
                    /ps/<cluster_id>/ of the servers' config, and may get
                    every server StatefulSet (to wait for their pods to
                    stop before it deletes the cluster's etcd keys).
  replica-sets      one server StatefulSet per replica rank
                    (replication.factor), alike, one pod per shard, pod i
                    serving shard i, PS_ADVERTISE_HOST from status.podIP, a
                    required anti-affinity keyed on the pod index, readiness
                    (only) on the health service ps.replication.Replication.
  etcd              replication.etcd_endpoints name the etcd Service and
                    port of the manifests (or an etcd outside them), and
                    servers, workers, the admin pod and the completion hook
                    may reach it (and no one else).

Exit status: 0 when every check of every directory passed, 1 otherwise, 2 on
bad usage or a missing tool. With --json FILE the results are also written as
{dir: {check: [ok, message]}} for tests/k8s/k8s_manifests_test.sh.

Requires: kubectl (with kustomize), yamllint, node, and the npm packages of
tests/k8s/package.json installed by tests/k8s/setup.sh.
"""

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

HERE = os.path.dirname(os.path.realpath(__file__))

CHECKS = [
    "render",
    "yamllint",
    "schema-types",
    "schema-validate",
    "config-parse",
    "config-mount",
    "server-addresses",
    "worker-count",
    "probe-ports",
    "metrics-port",
    "checkpoint-mount",
    "selectors",
    "labels",
    "gpu-resources",
    "images",
    "grace-period",
    "scrape-annotation",
    "memory-limit",
    "image-versions",
    "auth-token",
    "network-policy",
    "job-limits",
    "job-id",
    "completion-hook",
    "replica-sets",
    "etcd",
]

REQUIRED_LABELS = [
    "app.kubernetes.io/name",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/component",
    "app.kubernetes.io/part-of",
    "app.kubernetes.io/version",
]

GPU_RESOURCE = "nvidia.com/gpu"

# Kinds with a pod template (spec.template).
WORKLOAD_KINDS = ("StatefulSet", "Job", "Deployment")

MIB = 1 << 20
# memory-limit: what a server process takes besides its tables. An idle
# ps_server with the CUDA backend linked measured 170 MiB RSS (one small
# table, metrics on); rounded up for gRPC buffers and in-flight chunks.
PROCESS_BASELINE_BYTES = 256 * MIB
# grace-period: on SIGTERM ps_server lets in-flight RPCs finish for up to 5 s
# (shutdown_grace, server/server.h), then writes its shard's checkpoint. The
# estimate assumes a slow network volume (50 MiB/s sustained), doubles the
# write time and adds 10 s for fsync, rename and exit.
SHUTDOWN_DRAIN_S = 5
CHECKPOINT_WRITE_BYTES_PER_S = 50 * MIB
GRACE_FIXED_S = 10

# Pod components the NetworkPolicy may admit to the servers' gRPC port
# (servers themselves only with replication: the Follow stream).
GRPC_CLIENT_COMPONENTS = ("worker", "admin")
# Pod components etcd's NetworkPolicy may admit to its client port: servers
# (roles), workers and admin (clients look primaries up), the completion hook
# (it deletes the cluster's keys once the servers are gone).
ETCD_CLIENT_COMPONENTS = ("server", "worker", "admin", "completion-hook")
# Components that run a pinned image of their own, not ours (image-versions).
THIRD_PARTY_COMPONENTS = ("etcd",)


class CheckError(Exception):
    """A check found a problem; the message says which."""


class Skip(Exception):
    """A check could not run because an earlier one failed."""


# ---------------------------------------------------------------------------
# Helpers over rendered documents.


def doc_id(doc):
    meta = doc.get("metadata") or {}
    ns = meta.get("namespace")
    name = meta.get("name", "?")
    return "%s %s" % (doc.get("kind", "?"), "%s/%s" % (ns, name) if ns else name)


def only(docs, kind):
    found = [d for d in docs if d.get("kind") == kind]
    if len(found) != 1:
        raise CheckError("expected exactly one %s, found %d" % (kind, len(found)))
    return found[0]


def first_container(workload):
    containers = ((workload.get("spec") or {}).get("template") or {}).get("spec", {}).get(
        "containers") or []
    if not containers:
        raise CheckError("%s has no containers" % doc_id(workload))
    return containers[0]


def pod_spec(workload):
    return ((workload.get("spec") or {}).get("template") or {}).get("spec") or {}


def server_args(sts):
    container = first_container(sts)
    return [str(a) for a in (container.get("command") or []) + (container.get("args") or [])]


def flag_value(container, flag):
    """Value of --flag=V or --flag V in the container's command + args."""
    argv = [str(a) for a in (container.get("command") or []) + (container.get("args") or [])]
    for i, arg in enumerate(argv):
        if arg.startswith(flag + "="):
            return arg[len(flag) + 1:]
        if arg == flag and i + 1 < len(argv):
            return argv[i + 1]
    return None


def flag_values(container, flag):
    """Every value of a repeated --flag=V / --flag V, in order."""
    argv = [str(a) for a in (container.get("command") or []) + (container.get("args") or [])]
    values = []
    for i, arg in enumerate(argv):
        if arg.startswith(flag + "="):
            values.append(arg[len(flag) + 1:])
        elif arg == flag and i + 1 < len(argv):
            values.append(argv[i + 1])
    return values


def resolve_port(container, port):
    """A probe/targetPort (number or name) as the container port number."""
    for p in container.get("ports") or []:
        if port == p.get("containerPort") or port == p.get("name"):
            return p.get("containerPort")
    return None


def named_port(container, name):
    for p in container.get("ports") or []:
        if p.get("name") == name:
            return p.get("containerPort")
    return None


def workload_by_component(docs, kind, component):
    """The one `kind` whose pod template is labelled `component`."""
    found = [d for d in docs if d.get("kind") == kind and
             pod_labels(d).get("app.kubernetes.io/component") == component]
    if len(found) != 1:
        raise CheckError("expected exactly one %s of component %s, found %d" %
                         (kind, component, len(found)))
    return found[0]


def worker_job(docs):
    return workload_by_component(docs, "Job", "worker")


# Replicated shards (components/replicated): one server StatefulSet per
# replica rank, told apart by this pod label ("0" or absent: rank 0, whose
# pods cluster.servers names).
RANK_LABEL = "parameter-server/replica-rank"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


def replica_rank(workload):
    try:
        return int(pod_labels(workload).get(RANK_LABEL, "0"))
    except ValueError:
        raise CheckError("%s: label %s is %r, not a rank" % (
            doc_id(workload), RANK_LABEL, pod_labels(workload).get(RANK_LABEL)))


def server_sets(docs):
    """The server StatefulSets (pod component "server"), by replica rank."""
    found = [d for d in docs if d.get("kind") == "StatefulSet" and
             pod_labels(d).get("app.kubernetes.io/component") == "server"]
    if not found:
        raise CheckError("no StatefulSet of component server")
    found.sort(key=replica_rank)
    ranks = [replica_rank(d) for d in found]
    if ranks != list(range(len(found))):
        raise CheckError("server StatefulSets have replica ranks %s (want 0..%d, one each)" %
                         (ranks, len(found) - 1))
    return found


def server_set(docs):
    """The rank-0 server StatefulSet: the one cluster.servers names. The other
    ranks' pod templates equal its own (check replica-sets), so the checks of
    the server pods look at it alone."""
    return server_sets(docs)[0]


def mounted_volume(pod, container, path):
    """(volume, path inside the volume) of the mount holding `path`."""
    volumes = {v.get("name"): v for v in pod.get("volumes") or []}
    best = None
    for mount in container.get("volumeMounts") or []:
        mount_path = mount.get("mountPath", "").rstrip("/")
        if path.startswith(mount_path + "/") and (
                best is None or len(mount_path) > len(best[1])):
            best = (mount, mount_path)
    if best is None:
        return None, None
    return volumes.get(best[0].get("name")) or {"name": best[0].get("name")}, \
        path[len(best[1]) + 1:]


def configmap_key(docs, workload, volume, rel, path):
    """(ConfigMap, key) that the file `rel` of a ConfigMap volume is."""
    cm_name = volume["configMap"].get("name")
    key = rel
    items = volume["configMap"].get("items")
    if items:
        key = next((i.get("key") for i in items if i.get("path") == rel), None)
        if key is None:
            raise CheckError("%s: ConfigMap volume items do not provide %s" %
                             (doc_id(workload), rel))
    maps = [d for d in docs if d.get("kind") == "ConfigMap" and
            (d.get("metadata") or {}).get("name") == cm_name]
    if not maps:
        raise CheckError("%s mounts ConfigMap %s, which is not rendered" %
                         (doc_id(workload), cm_name))
    if key not in (maps[0].get("data") or {}):
        raise CheckError("ConfigMap %s has no key %r (for %s)" % (cm_name, key, path))
    return maps[0], key


def injector_of(workload, volume, rel):
    """The init container that writes file `rel` of emptyDir `volume` with
    `ps_ctl inject-token --out=...`, or None."""
    pod = pod_spec(workload)
    for init in pod.get("initContainers") or []:
        out = flag_value(init, "--out")
        argv = [str(a) for a in (init.get("command") or []) + (init.get("args") or [])]
        if out is None or "inject-token" not in argv:
            continue
        out_volume, out_rel = mounted_volume(pod, init, out)
        if out_volume is not None and out_volume.get("name") == volume.get("name") and \
                out_rel == rel:
            return init
    return None


def injected_token(workload, init):
    """(volume, path inside it) of the --token_file of an inject-token init
    container."""
    token_file = flag_value(init, "--token_file") or ""
    volume, rel = mounted_volume(pod_spec(workload), init, token_file)
    return volume or {"name": "(none for %r)" % token_file}, rel


def config_source(docs, workload, container=None):
    """Where the --config file of `container` (default: the workload's first)
    comes from: a dict with "configmap", "key", "path" and, when an
    `inject-token` init container writes it, "token": (Secret volume, key)."""
    container = container or first_container(workload)
    path = flag_value(container, "--config")
    if not path:
        raise CheckError("%s: container %s passes no --config" %
                         (doc_id(workload), container.get("name")))
    pod = pod_spec(workload)
    volume, rel = mounted_volume(pod, container, path)
    if volume is None:
        raise CheckError("%s: no volume is mounted where --config=%s lives" %
                         (doc_id(workload), path))
    if "configMap" in volume:
        cm, key = configmap_key(docs, workload, volume, rel, path)
        return {"configmap": cm, "key": key, "path": path, "token": None}
    if "emptyDir" in volume:
        init = injector_of(workload, volume, rel)
        if init is None:
            raise CheckError("%s: %s is on emptyDir %s, which no `ps_ctl inject-token` "
                             "init container writes" % (doc_id(workload), path,
                                                        volume.get("name")))
        source = config_source(docs, workload, init)
        source["token"] = injected_token(workload, init)
        source["path"] = path
        return source
    raise CheckError("%s: %s is on volume %s, which is neither a ConfigMap nor an "
                     "emptyDir written by an init container" %
                     (doc_id(workload), path, volume.get("name")))


def subset(selector, labels):
    return all(labels.get(k) == v for k, v in (selector or {}).items())


# ---------------------------------------------------------------------------
# The checks. Each takes a context dict and raises CheckError on a problem.


def kustomize_sources(directory, seen=None):
    """YAML files of a kustomization and of the local directories it includes."""
    seen = seen if seen is not None else set()
    directory = os.path.realpath(directory)
    if directory in seen:
        return []
    seen.add(directory)
    files = sorted(os.path.join(directory, f) for f in os.listdir(directory)
                   if f.endswith((".yaml", ".yml")))
    for name in ("kustomization.yaml", "kustomization.yml", "Kustomization"):
        kfile = os.path.join(directory, name)
        if os.path.exists(kfile):
            with open(kfile) as f:
                try:
                    k = yaml.safe_load(f) or {}
                except yaml.YAMLError:
                    k = {}  # yamllint reports it
            for entry in (k.get("resources") or []) + (k.get("components") or []) + (
                    k.get("bases") or []):
                sub = os.path.join(directory, str(entry))
                if os.path.isdir(sub):
                    files += kustomize_sources(sub, seen)
            break
    return files


def run_yamllint(ctxs):
    """One yamllint run over the sources of every target; results per target."""
    files = {}
    for ctx in ctxs:
        ctx["sources"] = kustomize_sources(ctx["dir"])
        for f in ctx["sources"]:
            files[f] = []
    proc = subprocess.run(
        ["yamllint", "--strict", "-f", "parsable", "-c",
         os.path.join(HERE, "yamllint.yaml")] + sorted(files),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    unattributed = []
    for line in proc.stdout.strip().splitlines():
        m = re.match(r"(.+?):\d+:\d+: ", line)
        if m and m.group(1) in files:
            files[m.group(1)].append(line)
        elif line.strip():
            unattributed.append(line)
    if proc.returncode != 0 and not any(files.values()) and not unattributed:
        unattributed.append("yamllint exited %d" % proc.returncode)
    for ctx in ctxs:
        problems = unattributed + [l for f in ctx["sources"] for l in files[f]]
        if problems:
            ctx["results"]["yamllint"] = (False, "; ".join(
                os.path.relpath(l, ctx["repo"]) if l.startswith("/") else l
                for l in problems[:10]))
        else:
            ctx["results"]["yamllint"] = (True, "%d files" % len(ctx["sources"]))


def model_module(doc):
    api = doc.get("apiVersion", "")
    kind = doc.get("kind", "")
    if not re.fullmatch(r"[A-Za-z0-9./-]+", api) or not re.fullmatch(r"[A-Za-z0-9]+", kind):
        return None
    module = "kubernetes-models/%s/%s" % (api, kind)
    if not os.path.exists(os.path.join(_NODE_MODULES[0], module + ".d.ts")):
        return None
    return module


_NODE_MODULES = [None]

# kubectl: $KUBECTL, else the one tests/k8s/setup.sh unpacked when the
# machine's was missing or too old, else the machine's.
KUBECTL = [os.environ.get("KUBECTL") or (
    os.path.join(HERE, ".tools", "bin", "kubectl")
    if os.path.exists(os.path.join(HERE, ".tools", "bin", "kubectl")) else "kubectl")]


def write_schema_programs(ctx):
    """Writes <work>/check.ts (one typed literal per document) and
    <work>/validate.js (exports a function returning validate() errors)."""
    docs = ctx["docs"]
    ts = ["// Generated by tests/k8s/validate_k8s.py: one typed literal per document."]
    js = ["'use strict';", "// Generated by tests/k8s/validate_k8s.py.", "const docs = [];"]
    ranges = []  # (first_line, last_line, doc id)
    imports = {}
    for doc in docs:
        module = model_module(doc)
        if module is None:
            raise CheckError("%s: no kubernetes-models class for apiVersion %r kind %r" %
                             (doc_id(doc), doc.get("apiVersion"), doc.get("kind")))
        imports[module] = doc["kind"]
    for module, kind in sorted(imports.items()):
        alias = module.split("/", 1)[1].replace("/", "_").replace(".", "_").replace("-", "_")
        ts.append('import { I%s as T_%s } from "%s";' % (kind, alias, module))
        js.append('const M_%s = require("%s").%s;' % (alias, module, kind))
        imports[module] = alias
    ts.append("")
    for i, doc in enumerate(docs):
        alias = imports[model_module(doc)]
        body = json.dumps(doc, indent=2, sort_keys=True).splitlines()
        first = len(ts) + 1
        ts.append("export const doc%d: T_%s = %s" % (i, alias, body[0]))
        ts.extend(body[1:])
        ts[-1] += ";"
        ranges.append((first, len(ts), doc_id(doc)))
        js.append("docs.push([%s, () => new M_%s(%s)]);" % (
            json.dumps(doc_id(doc)), alias, json.dumps(doc, sort_keys=True)))
    js += [
        "module.exports = function validateAll() {",
        "  const errors = [];",
        "  for (const [id, make] of docs) {",
        "    try { make().validate(); } catch (e) { errors.push(id + ': ' + e.message); }",
        "  }",
        "  return errors;",
        "};",
    ]
    with open(os.path.join(ctx["work"], "check.ts"), "w") as f:
        f.write("\n".join(ts) + "\n")
    with open(os.path.join(ctx["work"], "validate.js"), "w") as f:
        f.write("\n".join(js) + "\n")
    ctx["schema_ranges"] = ranges


def run_schema_checks(ctxs, work_root):
    """One tsc program and one node process for the documents of every target."""
    ready = []
    for ctx in ctxs:
        if "docs" not in ctx:
            continue
        try:
            write_schema_programs(ctx)
            ready.append(ctx)
        except CheckError as e:
            ctx["results"]["schema-types"] = (False, str(e))
            ctx["results"]["schema-validate"] = (False, str(e))
    if not ready:
        return
    link = os.path.join(work_root, "node_modules")
    if not os.path.exists(link):
        os.symlink(_NODE_MODULES[0], link)
    by_dir = {os.path.basename(ctx["work"]): ctx for ctx in ready}

    # Types: excess-property checks on fresh object literals catch unknown
    # fields; assignability catches wrong types and missing required fields.
    with open(os.path.join(work_root, "tsconfig.json"), "w") as f:
        json.dump({"compilerOptions": {"target": "es2020", "lib": ["es2020"],
                                       "module": "commonjs", "moduleResolution": "node",
                                       "types": [], "strict": True, "noEmit": True},
                   "files": sorted(d + "/check.ts" for d in by_dir)}, f, indent=1)
    tsc = os.path.join(_NODE_MODULES[0], "typescript", "bin", "tsc")
    proc = subprocess.run(
        ["node", tsc, "--strict", "--noEmit", "--pretty", "false", "-p", "tsconfig.json"],
        cwd=work_root, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        universal_newlines=True)
    problems = {d: [] for d in by_dir}
    unattributed = []
    for line in proc.stdout.strip().splitlines():
        m = re.match(r"([^/(]+)/check\.ts\((\d+),\d+\): (.*)", line)
        if m and m.group(1) in by_dir:
            n = int(m.group(2))
            owner = next((r[2] for r in by_dir[m.group(1)]["schema_ranges"]
                          if r[0] <= n <= r[1]), "?")
            problems[m.group(1)].append("%s: %s" % (owner, m.group(3)))
        elif line.strip() and not line.startswith(" "):
            unattributed.append(line.strip())
    if proc.returncode != 0 and not any(problems.values()) and not unattributed:
        unattributed.append("tsc exited %d" % proc.returncode)
    for d, ctx in by_dir.items():
        found = unattributed + problems[d]
        ctx["results"]["schema-types"] = (
            (False, "; ".join(found[:8])) if found else (True, "%d documents" % len(ctx["docs"])))

    # Runtime: the models' JSON-schema validation (formats such as quantities).
    with open(os.path.join(work_root, "validate_all.js"), "w") as f:
        f.write("'use strict';\nconst out = {};\n")
        for d in sorted(by_dir):
            f.write("out[%s] = require('./%s/validate.js')();\n" % (json.dumps(d), d))
        f.write("console.log(JSON.stringify(out));\n")
    proc = subprocess.run(["node", "validate_all.js"], cwd=work_root, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True)
    try:
        out = json.loads(proc.stdout) if proc.returncode == 0 else None
    except ValueError:
        out = None
    for d, ctx in by_dir.items():
        if out is None:
            ctx["results"]["schema-validate"] = (False, "node failed: %s" % proc.stderr.strip())
        elif out.get(d):
            ctx["results"]["schema-validate"] = (False, "; ".join(out[d][:8]))
        else:
            ctx["results"]["schema-validate"] = (True, "%d documents" % len(ctx["docs"]))


def check_config_parse(ctx):
    sts = server_set(ctx["docs"])
    source = config_source(ctx["docs"], sts)
    cm, key = source["configmap"], source["key"]
    path = os.path.join(ctx["work"], "cluster_config_from_configmap.yaml")
    with open(path, "w") as f:
        f.write(cm["data"][key])
    proc = subprocess.run([ctx["checker"], path], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True)
    if proc.returncode != 0:
        raise CheckError("ConfigMap %s key %s: %s" % (
            cm["metadata"]["name"], key, proc.stderr.strip().replace(path, key)))
    ctx["config"] = json.loads(proc.stdout)
    return "ConfigMap %s key %s: %d servers, %d workers" % (
        cm["metadata"]["name"], key, len(ctx["config"]["servers"]),
        ctx["config"]["num_workers"])


def need_config(ctx):
    if "config" not in ctx:
        raise Skip("config-parse failed")
    return ctx["config"]


def check_config_mount(ctx):
    sts = server_set(ctx["docs"])
    job = worker_job(ctx["docs"])
    s = config_source(ctx["docs"], sts)
    j = config_source(ctx["docs"], job)
    for other in server_sets(ctx["docs"])[1:]:
        o = config_source(ctx["docs"], other)
        if (o["configmap"]["metadata"]["name"], o["key"]) != (
                s["configmap"]["metadata"]["name"], s["key"]):
            raise CheckError("%s reads ConfigMap %s key %s, %s %s key %s" % (
                other["metadata"]["name"], o["configmap"]["metadata"]["name"], o["key"],
                sts["metadata"]["name"], s["configmap"]["metadata"]["name"], s["key"]))
    if (s["configmap"]["metadata"]["name"], s["key"]) != (
            j["configmap"]["metadata"]["name"], j["key"]):
        raise CheckError("servers read ConfigMap %s key %s, workers %s key %s" % (
            s["configmap"]["metadata"]["name"], s["key"],
            j["configmap"]["metadata"]["name"], j["key"]))
    return "%s key %s, read as %s / %s" % (s["configmap"]["metadata"]["name"], s["key"],
                                           s["path"], j["path"])


def server_grpc_port(ctx):
    """The port every cluster.servers entry uses; CheckError if they differ."""
    config = need_config(ctx)
    ports = set()
    for addr in config["servers"]:
        m = re.fullmatch(r"(.+):(\d+)", addr)
        if not m:
            raise CheckError("server address %r has no port" % addr)
        ports.add(int(m.group(2)))
    if len(ports) != 1:
        raise CheckError("cluster.servers use different ports %s" % sorted(ports))
    return ports.pop()


def check_server_addresses(ctx):
    config = need_config(ctx)
    sts = server_set(ctx["docs"])
    name = sts["metadata"]["name"]
    ns = sts["metadata"].get("namespace")
    if not ns:
        raise CheckError("StatefulSet %s has no namespace" % name)
    svc_name = (sts.get("spec") or {}).get("serviceName")
    services = [d for d in ctx["docs"] if d.get("kind") == "Service" and
                d["metadata"].get("name") == svc_name and d["metadata"].get("namespace") == ns]
    if not services:
        raise CheckError("serviceName %r of StatefulSet %s is not a rendered Service in %s" %
                         (svc_name, name, ns))
    svc = services[0]
    if svc["spec"].get("clusterIP") != "None":
        raise CheckError("Service %s is not headless (clusterIP: None)" % svc_name)
    if svc["spec"].get("publishNotReadyAddresses") is not True:
        raise CheckError("Service %s does not set publishNotReadyAddresses: true" % svc_name)
    grpc_svc = [p for p in svc["spec"].get("ports") or [] if p.get("name") == "grpc"]
    if not grpc_svc:
        raise CheckError("Service %s has no port named grpc" % svc_name)
    container_port = named_port(first_container(sts), "grpc")
    if container_port is None:
        raise CheckError("server container has no port named grpc")
    if grpc_svc[0].get("port") != container_port:
        raise CheckError("Service grpc port %s != container grpc port %s (a headless Service "
                         "does not remap ports)" % (grpc_svc[0].get("port"), container_port))
    replicas = sts["spec"].get("replicas", 1)
    expected = ["%s-%d.%s.%s.svc.cluster.local:%d" % (name, i, svc_name, ns, container_port)
                for i in range(replicas)]
    if config["servers"] != expected:
        raise CheckError("cluster.servers %s != the StatefulSet's pods %s (replicas %d)" %
                         (config["servers"], expected, replicas))
    return "%d shards" % replicas


def check_worker_count(ctx):
    config = need_config(ctx)
    job = worker_job(ctx["docs"])
    spec = job.get("spec") or {}
    if spec.get("completionMode") != "Indexed":
        raise CheckError("Job %s is not completionMode: Indexed" % job["metadata"]["name"])
    n = config["num_workers"]
    if spec.get("completions") != n or spec.get("parallelism") != n:
        raise CheckError("cluster.num_workers %d != Job completions %s / parallelism %s" %
                         (n, spec.get("completions"), spec.get("parallelism")))
    return "%d workers" % n


def check_probe_ports(ctx):
    port = server_grpc_port(ctx)
    sts = server_set(ctx["docs"])
    container = first_container(sts)
    if named_port(container, "grpc") != port:
        raise CheckError("container port grpc %s != cluster.servers port %d" %
                         (named_port(container, "grpc"), port))
    for required in ("readinessProbe", "livenessProbe"):
        if "grpc" not in (container.get(required) or {}):
            raise CheckError("server container has no gRPC %s" % required)
    for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
        probe = container.get(kind)
        if not probe:
            continue
        for handler in ("grpc", "tcpSocket", "httpGet"):
            if handler in probe:
                target = probe[handler].get("port")
                resolved = resolve_port(container, target)
                if resolved is None:
                    raise CheckError("%s %s port %r is not a container port" %
                                     (kind, handler, target))
                if handler == "grpc" and resolved != port:
                    raise CheckError("%s grpc port %d != the server port %d" %
                                     (kind, resolved, port))
    for svc in (d for d in ctx["docs"] if d.get("kind") == "Service"):
        if not subset(svc["spec"].get("selector"), pod_labels(sts)):
            continue
        for p in svc["spec"].get("ports") or []:
            target = p.get("targetPort", p.get("port"))
            if resolve_port(container, target) is None:
                raise CheckError("Service %s port %s targets %r, not a container port" %
                                 (svc["metadata"]["name"], p.get("name"), target))
    return "gRPC port %d" % port


def check_metrics_port(ctx):
    config = need_config(ctx)
    sts = server_set(ctx["docs"])
    container = first_container(sts)
    want = config["metrics_port"]
    have = named_port(container, "metrics")
    if want <= 0:
        if have is not None:
            raise CheckError("container exposes metrics port %s but server.metrics_port is %d" %
                             (have, want))
        return "metrics off"
    if have != want:
        raise CheckError("server.metrics_port %d != container port metrics %s" % (want, have))
    svc_name = sts["spec"].get("serviceName")
    for svc in ctx["docs"]:
        if svc.get("kind") == "Service" and svc["metadata"].get("name") == svc_name:
            ports = [p for p in svc["spec"].get("ports") or [] if p.get("name") == "metrics"]
            if not ports or resolve_port(container, ports[0].get("targetPort",
                                                                ports[0].get("port"))) != want:
                raise CheckError("Service %s has no metrics port reaching %d" % (svc_name, want))
    return "port %d" % want


def check_checkpoint_mount(ctx):
    config = need_config(ctx)
    want = config["checkpoint_dir"].rstrip("/")
    if config["replication_factor"] > 1:
        # The parser refuses checkpoint_dir with replication; a claim would
        # hold nothing and outlive the pods.
        for sts in server_sets(ctx["docs"]):
            if sts["spec"].get("volumeClaimTemplates"):
                raise CheckError("StatefulSet %s has volumeClaimTemplates %s, but replicated "
                                 "shards write no checkpoints" % (
                                     sts["metadata"]["name"],
                                     [c["metadata"]["name"]
                                      for c in sts["spec"]["volumeClaimTemplates"]]))
        return "replication factor %d: no checkpoints, no checkpoint volumes" % (
            config["replication_factor"])
    if not want:
        raise CheckError("server.checkpoint_dir is empty: shards would lose their state on "
                         "restart")
    sts = server_set(ctx["docs"])
    claims = {c["metadata"]["name"] for c in sts["spec"].get("volumeClaimTemplates") or []}
    mounts = first_container(sts).get("volumeMounts") or []
    at = [m for m in mounts if m.get("mountPath", "").rstrip("/") == want]
    if not at:
        raise CheckError("no volume is mounted at server.checkpoint_dir %s (mounts: %s)" %
                         (want, [m.get("mountPath") for m in mounts]))
    if at[0].get("name") not in claims:
        raise CheckError("%s is volume %s, not one of the volumeClaimTemplates %s" %
                         (want, at[0].get("name"), sorted(claims)))
    if at[0].get("readOnly"):
        raise CheckError("%s is mounted read-only" % want)
    # A claim per pod: no server sees the others' directories, so the shared
    # directory rule would refuse every restore once checkpoints exist.
    if config["checkpoint_agreement"] != "peers" and \
            "--allow_inconsistent_restore" not in server_args(sts):
        raise CheckError("each server pod has its own claim %s, but "
                         "server.checkpoint_agreement is %s (one directory shared by every "
                         "server): set server.checkpoint_agreement: peers" %
                         (at[0]["name"], config["checkpoint_agreement"]))
    return "%s on claim %s, checkpoint_agreement %s" % (
        want, at[0]["name"], config["checkpoint_agreement"])


def pod_labels(workload):
    return (((workload.get("spec") or {}).get("template") or {}).get("metadata") or {}).get(
        "labels") or {}


def check_selectors(ctx):
    sets = server_sets(ctx["docs"])
    for sts in sets:
        labels = pod_labels(sts)
        sel = ((sts["spec"].get("selector") or {}).get("matchLabels")) or {}
        if not sel or not subset(sel, labels):
            raise CheckError("StatefulSet %s selector %s does not select its pods %s" %
                             (sts["metadata"]["name"], sel, labels))
        for other in sets:
            if other is not sts and subset(sel, pod_labels(other)):
                raise CheckError("StatefulSet %s selector %s also selects the pods of %s" %
                                 (sts["metadata"]["name"], sel, other["metadata"]["name"]))
        svc = [d for d in ctx["docs"] if d.get("kind") == "Service" and
               d["metadata"]["name"] == sts["spec"].get("serviceName")]
        if svc and not (svc[0]["spec"].get("selector") and
                        subset(svc[0]["spec"]["selector"], labels)):
            raise CheckError("Service %s selector %s does not select the server pods of %s" %
                             (svc[0]["metadata"]["name"], svc[0]["spec"].get("selector"),
                              sts["metadata"]["name"]))
        # One budget over the pods of every rank: at most one server pod (so
        # never both replicas of a shard) down for a drain at a time.
        pdbs = [d for d in ctx["docs"] if d.get("kind") == "PodDisruptionBudget"]
        if not pdbs:
            raise CheckError("no PodDisruptionBudget for the servers")
        for pdb in pdbs:
            psel = ((pdb.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
            if not psel or not subset(psel, labels):
                raise CheckError("PodDisruptionBudget %s selector %s does not select the "
                                 "server pods of %s" % (pdb["metadata"]["name"], psel,
                                                        sts["metadata"]["name"]))
    return "%d server StatefulSets" % len(sets)


def check_labels(ctx):
    problems = []
    versions = {}
    for doc in ctx["docs"]:
        targets = [("", (doc.get("metadata") or {}).get("labels") or {})]
        if doc.get("kind") in WORKLOAD_KINDS:
            targets.append((" pod template", pod_labels(doc)))
        for where, labels in targets:
            missing = [l for l in REQUIRED_LABELS if not labels.get(l)]
            if missing:
                problems.append("%s%s lacks %s" % (doc_id(doc), where, ", ".join(missing)))
            if labels.get("app.kubernetes.io/version"):
                versions.setdefault(labels["app.kubernetes.io/version"], []).append(
                    doc_id(doc) + where)
    if len(versions) > 1:
        # Components write the base's labels out; one of them fell behind.
        problems.append("different app.kubernetes.io/version labels: %s" % "; ".join(
            "%s on %s" % (v, ", ".join(sorted(w)[:4])) for v, w in sorted(versions.items())))
    if problems:
        raise CheckError("; ".join(problems))
    return "%d documents" % len(ctx["docs"])


def gpu_limit(container):
    limits = ((container.get("resources") or {}).get("limits")) or {}
    try:
        return int(str(limits.get(GPU_RESOURCE, 0)))
    except ValueError:
        raise CheckError("%s limit %r is not an integer" % (GPU_RESOURCE,
                                                          limits.get(GPU_RESOURCE)))


def check_gpu_resources(ctx):
    config = need_config(ctx)
    pairs = [("server", server_set(ctx["docs"]), config["server_device"],
              "server.device"),
             ("worker", worker_job(ctx["docs"]), config["training_device"],
              "training.device")]
    notes = []
    for role, workload, device, key in pairs:
        gpus = gpu_limit(first_container(workload))
        if device == "cuda" and gpus < 1:
            raise CheckError("%s is cuda but the %s container has no %s limit" %
                             (key, role, GPU_RESOURCE))
        if device == "cpu" and gpus > 0:
            raise CheckError("%s is cpu but the %s container requests %d %s" %
                             (key, role, gpus, GPU_RESOURCE))
        notes.append("%s %s/%d gpu" % (role, device, gpus))
    return ", ".join(notes)


def check_images(ctx):
    images = []
    for workload in ctx["docs"]:
        spec = pod_spec(workload) if workload.get("kind") in WORKLOAD_KINDS else {}
        for c in (spec.get("initContainers") or []) + (spec.get("containers") or []):
            image = c.get("image", "")
            last = image.rsplit("/", 1)[-1]
            if "@" not in last and ":" not in last:
                raise CheckError("%s container %s: image %r has no tag" %
                                 (doc_id(workload), c.get("name"), image))
            if last.endswith(":latest"):
                raise CheckError("%s container %s: image %r uses :latest" %
                                 (doc_id(workload), c.get("name"), image))
            images.append(image)
    return ", ".join(sorted(set(images)))


_QUANTITY = re.compile(r"([0-9.]+(?:[eE][+-]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?")
_SUFFIX = {None: 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15,
           "E": 1e18, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40,
           "Pi": 1 << 50, "Ei": 1 << 60}


def quantity_bytes(value):
    """A Kubernetes quantity ("4Gi", "512M", "1e9") in bytes."""
    m = _QUANTITY.fullmatch(str(value).strip())
    if not m:
        raise CheckError("%r is not a quantity" % value)
    return float(m.group(1)) * _SUFFIX[m.group(2)]


def mib(n):
    return "%.1f MiB" % (n / MIB)


def check_grace_period(ctx):
    config = need_config(ctx)
    sts = server_set(ctx["docs"])
    grace = pod_spec(sts).get("terminationGracePeriodSeconds", 30)
    size = config["shard_checkpoint_bytes"] if config["checkpoint_dir"] else 0
    need = int(math.ceil(SHUTDOWN_DRAIN_S + GRACE_FIXED_S +
                         2.0 * size / CHECKPOINT_WRITE_BYTES_PER_S))
    if grace < need:
        raise CheckError(
            "terminationGracePeriodSeconds %s < %d s needed for the final checkpoint: "
            "%d s RPC drain + %d s + 2 x %s (largest shard's checkpoint) at %d MiB/s; "
            "SIGKILL would cut the checkpoint short" %
            (grace, need, SHUTDOWN_DRAIN_S, GRACE_FIXED_S, mib(size),
             CHECKPOINT_WRITE_BYTES_PER_S // MIB))
    return "%s s >= %d s (checkpoint %s)" % (grace, need, mib(size))


def check_scrape_annotation(ctx):
    config = need_config(ctx)
    sts = server_set(ctx["docs"])
    annotations = ((sts["spec"].get("template") or {}).get("metadata") or {}).get(
        "annotations") or {}
    want = config["metrics_port"]
    scrape = annotations.get("prometheus.io/scrape")
    if want <= 0:
        if scrape == "true":
            raise CheckError("prometheus.io/scrape is \"true\" but server.metrics_port is "
                             "%d (metrics off)" % want)
        return "metrics off, not scraped"
    if scrape != "true":
        raise CheckError("server pods export metrics on %d but prometheus.io/scrape is %r"
                         % (want, scrape))
    port = annotations.get("prometheus.io/port")
    if port != str(want):
        raise CheckError("prometheus.io/port %r != server.metrics_port %d: Prometheus "
                         "would scrape a port nothing listens on" % (port, want))
    path = annotations.get("prometheus.io/path", "/metrics")
    if path != "/metrics":
        raise CheckError("prometheus.io/path %r: ps_server serves /metrics" % path)
    return "port %s" % port


def check_memory_limit(ctx):
    config = need_config(ctx)
    sts = server_set(ctx["docs"])
    tables = config["shard_resident_bytes"]
    sparse = ""
    if config["sparse_tables"]:
        sparse = "; sparse tables %s not counted (rows unbounded)" % ", ".join(
            config["sparse_tables"])
    if config["server_device"] == "cuda":
        return "device cuda: the tables (%s per shard) live in GPU memory%s" % (
            mib(tables), sparse)
    limits = ((first_container(sts).get("resources") or {}).get("limits")) or {}
    if "memory" not in limits:
        raise CheckError("the server container has no memory limit; the largest shard's "
                         "dense tables need %s plus %s for the process" %
                         (mib(tables), mib(PROCESS_BASELINE_BYTES)))
    limit = quantity_bytes(limits["memory"])
    need = tables + PROCESS_BASELINE_BYTES
    if limit < need:
        raise CheckError(
            "server memory limit %s (%s) < %s: the largest shard's dense tables take "
            "%s (elements x 4 B x (1 + optimizer slots + 1 if sync); "
            "deploy/ctl/capacity.h) plus %s for the process%s" %
            (limits["memory"], mib(limit), mib(need), mib(tables),
             mib(PROCESS_BASELINE_BYTES), sparse))
    return "limit %s >= tables %s + process %s%s" % (
        limits["memory"], mib(tables), mib(PROCESS_BASELINE_BYTES), sparse)


def containers_of(doc):
    spec = pod_spec(doc)
    return (spec.get("initContainers") or []) + (spec.get("containers") or [])


def check_image_versions(ctx):
    where = {}
    for doc in ctx["docs"]:
        if doc.get("kind") not in WORKLOAD_KINDS or \
                pod_labels(doc).get("app.kubernetes.io/component") in THIRD_PARTY_COMPONENTS:
            continue
        for c in containers_of(doc):
            where.setdefault(c.get("image", ""), []).append(
                "%s/%s" % (doc["metadata"]["name"], c.get("name")))
    if len(where) > 1:
        raise CheckError("containers run different images (servers and workers must "
                         "run one build; the wire protocol and config are versioned "
                         "together): %s" % "; ".join(
                             "%s in %s" % (image, ", ".join(sorted(names)))
                             for image, names in sorted(where.items())))
    if not where:
        raise CheckError("no containers")
    return "one image in %d containers" % sum(len(v) for v in where.values())


def token_source(docs, workload, container):
    """(Secret name, key) the config of `container` gets its token from."""
    source = config_source(docs, workload, container)
    if source["token"] is None:
        raise CheckError("%s container %s reads %s straight from ConfigMap %s: no "
                         "bearer token, auth is off" %
                         (doc_id(workload), container.get("name"), source["path"],
                          source["configmap"]["metadata"]["name"]))
    return secret_key(workload, *source["token"])


def secret_key(workload, volume, rel):
    secret = volume.get("secret")
    if secret is None:
        raise CheckError("%s: the token file is on volume %s, which is not a Secret" %
                         (doc_id(workload), volume.get("name")))
    if secret.get("optional"):
        raise CheckError("%s: Secret %s is optional: pods would start without a token" %
                         (doc_id(workload), secret.get("secretName")))
    key = rel
    for item in secret.get("items") or []:
        if item.get("path") == rel:
            key = item.get("key")
    return secret.get("secretName"), key


def check_auth_token(ctx):
    config = need_config(ctx)
    if config["auth_token_set"]:
        raise CheckError("the ConfigMap's cluster.yaml sets auth_token: anyone who may "
                         "read ConfigMaps has it; keep it in the Secret only")
    docs = ctx["docs"]
    sources = {}
    sts = server_set(docs)
    sources["servers"] = token_source(docs, sts, first_container(sts))
    job = worker_job(docs)
    sources["workers"] = token_source(docs, job, first_container(job))
    for admin in (d for d in docs if d.get("kind") == "Deployment" and
                  pod_labels(d).get("app.kubernetes.io/component") == "admin"):
        injectors = [c for c in pod_spec(admin).get("initContainers") or []
                     if "inject-token" in [str(a) for a in c.get("command") or []]]
        if not injectors:
            raise CheckError("%s has no inject-token init container" % doc_id(admin))
        sources["admin"] = secret_key(admin, *injected_token(admin, injectors[0]))
    if len(set(sources.values())) != 1:
        raise CheckError("different tokens: %s" % ", ".join(
            "%s Secret %s key %s" % (who, name, key)
            for who, (name, key) in sorted(sources.items())))
    name, key = next(iter(sources.values()))
    return "Secret %s key %s for %s" % (name, key, ", ".join(sorted(sources)))


def selects(selector, labels):
    """Whether a LabelSelector selects `labels` (matchLabels only; a selector
    with matchExpressions is treated as selecting nothing we can prove)."""
    selector = selector or {}
    if selector.get("matchExpressions"):
        return False
    return subset(selector.get("matchLabels") or {}, labels)


def rule_covers_port(rule, number, name):
    ports = rule.get("ports")
    if not ports:
        return True
    for p in ports:
        port = p.get("port")
        if port is None or port == name or port == number:
            return True
        if isinstance(port, int) and p.get("endPort") and port <= number <= p["endPort"]:
            return True
    return False


def admitted_peers(docs, labels, port, port_name, allowed, what):
    """Pod selectors the NetworkPolicies selecting pods `labels` admit to
    `port` (number and container port name). CheckError when no policy
    selects the pods or one admits anything but pods of the `allowed`
    components in this namespace."""
    policies = [d for d in docs if d.get("kind") == "NetworkPolicy" and
                selects((d.get("spec") or {}).get("podSelector"), labels)]
    if not policies:
        raise CheckError("no NetworkPolicy selects the %s pods: anything in the "
                         "cluster can reach them" % what)
    admitted = []
    for policy in policies:
        spec = policy["spec"]
        if "Ingress" not in (spec.get("policyTypes") or ["Ingress"]):
            raise CheckError("NetworkPolicy %s does not restrict ingress" %
                             policy["metadata"]["name"])
        for rule in spec.get("ingress") or []:
            if not rule_covers_port(rule, port, port_name):
                continue
            peers = rule.get("from")
            if not peers:
                raise CheckError("NetworkPolicy %s admits every source to the %s port %s"
                                 % (policy["metadata"]["name"], what, port))
            for peer in peers:
                selector = (peer.get("podSelector") or {}).get("matchLabels") or {}
                if "ipBlock" in peer or "namespaceSelector" in peer or \
                        selector.get("app.kubernetes.io/component") not in allowed:
                    raise CheckError(
                        "NetworkPolicy %s admits %s to the %s port %s; only pods of "
                        "component %s may reach it" %
                        (policy["metadata"]["name"], json.dumps(peer, sort_keys=True),
                         what, port, " or ".join(allowed)))
                admitted.append(peer["podSelector"])
    return admitted


def grpc_clients(docs):
    """(who, workload) of every kind of pod that talks to the servers."""
    return [("workers", worker_job(docs))] + [
        ("admin", d) for d in docs if d.get("kind") == "Deployment" and
        pod_labels(d).get("app.kubernetes.io/component") == "admin"]


def check_network_policy(ctx):
    docs = ctx["docs"]
    sets = server_sets(docs)
    grpc = named_port(first_container(sets[0]), "grpc")
    clients = grpc_clients(docs)
    allowed = GRPC_CLIENT_COMPONENTS
    # checkpoint_agreement peers: a starting server asks the others (unknown
    # when the config did not parse: the servers may, and need not, be
    # admitted then).
    agreement = (ctx.get("config") or {}).get("checkpoint_agreement")
    if len(sets) > 1 or agreement == "peers":
        # Replicated shards: a backup follows its primary over the gRPC port.
        allowed += ("server",)
        clients += [("servers", sts) for sts in sets]
    elif agreement is None:
        allowed += ("server",)
    admitted = []
    for sts in sets:
        admitted += admitted_peers(docs, pod_labels(sts), grpc, "grpc", allowed, "servers' gRPC")
    for who, workload in clients:
        if not any(selects(sel, pod_labels(workload)) for sel in admitted):
            raise CheckError("the %s (%s) are not admitted to the servers' gRPC port" %
                             (who, doc_id(workload)))
    return "gRPC port %s from %s only" % (grpc, ", ".join(sorted({w for w, _ in clients})))


def check_job_limits(ctx):
    job = worker_job(ctx["docs"])
    spec = job.get("spec") or {}
    problems = []
    for field, low in (("backoffLimitPerIndex", 0), ("activeDeadlineSeconds", 1),
                       ("ttlSecondsAfterFinished", 0)):
        value = spec.get(field)
        if not isinstance(value, int) or value < low:
            problems.append("%s is %r (want an integer >= %d)" % (field, value, low))
    if "backoffLimitPerIndex" in spec and pod_spec(job).get("restartPolicy") != "Never":
        problems.append("backoffLimitPerIndex needs restartPolicy Never")
    if problems:
        raise CheckError("%s: %s" % (doc_id(job), "; ".join(problems)))
    return "backoffLimitPerIndex %d, activeDeadlineSeconds %d, ttlSecondsAfterFinished %d" % (
        spec["backoffLimitPerIndex"], spec["activeDeadlineSeconds"],
        spec["ttlSecondsAfterFinished"])


JOB_UID_LABEL = "batch.kubernetes.io/controller-uid"


def check_job_id(ctx):
    """The worker container's PS_JOB_ID is the Job's uid (downward API)."""
    job = worker_job(ctx["docs"])
    worker = first_container(job)
    env = {e.get("name"): e for e in worker.get("env") or []}
    source = ((env.get("PS_JOB_ID") or {}).get("valueFrom") or {}).get("fieldRef") or {}
    want = "metadata.labels['%s']" % JOB_UID_LABEL
    if source.get("fieldPath") != want:
        raise CheckError("%s: container %s: PS_JOB_ID is %r (want valueFrom.fieldRef."
                         "fieldPath %s, so every pod of one Job is one job for the servers "
                         "and the next Job is another)" % (doc_id(job), worker.get("name"),
                                                          env.get("PS_JOB_ID"), want))
    return "PS_JOB_ID from %s" % JOB_UID_LABEL


def role_allows(role, group, resource, name, verb):
    for rule in role.get("rules") or []:
        if group in (rule.get("apiGroups") or []) and \
                resource in (rule.get("resources") or []) and \
                verb in (rule.get("verbs") or []) and \
                (not rule.get("resourceNames") or name in rule["resourceNames"]):
            return True
    return False


def cluster_id(ctx):
    """The etcd cluster id the servers use: replication.cluster_id, else the
    stem of the file their --config names (server/replication/keys.h,
    ClusterIdOf), else "ps"."""
    config = need_config(ctx)
    if config["cluster_id"]:
        return config["cluster_id"]
    path = flag_value(first_container(server_set(ctx["docs"])), "--config") or ""
    return os.path.basename(path).split(".")[0] or "ps"


def check_hook_etcd(ctx, container):
    """With replication: the hook's --etcd and --etcd_prefix are the servers'
    etcd and key prefix; returns a note for the check's message. Without
    (one server StatefulSet, no --etcd) the config is not needed."""
    if len(server_sets(ctx["docs"])) <= 1 and not (
            flag_values(container, "--etcd") or flag_values(container, "--etcd_prefix")):
        return ""
    config = need_config(ctx)
    if config["replication_factor"] <= 1:
        return ""
    want = {"--etcd": "http://" + config["etcd_endpoints"][0],
            "--etcd_prefix": "/ps/%s/" % cluster_id(ctx)}
    for flag, value in sorted(want.items()):
        if flag_values(container, flag) != [value]:
            raise CheckError("the hook's %s is %s, not %s (the servers' config): the next "
                             "run's replicas would meet this run's in_sync sets in etcd and "
                             "refuse to serve" % (flag, flag_values(container, flag) or
                                                  "missing", value))
    return "; then deletes %s at %s" % (want["--etcd_prefix"], want["--etcd"])


def check_completion_hook(ctx):
    docs = ctx["docs"]
    sets = server_sets(docs)
    job = worker_job(docs)
    hook = workload_by_component(docs, "Job", "completion-hook")
    container = first_container(hook)
    etcd_note = check_hook_etcd(ctx, container)
    if flag_value(container, "--job") != job["metadata"]["name"]:
        raise CheckError("the hook's --job is %r, not %r" %
                         (flag_value(container, "--job"), job["metadata"]["name"]))
    # Every server StatefulSet (each replica rank's), nothing else.
    names = sorted(sts["metadata"]["name"] for sts in sets)
    if sorted(flag_values(container, "--statefulset")) != names:
        raise CheckError("the hook's --statefulset values are %s, not %s" %
                         (flag_values(container, "--statefulset"), names))
    worker_deadline = (job.get("spec") or {}).get("activeDeadlineSeconds")
    hook_deadline = (hook.get("spec") or {}).get("activeDeadlineSeconds")
    if isinstance(worker_deadline, int) and not (
            isinstance(hook_deadline, int) and hook_deadline > worker_deadline):
        raise CheckError("the hook's activeDeadlineSeconds %r does not outlast the "
                         "workers' %d: it could stop before they end" %
                         (hook_deadline, worker_deadline))
    pod = pod_spec(hook)
    account = pod.get("serviceAccountName") or "default"
    ns = hook["metadata"].get("namespace")
    accounts = [d for d in docs if d.get("kind") == "ServiceAccount" and
                d["metadata"]["name"] == account]
    automount = pod.get("automountServiceAccountToken")
    if automount is None and accounts:
        automount = accounts[0].get("automountServiceAccountToken")
    if automount is False:
        raise CheckError("the hook's pod gets no service account token")
    roles = {d["metadata"]["name"]: d for d in docs if d.get("kind") == "Role"}
    granted = [roles.get(b["roleRef"]["name"]) for b in docs
               if b.get("kind") == "RoleBinding" and b.get("roleRef", {}).get("kind") == "Role"
               and any(s.get("kind") == "ServiceAccount" and s.get("name") == account and
                       s.get("namespace", ns) == ns for s in b.get("subjects") or [])]
    granted = [r for r in granted if r]
    needs = [("batch", "jobs", job["metadata"]["name"], "get")] + [
        ("apps", "statefulsets/scale", name, "patch") for name in names]
    if etcd_note:  # it waits until no pod of any of them runs
        needs += [("apps", "statefulsets", name, "get") for name in names]
    for need in needs:
        if not any(role_allows(r, *need) for r in granted):
            raise CheckError("service account %s may not %s %s %s" %
                             (account, need[3], need[1], need[2]))
    return "%s scales %s to 0 when %s ends%s" % (hook["metadata"]["name"],
                                                 " and ".join(names),
                                                 job["metadata"]["name"], etcd_note)


def first_difference(a, b, path=""):
    """The first path at which two JSON-like values differ, or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return "%s.%s" % (path, key)
            found = first_difference(a[key], b[key], "%s.%s" % (path, key))
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b)):
            found = first_difference(x, y, "%s[%d]" % (path, i))
            if found:
                return found
        return None if len(a) == len(b) else "%s[%d]" % (path, min(len(a), len(b)))
    return None if a == b else path


def template_without_rank(workload):
    template = json.loads(json.dumps((workload.get("spec") or {}).get("template") or {}))
    ((template.get("metadata") or {}).get("labels") or {}).pop(RANK_LABEL, None)
    return template


def env_field(container, name):
    """The fieldRef.fieldPath an env variable comes from, or None."""
    for e in container.get("env") or []:
        if e.get("name") == name:
            return ((e.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath")
    return None


# ps_server's health service for "this replica holds its shard's state"
# (server/server.cc, kReplicaServiceName).
REPLICA_HEALTH_SERVICE = "ps.replication.Replication"


def check_replica_sets(ctx):
    config = need_config(ctx)
    sets = server_sets(ctx["docs"])
    factor = config["replication_factor"]
    names = [sts["metadata"]["name"] for sts in sets]
    if len(sets) != factor:
        raise CheckError("replication.factor is %d but there are %d server StatefulSets %s "
                         "(one per replica rank)" % (factor, len(sets), names))
    if factor == 1:
        return "replication factor 1: one StatefulSet"
    shards = len(config["servers"])
    first = sets[0]
    for sts in sets:
        if sts["spec"].get("replicas", 1) != shards:
            raise CheckError("StatefulSet %s has %s pods, not one per shard (%d)" %
                             (sts["metadata"]["name"], sts["spec"].get("replicas", 1), shards))
        if sts["spec"].get("serviceName") != first["spec"].get("serviceName"):
            raise CheckError("StatefulSet %s is governed by Service %r, %s by %r" % (
                sts["metadata"]["name"], sts["spec"].get("serviceName"),
                first["metadata"]["name"], first["spec"].get("serviceName")))
        diff = first_difference(template_without_rank(first), template_without_rank(sts))
        if diff:
            raise CheckError("the pod template of %s differs from %s's at template%s (the "
                             "replicas of a shard must run alike)" % (
                                 sts["metadata"]["name"], first["metadata"]["name"], diff))
    # Pod i of every rank serves shard i.
    container = first_container(first)
    want_index = "metadata.labels['%s']" % POD_INDEX_LABEL
    if env_field(container, "PS_SERVER_INDEX") != want_index:
        raise CheckError("PS_SERVER_INDEX comes from %r, not %s: the pods of a shard would not "
                         "share its index" % (env_field(container, "PS_SERVER_INDEX"),
                                              want_index))
    # Each replica publishes its own address in etcd.
    if env_field(container, "PS_ADVERTISE_HOST") != "status.podIP":
        raise CheckError("PS_ADVERTISE_HOST comes from %r, not status.podIP: the replicas of a "
                         "shard would publish servers[i]'s host, the rank-0 pod's" %
                         env_field(container, "PS_ADVERTISE_HOST"))
    # Ready only with the shard's state; never restarted while copying it.
    probes = {kind: ((container.get(kind) or {}).get("grpc") or {}).get("service", "")
              for kind in ("readinessProbe", "livenessProbe", "startupProbe")}
    if probes["readinessProbe"] != REPLICA_HEALTH_SERVICE:
        raise CheckError("the servers' readiness probe asks gRPC health service %r, not %r: a "
                         "replica still copying the primary's state would be Ready, and a "
                         "drain could take the primary before the copy ends" % (
                             probes["readinessProbe"], REPLICA_HEALTH_SERVICE))
    for kind in ("livenessProbe", "startupProbe"):
        if probes[kind] == REPLICA_HEALTH_SERVICE:
            raise CheckError("the servers' %s asks %r: a replica copying a large shard would be "
                             "restarted before it caught up" % (kind, REPLICA_HEALTH_SERVICE))
    # The replicas of a shard never share a node.
    terms = (((pod_spec(first).get("affinity") or {}).get("podAntiAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution")) or []
    keyed = [t for t in terms if t.get("topologyKey") == "kubernetes.io/hostname" and
             POD_INDEX_LABEL in (t.get("matchLabelKeys") or []) and
             all(selects(t.get("labelSelector"), pod_labels(sts)) for sts in sets)]
    if not keyed:
        raise CheckError("no required pod anti-affinity term over the server pods of %s with "
                         "topologyKey kubernetes.io/hostname and matchLabelKeys [%s]: two "
                         "replicas of a shard could share a node" % (
                             ", ".join(names), POD_INDEX_LABEL))
    return "%d shards x %d replicas: pod i of %s serves shard i; pods of one index on " \
        "different nodes; each advertises status.podIP; ready only with the shard's state" % (
            shards, factor, " and ".join(names))


def split_host_port(address):
    m = re.fullmatch(r"(.+):(\d+)", address)
    if not m:
        raise CheckError("address %r is not host:port" % address)
    return m.group(1), int(m.group(2))


def etcd_service_of(host, namespace):
    """(Service name, pod name or None) that an in-cluster host names in
    `namespace`, or None for a host outside the cluster."""
    parts = host.split(".")
    for suffix in (["svc", "cluster", "local"], ["svc"]):
        if parts[-len(suffix):] == suffix and len(parts) > len(suffix):
            parts = parts[:-len(suffix)]
            if len(parts) == 2:
                return (parts[0], None) if parts[1] == namespace else None
            if len(parts) == 3:
                return (parts[1], parts[0]) if parts[2] == namespace else None
            return None
    if len(parts) == 1:
        return parts[0], None
    if len(parts) == 2 and parts[1] == namespace:
        return parts[0], None
    return None


def check_etcd(ctx):
    config = need_config(ctx)
    if config["replication_factor"] <= 1:
        return "replication factor 1: no etcd"
    docs = ctx["docs"]
    namespace = server_set(docs)["metadata"].get("namespace")
    notes = []
    for endpoint in config["etcd_endpoints"]:
        host, port = split_host_port(endpoint)
        named = etcd_service_of(host, namespace)
        if named is None:
            notes.append("%s outside these manifests" % endpoint)
            continue
        svc_name, pod = named
        services = [d for d in docs if d.get("kind") == "Service" and
                    d["metadata"].get("name") == svc_name and
                    d["metadata"].get("namespace") == namespace]
        if not services:
            raise CheckError("replication.etcd_endpoints %s names Service %s in %s, which is "
                             "not in the manifests" % (endpoint, svc_name, namespace))
        svc = services[0]
        ports = [p for p in svc["spec"].get("ports") or [] if p.get("port") == port]
        if not ports:
            raise CheckError("replication.etcd_endpoints %s: Service %s has no port %d (it has "
                             "%s)" % (endpoint, svc_name, port,
                                      [p.get("port") for p in svc["spec"].get("ports") or []]))
        pods = [d for d in docs if d.get("kind") in WORKLOAD_KINDS and
                subset(svc["spec"].get("selector"), pod_labels(d))]
        if len(pods) != 1:
            raise CheckError("Service %s selects %d workloads, not the one etcd" %
                             (svc_name, len(pods)))
        etcd = pods[0]
        if pod is not None and not (
                etcd.get("kind") == "StatefulSet" and
                etcd["spec"].get("serviceName") == svc_name and
                re.fullmatch(r"%s-(\d+)" % re.escape(etcd["metadata"]["name"]), pod) and
                int(pod.rsplit("-", 1)[1]) < etcd["spec"].get("replicas", 1)):
            raise CheckError("replication.etcd_endpoints %s: no pod %s behind Service %s" %
                             (endpoint, pod, svc_name))
        container = first_container(etcd)
        target = ports[0].get("targetPort", port)
        container_port = resolve_port(container, target)
        listen = flag_value(container, "--listen-client-urls") or ""
        if container_port is None or not any(
                u.rstrip("/").endswith(":%d" % container_port) for u in listen.split(",")):
            raise CheckError("replication.etcd_endpoints %s: Service %s port %d targets %r, "
                             "which is not the port etcd serves clients on (%s)" % (
                                 endpoint, svc_name, port, target,
                                 listen or "no --listen-client-urls"))
        port_name = next((p.get("name") for p in container.get("ports") or []
                          if p.get("containerPort") == container_port), None)
        admitted = admitted_peers(docs, pod_labels(etcd), container_port, port_name,
                                  ETCD_CLIENT_COMPONENTS, "etcd client")
        why = "they find the shards' primaries there"
        clients = [(who, workload, why) for who, workload in grpc_clients(docs) + [
            ("servers", sts) for sts in server_sets(docs)]] + [
            ("completion hook", workload_by_component(docs, "Job", "completion-hook"),
             "it deletes the cluster's keys once the servers are gone")]
        for who, workload, why in clients:
            if not any(selects(sel, pod_labels(workload)) for sel in admitted):
                raise CheckError("the %s (%s) may not reach etcd's client port %d: %s" % (
                    who, doc_id(workload), container_port, why))
        notes.append("%s = %s %s port %d, reached by servers, workers, admin and the "
                     "completion hook" % (
            endpoint, etcd["kind"], etcd["metadata"]["name"], container_port))
    return "; ".join(notes)


CHECK_FUNCS = {
    "config-parse": check_config_parse,
    "config-mount": check_config_mount,
    "server-addresses": check_server_addresses,
    "worker-count": check_worker_count,
    "probe-ports": check_probe_ports,
    "metrics-port": check_metrics_port,
    "checkpoint-mount": check_checkpoint_mount,
    "selectors": check_selectors,
    "labels": check_labels,
    "gpu-resources": check_gpu_resources,
    "images": check_images,
    "grace-period": check_grace_period,
    "scrape-annotation": check_scrape_annotation,
    "memory-limit": check_memory_limit,
    "image-versions": check_image_versions,
    "auth-token": check_auth_token,
    "network-policy": check_network_policy,
    "job-limits": check_job_limits,
    "job-id": check_job_id,
    "completion-hook": check_completion_hook,
    "replica-sets": check_replica_sets,
    "etcd": check_etcd,
}


def validate_all(directories, checker, work_root, repo):
    """Runs every check on each kustomization; returns [{check: (ok, message)}]."""
    ctxs = []
    for directory in directories:
        ctx = {"dir": directory, "checker": checker, "repo": repo, "results": {},
               "work": tempfile.mkdtemp(prefix="k8s-", dir=work_root)}
        proc = subprocess.run([KUBECTL[0], "kustomize", directory], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True)
        if proc.returncode != 0:
            ctx["results"]["render"] = (False, proc.stderr.strip())
        else:
            ctx["docs"] = [d for d in yaml.safe_load_all(proc.stdout) if d]
            with open(os.path.join(ctx["work"], "rendered.yaml"), "w") as f:
                f.write(proc.stdout)
            ctx["results"]["render"] = (True, "%d documents" % len(ctx["docs"]))
        ctxs.append(ctx)
    run_yamllint(ctxs)
    run_schema_checks(ctxs, work_root)
    for ctx in ctxs:
        for name in CHECKS:
            if name in ctx["results"]:
                continue
            if "docs" not in ctx:
                ctx["results"][name] = (False, "skipped: render failed")
                continue
            try:
                ctx["results"][name] = (True, CHECK_FUNCS[name](ctx) or "ok")
            except CheckError as e:
                ctx["results"][name] = (False, str(e))
            except Skip as e:
                ctx["results"][name] = (False, "skipped: %s" % e)
    return [ctx["results"] for ctx in ctxs]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dirs", nargs="+", help="kustomization directories")
    parser.add_argument("--config-checker", required=True,
                        help="the check_cluster_config binary (bazel build "
                             "//tests/k8s:check_cluster_config)")
    parser.add_argument("--node-modules", default=os.path.join(HERE, "node_modules"),
                        help="npm packages from tests/k8s/setup.sh")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    args = parser.parse_args()

    repo = os.path.dirname(os.path.dirname(HERE))
    for tool in (KUBECTL[0], "yamllint", "node"):
        if shutil.which(tool) is None:
            print("validate_k8s: %s not found; run tests/k8s/setup.sh" % tool, file=sys.stderr)
            return 2
    for path, what in ((os.path.join(args.node_modules, "kubernetes-models"), "kubernetes-models"),
                       (os.path.join(args.node_modules, "typescript"), "typescript"),
                       (args.config_checker, "check_cluster_config")):
        if not os.path.exists(path):
            print("validate_k8s: %s missing (%s); run tests/k8s/setup.sh" % (what, path),
                  file=sys.stderr)
            return 2
    _NODE_MODULES[0] = os.path.realpath(args.node_modules)
    checker = os.path.realpath(args.config_checker)

    work_root = tempfile.mkdtemp(prefix="validate_k8s-")
    all_results = {}
    failed = 0
    try:
        for directory, results in zip(args.dirs,
                                      validate_all(args.dirs, checker, work_root, repo)):
            label = os.path.relpath(os.path.realpath(directory), repo)
            all_results[label] = results
            for name in CHECKS:
                ok, message = results[name]
                failed += not ok
                print("%s %s %s: %s" % ("PASS" if ok else "FAIL", label, name, message))
    finally:
        if args.keep:
            print("validate_k8s: generated files kept in %s" % work_root)
        else:
            shutil.rmtree(work_root, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(all_results, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
