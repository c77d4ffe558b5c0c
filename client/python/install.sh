#!/usr/bin/env bash
# Installs the ps_client package for Debian's /usr/bin/python3, so that
# `/usr/bin/python3 -c "import ps_client"` works from any folder. Called by
# .ci/env.sh (the README's set-up) with its Bazel flags; runnable alone:
#   bash client/python/install.sh [bazel flags...]
# Builds the wheel with Bazel (//client/python:wheel, from Debian packages
# only) and installs it with Debian's pip into /usr/local/lib/python3.11/
# dist-packages, unless the installed copy is already this build (its
# BUILD_ID matches): then it costs a Bazel no-op build and one python start.
set -euo pipefail
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$REPO_ROOT"

bazel build --noshow_progress --ui_event_filters=-info "$@" \
  //client/python:wheel >&2
out="$REPO_ROOT/bazel-bin/client/python"
wheel="$out/ps_client-0.1.0-cp311-cp311-linux_x86_64.whl"
want=$(cat "$out/ps_client_build_id.txt")

# -I: isolated (no cwd, no PYTHONPATH), so a source checkout never answers.
installed_id() {
  (cd / && /usr/bin/python3 -I - <<'PY'
import importlib.util, os
spec = importlib.util.find_spec("ps_client")
path = spec and os.path.join(os.path.dirname(spec.origin), "BUILD_ID")
print(open(path).read().strip() if path and os.path.exists(path) else "")
PY
  )
}

if [[ "$(installed_id)" == "$want" ]]; then
  echo "ps_client: build $want already installed" >&2
  exit 0
fi
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
$SUDO /usr/bin/python3 -m pip install --break-system-packages --no-deps \
  --no-index --force-reinstall --no-cache-dir --disable-pip-version-check \
  --root-user-action=ignore -q "$wheel" >&2
got=$(installed_id)
if [[ "$got" != "$want" ]]; then
  echo "ps_client: installed build '$got', expected '$want'" >&2
  exit 1
fi
(cd / && /usr/bin/python3 -I -c "import ps_client") ||
  { echo "ps_client: installed, but 'import ps_client' fails" >&2; exit 1; }
echo "ps_client: installed build $want for /usr/bin/python3" >&2
