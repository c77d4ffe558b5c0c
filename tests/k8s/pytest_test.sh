#!/usr/bin/env bash
# Runs a pytest file as a Bazel test, one JUnit case per test function
# (.ci/summarize_tests.py counts them): pytest_test.sh TEST_FILE [ARGS...].
# Debian's interpreter, which sees python3-pytest and python3-yaml.
set -euo pipefail
test_file=$(readlink -f "$1")
shift
# No .pytest_cache in the source tree (the test files are symlinks into it).
exec /usr/bin/python3 -m pytest -q -p no:cacheprovider \
  ${XML_OUTPUT_FILE:+--junitxml="$XML_OUTPUT_FILE"} "$test_file" "$@"
