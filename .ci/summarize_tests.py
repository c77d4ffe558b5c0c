#!/usr/bin/env python3
"""Counts test cases from Bazel's test.xml files and prints 'N passed, N failed'.

Usage: summarize_tests.py BAZEL_LOG TESTLOGS_DIR [--check NAME=EXIT_STATUS ...]
A test target that failed to build or produced no XML counts as one failure.
Each --check is a check run outside `bazel test` (e.g. the clang locking
build) and counts as one case: passed for exit status 0, else failed.
Exits 1 when anything failed.
"""
import os
import re
import sys
import xml.etree.ElementTree as ET


def parse_args(argv):
    """(log path, testlogs dir, [(check name, exit status)])."""
    positional, checks = [], []
    i = 0
    while i < len(argv):
        if argv[i] == "--check" and i + 1 < len(argv):
            name, _, rc = argv[i + 1].rpartition("=")
            checks.append((name, int(rc) if rc.lstrip("-").isdigit() else 1))
            i += 2
        else:
            positional.append(argv[i])
            i += 1
    return positional[0], positional[1], checks


def main():
    log_path, testlogs, checks = parse_args(sys.argv[1:])
    log = open(log_path, errors="replace").read()
    # Target lines of Bazel's summary: "//pkg:name   PASSED in 1.2s".
    statuses = dict(re.findall(
        r"^(//\S+)\s+(?:\(cached\)\s+)?(PASSED|FAILED TO BUILD|FAILED|TIMEOUT|"
        r"NO STATUS|FLAKY|INCOMPLETE|SKIPPED)", log, re.M))
    passed = failed = skipped = 0
    failures = []
    for target, status in sorted(statuses.items()):
        rel = target[2:].replace(":", "/")
        xml_path = os.path.join(testlogs, rel, "test.xml")
        counted = False
        if status in ("PASSED", "FAILED", "FLAKY") and os.path.exists(xml_path):
            try:
                root = ET.parse(xml_path).getroot()
                for case in root.iter("testcase"):
                    counted = True
                    if case.find("failure") is not None or case.find("error") is not None:
                        failed += 1
                        failures.append(f"{target} {case.get('classname', '')}.{case.get('name')}")
                    elif case.get("result") == "skipped" or case.find("skipped") is not None:
                        skipped += 1
                    else:
                        passed += 1
            except ET.ParseError:
                counted = False
        if not counted:
            if status == "PASSED":
                passed += 1
            elif status == "SKIPPED":
                skipped += 1
            else:
                failed += 1
                failures.append(f"{target} {status}")
        elif status not in ("PASSED", "FLAKY") and not any(f.startswith(target) for f in failures):
            failed += 1
            failures.append(f"{target} {status}")
    if not statuses:
        failed += 1
        failures.append("no test target ran (see the Bazel log above)")
    for name, rc in checks:
        if rc == 0:
            passed += 1
        else:
            failed += 1
            failures.append(f"{name}: exit status {rc}")
    for f in failures:
        print(f"FAILED: {f}")
    line = f"{passed} passed, {failed} failed"
    if skipped:
        line += f", {skipped} skipped"
    print(line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
