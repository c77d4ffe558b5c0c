"""The example trainer (examples/train_fashion_mnist.py) trains a PyTorch
MLP through a real 2-server cluster with 2 workers, started as ps_launch
starts worker commands, on the main job's config."""

import os
import re
import subprocess
import sys

EXAMPLES = os.path.join(os.environ["TEST_SRCDIR"], "ps", "client", "python",
                        "examples")
CONFIG = os.path.join(os.environ["TEST_SRCDIR"], "ps", "deploy", "examples",
                      "fashion_mnist.yaml")


def test_two_workers_train_fashion_mnist(make_cluster):
    """Worker 0 is started as ps_launch starts a worker command; worker 1 as
    the Kubernetes Job's pod runs it (deploy/k8s, "Your own trainer"): only
    --config, its index in JOB_COMPLETION_INDEX."""
    body = open(CONFIG).read().split("\nlog_level:", 1)[1]
    cluster = make_cluster("log_level:" + body, num_servers=2, num_workers=2)
    procs = []
    base_env = {k: v for k, v in os.environ.items()
                if not k.startswith("PS_") and k != "JOB_COMPLETION_INDEX"}
    for i in range(2):
        if i == 0:
            env = dict(base_env, PS_CONFIG=cluster.client_config_path,
                       PS_WORKER_INDEX="0", PS_NUM_WORKERS="2")
            launch = [f"--config={cluster.client_config_path}", "--index=0"]
        else:
            env = dict(base_env, JOB_COMPLETION_INDEX="1")
            launch = [f"--config={cluster.client_config_path}"]
        procs.append(subprocess.Popen(
            [sys.executable, os.path.join(EXAMPLES, "train_fashion_mnist.py"),
             "--epochs=1", "--max_train_examples=12800",
             "--eval_every_steps=50", "--log_every_steps=25"] + launch,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=env))
    outputs = [p.communicate(timeout=240) for p in procs]
    for p, (out, err) in zip(procs, outputs):
        assert p.returncode == 0, err
    for i, (out, _) in enumerate(outputs):
        kinds = [line.split()[0] for line in out.splitlines()]
        assert kinds == ["START"] + ["PROGRESS", "PROGRESS", "EVAL"] * 2 + [
            "FINAL", "DONE"], out
        assert all(f" worker={i} " in line for line in out.splitlines())
        assert "steps_per_epoch=100 epochs=1 batch_size=64 examples=6400" in \
            out
        assert re.search(r"^DONE worker=\d steps=100 samples=6400 ", out, re.M)
    # Sync: both workers read the same model, so their evaluations agree.
    accuracy = [float(re.search(r"^FINAL .* test_accuracy=([\d.]+)", out,
                                re.M).group(1)) for out, _ in outputs]
    assert accuracy[0] == accuracy[1]
    assert accuracy[0] > 0.65, accuracy  # 100 steps of batch 128


def test_ps_launch_runs_it_as_the_worker_command(tmp_path):
    """ps_launch --worker_cmd with the main job's config: the launcher parses
    the example's lines into its RESULT line."""
    launcher = os.path.join(os.environ["TEST_SRCDIR"], "ps", "deploy",
                            "launcher", "ps_launch")
    run = subprocess.run(
        [launcher, f"--config={CONFIG}", "--epochs=1", "--progress=plain",
         "--server_bin=" + os.environ["PS_SERVER_BIN"],
         f"--out_dir={tmp_path}",
         "--worker_cmd=" + f"{sys.executable} "
         f"{os.path.join(EXAMPLES, 'train_fashion_mnist.py')} "
         "--max_train_examples=12800 --eval_every_steps=50"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    result = [line for line in run.stdout.splitlines()
              if line.startswith("RESULT ")]
    assert len(result) == 1, run.stdout[-3000:]
    assert "mode=sync servers=2 workers=2 epochs=1 " in result[0]
    final = re.search(r"^\[worker 0\] FINAL .* test_accuracy=([\d.]+)",
                      run.stdout, re.M)
    assert final, run.stdout[-3000:]
    assert f"test_accuracy={final.group(1)} " in result[0]
