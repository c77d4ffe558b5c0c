#!/usr/bin/python3
"""Test of the Kubernetes manifests (run by k8s_manifests_test.sh).

1. Every overlay in deploy/k8s/overlays passes every check of validate_k8s.py.
2. Every deliberately broken variant in tests/k8s/testdata/<name>/ fails
   exactly the checks its EXPECT_FAIL file lists, and passes all the others
   (so each check is shown to catch its fault, and no other check fires).
3. Every overlay is exactly what `ps_ctl render-k8s` renders from the cluster
   description with the command recorded in its kustomization.yaml header
   (run with --check), so the description is the one source.

Prints one line per assertion and "N passed, N failed"; writes JUnit XML to
$XML_OUTPUT_FILE when Bazel sets it. Exit status 1 on any failure.

Usage: k8s_manifests_test.py --config-checker BIN --ps-ctl BIN
                             [--node-modules DIR]
"""

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from xml.sax.saxutils import escape, quoteattr

HERE = os.path.dirname(os.path.realpath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import validate_k8s  # noqa: E402


def recorded_render_command(path):
    """The `ps_ctl render-k8s ...` argv in a generated kustomization's header:
    a comment line "#   ps_ctl render-k8s \\" continued by "#     --flag \\"
    lines up to one without the trailing backslash."""
    words = None
    with open(path) as f:
        for line in f:
            text = line.lstrip("#").strip()
            if words is None and not text.startswith("ps_ctl render-k8s"):
                continue
            words = (words or []) + shlex.split(text.rstrip("\\"))
            if not text.endswith("\\"):
                break
    if not words:
        return None, "%s has no recorded `ps_ctl render-k8s` command" % path
    return words, ""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config-checker", required=True)
    parser.add_argument("--ps-ctl", required=True)
    parser.add_argument("--node-modules", default=os.path.join(HERE, "node_modules"))
    args = parser.parse_args()

    overlays_root = os.path.join(REPO, "deploy", "k8s", "overlays")
    overlays = sorted(os.path.join(overlays_root, d) for d in os.listdir(overlays_root)
                      if os.path.isdir(os.path.join(overlays_root, d)))
    testdata = os.path.join(HERE, "testdata")
    variants = sorted(os.path.join(testdata, d) for d in os.listdir(testdata)
                      if os.path.exists(os.path.join(testdata, d, "EXPECT_FAIL")))

    cases = []  # (name, ok, message)

    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = ["/usr/bin/python3", os.path.join(HERE, "validate_k8s.py"),
               "--config-checker", args.config_checker, "--node-modules", args.node_modules,
               "--json", out.name] + overlays + variants
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True)
        print(proc.stdout, end="")
        if proc.returncode not in (0, 1):
            print("FAIL validate_k8s.py could not run (exit %d)" % proc.returncode)
            cases.append(("validate_k8s", False, "exit %d" % proc.returncode))
            results = {}
        else:
            with open(out.name) as f:
                results = json.load(f)

    for directory in overlays:
        label = os.path.relpath(directory, REPO)
        if label not in results:
            continue
        failed = sorted(c for c, (ok, _) in results[label].items() if not ok)
        cases.append(("overlay %s passes every check" % os.path.basename(directory),
                      not failed, "failed: %s" % ", ".join(failed)))

    for directory in variants:
        label = os.path.relpath(directory, REPO)
        if label not in results:
            continue
        with open(os.path.join(directory, "EXPECT_FAIL")) as f:
            expected = sorted(f.read().split())
        unknown = [c for c in expected if c not in validate_k8s.CHECKS]
        failed = sorted(c for c, (ok, _) in results[label].items() if not ok)
        ok = not unknown and failed == expected
        cases.append(("broken variant %s fails exactly %s" % (
            os.path.basename(directory), ", ".join(expected)), ok,
            "unknown checks in EXPECT_FAIL: %s" % unknown if unknown else
            "failed instead: %s" % (", ".join(failed) or "nothing")))

    # Each overlay is what its recorded render-k8s command renders now.
    for directory in overlays:
        name = os.path.basename(directory)
        argv, why = recorded_render_command(os.path.join(directory, "kustomization.yaml"))
        if argv is None:
            cases.append(("overlay %s is rendered by ps_ctl render-k8s" % name, False, why))
            continue
        proc = subprocess.run([args.ps_ctl] + argv[1:] + ["--check"], cwd=REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True)
        cases.append(("overlay %s is what `%s` renders" % (name, " ".join(argv)),
                      proc.returncode == 0, proc.stdout.strip()))

    passed = sum(1 for _, ok, _ in cases if ok)
    for name, ok, message in cases:
        print("%s %s%s" % ("PASS" if ok else "FAIL", name, "" if ok else ": " + message))
    print("%d passed, %d failed" % (passed, len(cases) - passed))

    xml_path = os.environ.get("XML_OUTPUT_FILE")
    if xml_path:
        with open(xml_path, "w") as f:
            f.write('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n')
            f.write('<testsuite name="k8s_manifests_test" tests="%d" failures="%d">\n' %
                    (len(cases), len(cases) - passed))
            for name, ok, message in cases:
                f.write('<testcase classname="k8s_manifests" name=%s>' % quoteattr(name))
                if not ok:
                    f.write('<failure message=%s>%s</failure>' % (quoteattr(message),
                                                                  escape(message)))
                f.write('</testcase>\n')
            f.write('</testsuite>\n</testsuites>\n')
    return 0 if passed == len(cases) and cases else 1


if __name__ == "__main__":
    sys.exit(main())
