"""End to end: the CTR job on tiny synthetic data, under ps_launch
--worker_cmd as the README runs it (2 real servers, 2 worker processes)."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

import ctr_data
import model

RUNFILES = os.path.join(os.environ["TEST_SRCDIR"], "ps")
TRAINER = os.path.join(RUNFILES, "client", "python", "examples", "ctr",
                       "train_ctr.py")
CONFIG = os.path.join(RUNFILES, "deploy", "examples", "ctr.yaml")
LAUNCHER = os.path.join(RUNFILES, "deploy", "launcher", "ps_launch")
TINY = ["--num_train=40000", "--num_test=10000", "--vocab_scale=0.01",
        "--batch_size=512", "--eval_every_steps=15", "--log_every_steps=5"]


def fields(line):
    return dict(f.split("=", 1) for f in line.split()[1:] if "=" in f)


def worker_line(out, worker, kind):
    found = re.findall(rf"^\[worker {worker}\] ({kind} .*)$", out, re.M)
    assert len(found) == 1, out[-4000:]
    return fields(found[0])


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    """One run of the job; (stdout, data set directory, out_dir)."""
    tmp = tmp_path_factory.mktemp("ctr")
    command = " ".join([sys.executable, TRAINER, *TINY,
                        f"--data_dir={tmp}/data", f"--out_dir={tmp}/plots"])
    run = subprocess.run(
        [LAUNCHER, f"--config={CONFIG}", "--progress=plain",
         "--server_bin=" + os.environ["PS_SERVER_BIN"],
         f"--out_dir={tmp}/launch", f"--worker_cmd={command}"],
        capture_output=True, text=True, timeout=400, cwd=tmp)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    (data,) = [os.path.join(tmp, "data", d)
               for d in os.listdir(os.path.join(tmp, "data"))
               if d.startswith("synthetic_")]
    return run.stdout, data, tmp


def test_auc_is_near_the_teachers(job):
    out, data, _ = job
    final = worker_line(out, 0, "FINAL")
    meta = ctr_data.read_meta(data)
    auc = float(final["auc"])
    assert auc > 0.72, final  # teacher ~0.79 here; chance is 0.5
    assert final["teacher_auc"] == f"{meta['teacher_auc']:.4f}"
    assert float(final["auc_gap"]) == pytest.approx(
        meta["teacher_auc"] - auc, abs=1e-4)
    assert final["test_accuracy"] == final["auc"]
    assert final["steps"] == "39"  # 20000 examples per worker / 512


def test_result_line_carries_the_auc(job):
    out, _, _ = job
    result = [line for line in out.splitlines() if line.startswith("RESULT")]
    assert len(result) == 1, out[-3000:]
    assert result[0].startswith(
        "RESULT model=wide-deep(26x9,221-128-64-1) mode=async servers=2 "
        "workers=2 epochs=1 ")
    final = worker_line(out, 0, "FINAL")
    assert f" test_accuracy={final['auc']} " in result[0]
    # FINAL's own results follow RESULT's fields (the worker contract).
    for key in ("teacher_auc", "auc_gap", "rows_admitted", "rows_evicted",
                "shard_table_mib", "shard_rss_mib"):
        assert f" {key}={final[key]}" in result[0], (key, result[0])
    assert float(fields(result[0])["samples_per_s"]) > 0
    for w in (0, 1):
        done = worker_line(out, w, "DONE")
        assert done["steps"] == "39" and done["samples"] == str(39 * 512)


def pushes_per_id(data):
    """{id: number of pushes that carried it}: each worker pushes the unique
    ids of each of its 39 batches of 512 (its contiguous 20000 examples)."""
    train = ctr_data.load_split(data, "train")
    counts = {}
    for worker in (0, 1):
        for step in range(39):
            lo = worker * 20000 + step * 512
            for i in np.unique(train.ids[lo:lo + 512]):
                counts[int(i)] = counts.get(int(i), 0) + 1
    return counts


def test_rows_are_the_ids_pushed_twice(job):
    """The config's count filter (min_count: 2): an id gets a row at its
    second push; ids pushed once only hold a count; pulls (prefetch,
    evaluation) create nothing; nothing is evicted."""
    out, data, _ = job
    final = worker_line(out, 0, "FINAL")
    counts = pushes_per_id(data)
    twice = sum(1 for n in counts.values() if n >= 2)
    once = sum(1 for n in counts.values() if n == 1)
    assert 0 < twice < len(counts)
    assert int(final["rows"]) == twice
    assert int(final["rows_admitted"]) == twice
    assert final["rows_evicted"] == "0"
    assert int(final["ids_pending"]) == once
    shards = [int(x) for x in final["shard_rows"].split(",")]
    assert len(shards) == 2 and sum(shards) == twice
    assert min(shards) > 0.4 * twice  # hashed over both shards


def test_memory_per_shard_from_proc(job):
    out, _, _ = job
    final = worker_line(out, 0, "FINAL")
    # The formula (README "Embedding tables"): 9 float32 values + 9 of
    # Adagrad state + 24 of index, async (no accumulator), no lifecycle
    # rule; plus 39 B per id counted and not admitted.
    assert final["formula_bytes_per_row"] == "96"
    rows = [int(x) for x in final["shard_rows"].split(",")]
    pending = [int(x) for x in final["shard_ids_pending"].split(",")]
    assert final["shard_table_mib"] == ",".join(
        f"{(r * 96 + p * 39) / 2 ** 20:.1f}" for r, p in zip(rows, pending))
    assert final["memory_source"] == "proc"
    rss = [float(x) for x in final["shard_rss_mib"].split(",")]
    peak = [float(x) for x in final["shard_peak_rss_mib"].split(",")]
    assert len(rss) == 2 and all(0 < r <= p for r, p in zip(rss, peak))
    assert "rss_growth_bytes_per_row" in final
    # The heap in use (GetStats, glibc's count) grows by the table memory
    # the formula charges (rows and pending counts), give or take the
    # store's growth ahead of use and the hash tables' load, plus a few MiB
    # that do not depend on the rows (the dense table and its Adam state,
    # connections; 2.4-3 MiB measured with 62 k rows and no count filter).
    heap = [float(x) for x in final["shard_heap_mib"].split(",")]
    assert len(heap) == 2 and all(h > 0 for h in heap)
    charged = sum(r * 96 + p * 39 for r, p in zip(rows, pending))
    growth = float(final["heap_growth_bytes_per_row"]) * sum(rows)
    assert 0.5 * charged <= growth <= 1.3 * charged + 6 * 2 ** 20, final
    assert float(final["heap_growth_vs_formula"]) == pytest.approx(
        growth / charged, rel=1e-2)


def test_curve_and_plot_written(job):
    out, _, tmp = job
    files = sorted(os.listdir(os.path.join(tmp, "plots")))
    assert [f.rsplit(".", 1)[1] for f in files] == ["csv", "png"], files
    with open(os.path.join(tmp, "plots", files[0])) as f:
        rows = f.read().splitlines()
    assert rows[0] == "time_s,step,loss,auc"
    aucs = [r for r in rows[1:] if not r.endswith(",")]
    assert len(aucs) == 3  # EVAL at steps 15 and 30, and FINAL
    assert len(os.listdir(os.path.join(tmp, "launch"))) >= 3  # launcher's


def test_dense_table_of_the_wrong_size_is_refused(tmp_path, job):
    """A model that does not fit the config's dense table: a clear error
    naming the size it needs."""
    _, data, _ = job
    needed = model.WideAndDeep(8, [64]).num_dense_parameters()
    from ps_client.testing import LocalCluster
    body = open(CONFIG).read().split("\nlog_level:", 1)[1]
    with LocalCluster("log_level:" + body, num_servers=1,
                      num_workers=1) as cluster:
        run = subprocess.run(
            [sys.executable, TRAINER, f"--dataset={data}", "--hidden=64",
             f"--config={cluster.client_config_path}", "--index=0"],
            capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert run.returncode == 1
    assert (f"dense table 'mlp' has 36737 elements; the model (embedding "
            f"dim 8, hidden 64) needs exactly {needed}") in run.stderr


def test_in_process_ceiling_trains_the_same_job(tmp_path, job):
    """train_in_process.py: the same model, data and schedule in one
    process (the figures' ceiling) reaches a like AUC."""
    out, data, _ = job
    run = subprocess.run(
        [sys.executable, os.path.join(os.path.dirname(TRAINER),
                                      "train_in_process.py"),
         f"--config={CONFIG}", f"--dataset={data}", "--batch_size=512",
         "--eval_every_steps=0", f"--out_dir={tmp_path}"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    final = fields(re.search(r"^FINAL .*$", run.stdout, re.M).group(0))
    assert final["steps"] == "78"  # 40000 examples / 512
    cluster = float(worker_line(out, 0, "FINAL")["auc"])
    assert abs(float(final["auc"]) - cluster) < 0.03, (final, cluster)
