#!/usr/bin/env bash
# Makes the ps_client wheel from files Bazel built (genrule //client/python:
# wheel): stages the package, stamps it with a build id (a hash of its
# contents, also written to BUILD_ID_OUT so install.sh can tell whether the
# installed copy is this build), and runs Debian's pip offline (no build
# isolation, no index, no dependencies).
# Usage: build_wheel.sh SETUP_PY WHEEL_OUT BUILD_ID_OUT PACKAGE_FILES...
set -euo pipefail
setup_py=$1 wheel_out=$2 id_out=$3
shift 3
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
for f in "$@"; do
  rel=ps_client/${f#*/ps_client/}
  mkdir -p "$stage/$(dirname "$rel")"
  cp "$f" "$stage/$rel"
done
cp "$setup_py" "$stage/setup.py"
(cd "$stage" && find ps_client -type f | LC_ALL=C sort | xargs sha256sum |
  sha256sum | cut -c1-16) >"$stage/ps_client/BUILD_ID"
cp "$stage/ps_client/BUILD_ID" "$id_out"
HOME="$stage" /usr/bin/python3 -m pip wheel --no-build-isolation --no-deps \
  --no-index --no-cache-dir --disable-pip-version-check -q \
  -w "$stage/dist" "$stage" >"$stage/pip.log" 2>&1 ||
  { cat "$stage/pip.log" >&2; exit 1; }
built=$(ls "$stage"/dist/*.whl)
if [[ "$(basename "$built")" != "$(basename "$wheel_out")" ]]; then
  echo "build_wheel: pip made $(basename "$built"), the BUILD file expects" \
       "$(basename "$wheel_out")" >&2
  exit 1
fi
cp "$built" "$wheel_out"
