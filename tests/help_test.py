"""Every binary that takes flags answers --help with its usage and its own flags.

For each binary: `--help` exits 0, starts with "<binary>: <usage>", and lists
every flag that `--helpfull` attributes to the binary's own source file (and
a flag known to be there, so an empty list cannot pass); `--helpshort` lists
the same. Run by Bazel (the binaries are data of the test).
"""
import os
import re
import subprocess

import pytest

# Binary (runfiles path), the source file that defines its flags, one flag it
# must list.
BINARIES = [
    ("server/ps_server", "server/main.cc", "config"),
    ("worker/ps_worker", "worker/main.cc", "index"),
    ("worker/local_train", "worker/local_train_main.cc", "batch_size"),
    ("deploy/launcher/ps_launch", "deploy/launcher/main.cc", "kill_server"),
    ("deploy/ctl/ps_ctl", "deploy/ctl/main.cc", "servers"),
    ("server/receive_path_bench", "server/receive_path_bench.cc", "chunk_kib"),
    ("tests/bench/transport_bench", "tests/bench/transport_bench.cc", "runs"),
    ("tests/bench/update_bench", "tests/bench/update_bench.cc", "optimizers"),
    ("tests/bench/model_bench", "tests/bench/model_bench.cc", "batches"),
    ("tests/soak/soak_client", "tests/soak/soak_client.cc", "threads"),
    ("tests/fault_worker", "tests/fault_worker_main.cc", "progress_file"),
    ("tests/replication/contender", "tests/replication/contender_main.cc",
     "endpoints"),
]

SECTION = re.compile(r"^  Flags from (\S+):$")
FLAG = re.compile(r"^    --(\w+) \(")


def binary_path(rel):
    root = os.environ.get("TEST_SRCDIR")
    if root:
        return os.path.join(root, os.environ.get("TEST_WORKSPACE", "ps"), rel)
    return os.path.join(os.path.dirname(__file__), "..", "bazel-bin", rel)


def flags_by_file(text):
    """{source file: [flag names]} from absl's help output."""
    out, current = {}, None
    for line in text.splitlines():
        m = SECTION.match(line)
        if m:
            current = out.setdefault(m.group(1), [])
            continue
        m = FLAG.match(line)
        if m and current is not None:
            current.append(m.group(1))
    return out


def run(rel, *args):
    return subprocess.run([binary_path(rel), *args], capture_output=True,
                          text=True, timeout=60, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("rel,source,known_flag", BINARIES,
                         ids=[b[0].rsplit("/", 1)[1] for b in BINARIES])
def test_help_lists_the_binarys_own_flags(rel, source, known_flag):
    name = rel.rsplit("/", 1)[1]
    full = run(rel, "--helpfull")
    assert full.returncode == 0, full.stderr
    own = flags_by_file(full.stdout).get(source, [])
    assert known_flag in own, f"--helpfull has no --{known_flag} from {source}"

    for mode in ("--help", "--helpshort"):
        result = run(rel, mode)
        assert result.returncode == 0, (mode, result.stderr)
        assert result.stdout.startswith(f"{name}: "), result.stdout[:200]
        assert "No flags matched" not in result.stdout
        listed = flags_by_file(result.stdout)
        assert list(listed) == [source], (mode, list(listed))
        assert sorted(listed[source]) == sorted(own), mode


def test_unknown_flag_still_fails():
    result = run("server/ps_server", "--no_such_flag")
    assert result.returncode != 0
    assert "Unknown command line flag 'no_such_flag'" in result.stderr
