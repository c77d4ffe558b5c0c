#!/usr/bin/env bash
# Offline validation of the Kubernetes manifests (deploy/k8s): see the
# "Validating the manifests" section of deploy/k8s/README.md.
#
# Under Bazel: bazel test //tests/k8s:k8s_manifests_test
# By hand:     tests/k8s/k8s_manifests_test.sh [CHECK_CLUSTER_CONFIG PS_CTL]
#              (builds //tests/k8s:check_cluster_config and
#              //deploy/ctl:ps_ctl when not given)
#
# Works on the source tree (deploy/k8s, tests/k8s/testdata), found through
# this script's real path, and on tests/k8s/node_modules, which setup.sh
# installs (run here when missing or stale).
set -euo pipefail

self=$(readlink -f "${BASH_SOURCE[0]}")
here=$(dirname "$self")
# Under Bazel the runfiles hold symlinks into the source tree (the test is
# tagged "local"); validate_k8s.py's real path leads back to it.
if [[ -n ${TEST_SRCDIR:-} && -e "$TEST_SRCDIR/ps/tests/k8s/validate_k8s.py" ]]; then
  here=$(dirname "$(readlink -f "$TEST_SRCDIR/ps/tests/k8s/validate_k8s.py")")
fi
repo=$(cd "$here/../.." && pwd)
if [[ ! -d $repo/deploy/k8s/overlays ]]; then
  echo "k8s_manifests_test: cannot find the source tree (looked in $repo)" >&2
  exit 1
fi

checker=${1:-}
ps_ctl=${2:-}
if [[ -z $checker || -z $ps_ctl ]]; then
  (cd "$repo" && bazel build //tests/k8s:check_cluster_config //deploy/ctl:ps_ctl >&2)
  checker=$repo/bazel-bin/tests/k8s/check_cluster_config
  ps_ctl=$repo/bazel-bin/deploy/ctl/ps_ctl
fi
checker=$(readlink -f "$checker")
ps_ctl=$(readlink -f "$ps_ctl")

export HOME=${HOME:-${TEST_TMPDIR:-/tmp}}
bash "$here/setup.sh"

exec /usr/bin/python3 "$here/k8s_manifests_test.py" --config-checker "$checker" \
  --ps-ctl "$ps_ctl" --node-modules "$here/node_modules"
