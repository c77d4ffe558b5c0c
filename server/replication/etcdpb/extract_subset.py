#!/usr/bin/python3
"""Writes rpc.proto and kv.proto here: the subset of etcd's v3 API we use.

Provenance: Debian's golang-etcd-server-dev 3.4.23-4 (etcd v3.4.23, Apache-2.0),
files etcdserver/etcdserverpb/rpc.proto and mvcc/mvccpb/kv.proto under
/usr/share/gocode/src/go.etcd.io/etcd. Run once by hand to (re)make the subset:

  apt-get download golang-etcd-server-dev && dpkg -x golang-etcd-server-dev_*.deb x
  /usr/bin/python3 extract_subset.py x/usr/share/gocode/src/go.etcd.io/etcd

What it changes, and nothing else: the gogoproto and google.api imports and
options are removed (they only steer Go code generation and the HTTP gateway),
`rpc X(A) returns (B) { option ... }` becomes `rpc X(A) returns (B);`, the kv
import path points here, and services, rpcs and messages we do not call are
left out. Package names, message names, field names and field numbers are
kept exactly, so the gRPC method paths (/etcdserverpb.KV/Range, ...) and the
wire encoding are etcd's own. The build compiles the committed output; the
Debian source package is not needed to build.
"""
import re
import sys

KEEP_RPCS = {
    "KV": ["Range", "Put", "DeleteRange", "Txn"],
    "Watch": ["Watch"],
    "Lease": ["LeaseGrant", "LeaseRevoke", "LeaseKeepAlive", "LeaseTimeToLive"],
    "Maintenance": ["Status"],
}
KEEP_MESSAGES = [
    "ResponseHeader", "RangeRequest", "RangeResponse", "PutRequest", "PutResponse",
    "DeleteRangeRequest", "DeleteRangeResponse", "RequestOp", "ResponseOp", "Compare",
    "TxnRequest", "TxnResponse", "WatchRequest", "WatchCreateRequest",
    "WatchCancelRequest", "WatchProgressRequest", "WatchResponse",
    "LeaseGrantRequest", "LeaseGrantResponse", "LeaseRevokeRequest",
    "LeaseRevokeResponse", "LeaseKeepAliveRequest", "LeaseKeepAliveResponse",
    "LeaseTimeToLiveRequest", "LeaseTimeToLiveResponse", "StatusRequest",
    "StatusResponse",
]
HEADER = """// SUBSET of etcd's v3 API, {what}.
// Extracted by extract_subset.py (this directory) from {src} of Debian's
// golang-etcd-server-dev 3.4.23-4 (etcd v3.4.23). Copyright The etcd Authors,
// Apache License 2.0. Only Go/HTTP-gateway annotations and unused services,
// rpcs and messages were removed; names and field numbers are etcd's own.
"""


def top_level_blocks(text):
    """Yields (kind, name, block text with its leading comments)."""
    lines = text.splitlines(keepends=True)
    i, pending = 0, []
    while i < len(lines):
        m = re.match(r"^(service|message|enum)\s+(\w+)", lines[i])
        if not m:
            pending = pending + [lines[i]] if lines[i].lstrip().startswith("//") else []
            i += 1
            continue
        depth, block = 0, []
        while True:
            block.append(lines[i])
            depth += lines[i].count("{") - lines[i].count("}")
            i += 1
            if depth == 0:
                break
        yield m.group(1), m.group(2), "".join(pending + block)
        pending = []


def strip_rpc_options(service_text, keep):
    """Keeps the rpcs in `keep` (with their comments) as `rpc ...;` lines."""
    out, comments, lines, i = [], [], service_text.splitlines(keepends=True), 0
    out.append(lines[0])
    i = 1
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^\s*rpc\s+(\w+)\s*(\(.*?\)\s*returns\s*\(.*?\))", line)
        if m:
            depth = line.count("{") - line.count("}")
            while depth > 0:
                i += 1
                depth += lines[i].count("{") - lines[i].count("}")
            if m.group(1) in keep:
                out += comments + ["  rpc %s%s;\n" % (m.group(1), m.group(2)), "\n"]
            comments = []
        elif line.lstrip().startswith("//"):
            comments.append(line)
        elif line.strip() == "}":
            while out[-1] == "\n":
                out.pop()
            out.append(line)
        i += 1
    return "".join(out)


def main(root):
    kv = open(root + "/mvcc/mvccpb/kv.proto").read()
    kv = re.sub(r'import "gogoproto/gogo.proto";\n', "", kv)
    kv = re.sub(r"option \(gogoproto\.[^;]*;\n", "", kv)
    kv = re.sub(r"\n{3,}", "\n\n", kv)
    with open("kv.proto", "w") as f:
        f.write(HEADER.format(what="mvccpb (KeyValue, Event)",
                              src="mvcc/mvccpb/kv.proto") + kv)

    rpc = open(root + "/etcdserver/etcdserverpb/rpc.proto").read()
    blocks = {name: (kind, text) for kind, name, text in top_level_blocks(rpc)}
    body = ['syntax = "proto3";\n', "package etcdserverpb;\n\n",
            'import "server/replication/etcdpb/kv.proto";\n\n']
    for service, rpcs in KEEP_RPCS.items():
        body.append(strip_rpc_options(blocks[service][1], rpcs) + "\n")
    for name in KEEP_MESSAGES:
        text = blocks[name][1]
        assert "gogoproto" not in text, name
        body.append(text + "\n")
    with open("rpc.proto", "w") as f:
        f.write(HEADER.format(what="etcdserverpb (KV, Watch, Lease, Maintenance.Status)",
                              src="etcdserver/etcdserverpb/rpc.proto") + "".join(body))


if __name__ == "__main__":
    main(sys.argv[1])
