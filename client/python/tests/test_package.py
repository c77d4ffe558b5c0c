"""The package itself: its stub, its wheel, the worker-contract helpers."""

import ast
import glob
import io
import os
import subprocess
import sys

import pytest

import ps_client
import ps_client.nn
from ps_client import _core
from ps_client.worker import (ProgressLog, WorkerContext,
                              add_worker_arguments, worker_context)


def _stub_members():
    """{name: set of member names} of the classes in _core.pyi, plus the
    module's top-level functions under ''."""
    path = os.path.join(os.path.dirname(_core.__file__), "_core.pyi")
    tree = ast.parse(open(path).read())
    members = {"": set()}

    def walk(body, prefix):
        for node in body:
            if isinstance(node, ast.ClassDef):
                name = prefix + node.name
                members[name] = {n.name for n in node.body if isinstance(
                    n, (ast.FunctionDef, ast.ClassDef))} | {
                    n.target.id for n in node.body
                    if isinstance(n, ast.AnnAssign)}
                walk(node.body, name + ".")
            elif isinstance(node, ast.FunctionDef) and not prefix:
                members[""].add(node.name)
    walk(tree.body, "")
    return members


def _module_members():
    members = {"": {n for n, v in vars(_core).items()
                    if not n.startswith("_") and not isinstance(v, type)}}

    def walk(cls, name):
        members[name] = {n for n in vars(cls) if not n.startswith("_")
                         or n == "__index__"}
        members[name].discard("__init__")
        for n, v in vars(cls).items():
            if isinstance(v, type) and not n.startswith("_"):
                walk(v, f"{name}.{n}")

    for n, v in vars(_core).items():
        if isinstance(v, type) and not n.startswith("_"):
            walk(v, n)
    return members


def test_stub_matches_the_module():
    stub, module = _stub_members(), _module_members()
    for members in stub.values():
        members.discard("__init__")
    assert stub == module


def test_every_public_call_has_a_docstring():
    for cls in (ps_client.Client, ps_client.nn.DenseParameters,
                ps_client.nn.EmbeddingBag, ps_client.nn.Embedding,
                ProgressLog):
        for name, value in vars(cls).items():
            if callable(value) and not name.startswith("_"):
                assert value.__doc__, f"{cls.__name__}.{name}"


def test_wheel_installs_and_imports_from_any_folder(tmp_path):
    wheel, = glob.glob(os.path.join(os.environ["TEST_SRCDIR"], "ps", "client",
                                    "python", "ps_client-*.whl"))
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps",
                    "--no-index", "--no-cache-dir", "--disable-pip-version-check",
                    "--target", str(target), wheel], check=True,
                   capture_output=True)
    run = subprocess.run(
        [sys.executable, "-c",
         "import ps_client, ps_client.nn; print(ps_client.__file__); "
         "print(ps_client.InvalidArgument.code)"],
        cwd="/", capture_output=True, text=True,
        env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == [str(target / "ps_client" / "__init__.py"),
                                  "3"]
    assert (target / "ps_client" / "BUILD_ID").read_text().strip()


def test_progress_lines_have_the_worker_protocol_format():
    out = io.StringIO()
    log = ProgressLog(1, stream=out)
    log.start(model="mlp(784-256-128-10)", consistency="sync",
              steps_per_epoch=468, epochs=3, batch_size=64, examples=30000)
    log.progress(epoch=1, step=120, loss=0.51, samples_per_s=10234.54,
                 time_s=3.21)
    log.eval(epoch=1, step=200, test_accuracy=0.87123, time_s=5.1)
    log.final(steps=1404, test_accuracy=0.8843, time_s=40.2)
    log.done(steps=1404, samples=89856, wall_s=40.3, samples_per_s=2229.6)
    assert out.getvalue().splitlines() == [
        "START worker=1 model=mlp(784-256-128-10) consistency=sync "
        "steps_per_epoch=468 epochs=3 batch_size=64 examples=30000",
        "PROGRESS worker=1 epoch=1 step=120 loss=0.5100 samples_per_s=10234.5 "
        "time_s=3.210",
        "EVAL worker=1 epoch=1 step=200 test_accuracy=0.8712 time_s=5.100",
        "FINAL worker=1 steps=1404 test_accuracy=0.8843 time_s=40.200",
        "DONE worker=1 steps=1404 samples=89856 wall_s=40.300 "
        "samples_per_s=2229.6",
    ]
    with pytest.raises(ValueError, match="without '=' or a newline"):
        log.start(model="a=b")


def test_worker_context_from_flags_then_environment(monkeypatch):
    import argparse
    parser = add_worker_arguments(argparse.ArgumentParser())
    monkeypatch.setenv("PS_NUM_WORKERS", "4")
    ctx = worker_context(parser.parse_args(["--config=/c.yaml", "--index=2"]))
    assert ctx == WorkerContext("/c.yaml", 2, 4)
    monkeypatch.setenv("PS_CONFIG", "/env.yaml")
    monkeypatch.setenv("PS_WORKER_INDEX", "3")
    parser = add_worker_arguments(argparse.ArgumentParser())
    assert worker_context(parser.parse_args([])) == WorkerContext(
        "/env.yaml", 3, 4)
    monkeypatch.setattr(sys, "argv", ["trainer", "--lr=1", "--index", "1"])
    assert worker_context() == WorkerContext("/env.yaml", 1, 4)
    # A Kubernetes Indexed Job's pod index, when PS_WORKER_INDEX is unset;
    # PS_WORKER_INDEX wins when both are.
    monkeypatch.setattr(sys, "argv", ["trainer"])
    monkeypatch.setenv("JOB_COMPLETION_INDEX", "5")
    assert worker_context() == WorkerContext("/env.yaml", 3, 4)
    monkeypatch.delenv("PS_WORKER_INDEX")
    assert worker_context() == WorkerContext("/env.yaml", 5, 4)
    monkeypatch.delenv("JOB_COMPLETION_INDEX")
    with pytest.raises(SystemExit, match="no worker index"):
        worker_context()
    monkeypatch.delenv("PS_CONFIG")
    monkeypatch.setattr(sys, "argv", ["trainer"])
    with pytest.raises(SystemExit, match="no cluster config"):
        worker_context()
