"""The training loop's prefetch (--no_prefetch turns it off): which batch's
rows are looked up when, recorded by an in-process embedding."""

import argparse
import io

import numpy as np
import pytest
import torch

import job
import synthetic
from model import WideAndDeep
from ps_client.worker import ProgressLog
from train_in_process import LocalEmbedding, LocalUpdates

BATCH = 100
STEPS = 6


class RecordingEmbedding(LocalEmbedding):
    """LocalEmbedding that records ("prefetch" | "forward", batch index)."""

    def __init__(self, all_ids, spec, batches):
        super().__init__(all_ids, spec)
        self.batches = batches  # each batch's ids (bytes) -> its index
        self.events = []

    def _batch(self, ids):
        return self.batches[ids.numpy().tobytes()]

    def prefetch(self, ids):
        self.events.append(("prefetch", self._batch(ids)))

    def forward(self, ids):
        self.events.append(("forward", self._batch(ids)))
        return super().forward(ids)


def run_loop(prefetch):
    train, _, meta = synthetic.generate(num_train=STEPS * BATCH, num_test=10,
                                        seed=3, vocab_scale=0.001)
    batches = {}
    for b in range(STEPS):
        ids = job.batch_tensors(train, b * BATCH, (b + 1) * BATCH, meta)[0]
        batches.setdefault(ids.numpy().tobytes(), b)
    assert len(batches) == STEPS  # each batch known by its ids
    spec = {"dim": 5, "initializer": {"type": "normal", "stddev": 0.01}}
    torch.manual_seed(0)
    model = WideAndDeep(4, [8])
    embedding = RecordingEmbedding(np.unique(train.ids), spec, batches)
    updates = LocalUpdates([torch.optim.SGD(embedding.parameters(), lr=0.1),
                            torch.optim.SGD(model.parameters(), lr=0.1)])
    settings = dict(job.DEFAULTS, batch_size=BATCH, eval_every_steps=0,
                    prefetch=prefetch)
    loop = job.TrainingLoop(model, embedding, updates, settings, meta,
                            ProgressLog(0, stream=io.StringIO()), [])
    steps, _ = loop.run(train, None, log_every=2)
    assert steps == STEPS
    return embedding.events


def test_prefetch_looks_the_next_batch_up_before_this_batchs_backward():
    events = run_loop(prefetch=True)
    # Batch 0 before the loop; then each step's forward, then the next
    # batch's prefetch (overlapping this step's compute), the last excepted.
    expected = [("prefetch", 0)]
    for b in range(STEPS):
        expected.append(("forward", b))
        if b + 1 < STEPS:
            expected.append(("prefetch", b + 1))
    assert events == expected


def test_no_prefetch_looks_each_batch_up_in_its_own_forward():
    assert run_loop(prefetch=False) == [("forward", b) for b in range(STEPS)]


@pytest.mark.parametrize("flags,prefetch", [([], True),
                                            (["--no_prefetch"], False)])
def test_the_flag_sets_the_setting(tmp_path, flags, prefetch):
    config = tmp_path / "ctr.yaml"
    config.write_text("training: {batch_size: 64}\n")
    args = job.add_job_arguments(argparse.ArgumentParser()).parse_args(flags)
    settings = job.training_settings(args, str(config))
    assert settings["prefetch"] is prefetch
    assert settings["batch_size"] == 64
