#!/usr/bin/env bash
# Runs pytest on the given test files under Bazel, writing one JUnit test case
# per test function to $XML_OUTPUT_FILE (counted by .ci/summarize_tests.py).
# Debian's interpreter, which sees Debian's python3-pytest.
export PYTHONDONTWRITEBYTECODE=1  # nothing written next to the sources
exec /usr/bin/python3 -m pytest -q -p no:cacheprovider \
  --junitxml="${XML_OUTPUT_FILE:-/dev/null}" "$@"
