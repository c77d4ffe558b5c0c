#!/usr/bin/env bash
# Bazel test driver: runs Debian's pytest on the given test files (paths
# relative to the workspace) against the ps_client package of this build
# (the runfiles hold ps_client/*.py next to the freshly linked _core.so) and
# the ps_server of this build. One JUnit test case per pytest case, so the
# suite's summary counts them (.ci/summarize_tests.py).
set -euo pipefail
RUNFILES="${TEST_SRCDIR:?run me with bazel test}/ps"
export PYTHONPATH="$RUNFILES/client/python"
export PS_SERVER_BIN="$RUNFILES/server/ps_server"
export PYTHONDONTWRITEBYTECODE=1  # the sources are symlinks into the tree
tests=()
for t in "$@"; do tests+=("$RUNFILES/$t"); done
cd "$TEST_TMPDIR"
exec /usr/bin/python3 -m pytest -p no:cacheprovider -ra \
  --junitxml="${XML_OUTPUT_FILE:-$TEST_TMPDIR/pytest.xml}" "${tests[@]}"
