#!/usr/bin/env bash
# Runs a pytest file as a Bazel test, one JUnit case per test function
# (.ci/summarize_tests.py counts them):
#   pytest_test.sh [NAME=PATH...] TEST_FILE [PYTEST_ARGS...]
# Each NAME=PATH is exported with PATH made absolute (Bazel passes runfiles
# paths relative to the test's working directory). Debian's interpreter,
# which sees python3-pytest and python3-yaml.
set -euo pipefail
while [[ $# -gt 0 && $1 =~ ^[A-Z_][A-Z0-9_]*= ]]; do
  export "${1%%=*}=$(readlink -f "${1#*=}")"
  shift
done
test_file=$(readlink -f "$1")
shift
# No .pytest_cache in the source tree (the test files are symlinks into it).
exec /usr/bin/python3 -m pytest -q -p no:cacheprovider \
  ${XML_OUTPUT_FILE:+--junitxml="$XML_OUTPUT_FILE"} "$test_file" "$@"
