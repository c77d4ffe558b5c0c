"""The benchmark runs end to end (a smoke run: tiny counts; its timings are
not asserted, only how it derives its verdicts from them: they are taken
with `bazel run` on a quiet machine)."""

import json
import os
import statistics
import subprocess
import sys

R = os.path.join(os.environ["TEST_SRCDIR"], "ps")


def test_python_vs_cpp_bench_prints_a_table_and_json():
    run = subprocess.run(
        [sys.executable,
         os.path.join(R, "client/python/bench/python_vs_cpp_bench.py"),
         f"--cpp_bench={R}/client/python/sdk_call_bench",
         f"--server_bin={R}/server/ps_server",
         "--rounds=3", "--small_ops=20", "--big_ops=2"],
        capture_output=True, text=True, timeout=240)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[1].split()[:3] == ["case", "C++", "SDK"]
    result = json.loads(lines[-1])
    # The SDK in a process of its own: warm, and cold against warm.
    own = result["results"].pop("pull_4k_cpp_own_process")
    cold = result["results"].pop("pull_4k_cpp_cold_caches")
    assert len(own["rounds"]) == len(cold["rounds"]) == 3
    assert own["cpp"] == statistics.median(own["rounds"]) > 0
    assert cold["cpp"] == statistics.median(cold["rounds"]) > 0
    assert cold["added_us"] == cold["cpp"] - own["cpp"]
    assert cold["touch_kib"] == 1024
    assert set(result["results"]) == {"pull_4k", "pull_4k_alloc", "push_16m",
                                      "push_16m_zero_copy"}
    for name, case in result["results"].items():
        cpp, python = case["rounds"]["cpp"], case["rounds"]["python"]
        assert len(cpp) == len(python) == 3
        assert case["cpp"] > 0 and case["python"] > 0
        # Paired: the median of the rounds' own comparisons (not the
        # comparison of the two medians).
        if name.startswith("pull_4k"):
            paired = statistics.median(p - c for p, c in zip(python, cpp))
            assert case["added_us"] == paired
            assert case["met"] == (paired <= 10.0)
        else:
            paired = statistics.median(p / c for p, c in zip(python, cpp))
            assert case["ratio"] == paired
            assert case["met"] == (paired >= 0.95)
