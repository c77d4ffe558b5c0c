#!/usr/bin/env bash
# Runs pytest on the given test files with Debian's Python (the only one that
# sees python3-pytest), one JUnit XML test case per Python test so that
# .ci/summarize_tests.py counts each (skips as skipped).
export PYTHONDONTWRITEBYTECODE=1
exec /usr/bin/python3 -m pytest -p no:cacheprovider -q -rs \
  --junitxml="${XML_OUTPUT_FILE:-/dev/null}" "$@"
