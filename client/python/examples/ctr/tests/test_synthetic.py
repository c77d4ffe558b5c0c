"""The synthetic generator: determinism, shapes, the Zipf law it draws
from, and the teacher's AUC (against a direct pair count)."""

import os

import numpy as np
import pytest

import auc
import ctr_data
import synthetic

SMALL = dict(num_train=3000, num_test=800, seed=5, vocab_scale=0.001)


def pair_count_auc(labels, scores):
    """The AUC by definition: over all (positive, negative) pairs, 1 when
    the positive scores higher, 1/2 on a tie. O(n^2)."""
    labels = np.asarray(labels)
    scores = np.asarray(scores, np.float64)
    pos, neg = scores[labels == 1], scores[labels == 0]
    wins = (pos[:, None] > neg[None, :]).sum()
    ties = (pos[:, None] == neg[None, :]).sum()
    return (wins + 0.5 * ties) / (len(pos) * len(neg))


def arrays(split):
    return [split.labels, split.dense, split.ids, split.teacher]


def test_same_arguments_give_identical_files(tmp_path):
    for name in ("a", "b"):
        synthetic.write(str(tmp_path / name), *synthetic.generate(**SMALL))
    for root, _, files in os.walk(tmp_path / "a"):
        for f in files:
            mine = os.path.join(root, f)
            other = mine.replace(str(tmp_path / "a"), str(tmp_path / "b"))
            with open(mine, "rb") as x, open(other, "rb") as y:
                assert x.read() == y.read(), f
    assert sorted(os.listdir(tmp_path / "a" / "test")) == [
        "dense.npy", "ids.npy", "labels.npy", "teacher.npy"]


def test_another_seed_gives_other_data():
    a = synthetic.generate(**SMALL)[0]
    b = synthetic.generate(**dict(SMALL, seed=6))[0]
    assert not np.array_equal(a.ids, b.ids)
    assert not np.array_equal(a.labels, b.labels)


def test_shapes_types_and_value_ranges(tmp_path):
    synthetic.write(str(tmp_path / "d"), *synthetic.generate(**SMALL))
    meta = ctr_data.read_meta(str(tmp_path / "d"))
    train = ctr_data.load_split(str(tmp_path / "d"), "train")
    test = ctr_data.load_split(str(tmp_path / "d"), "test")
    assert (len(train), len(test)) == (3000, 800)
    assert train.labels.dtype == np.uint8 and train.labels.shape == (3000,)
    assert train.dense.dtype == np.float32 and train.dense.shape == (3000, 13)
    assert train.ids.dtype == np.uint64 and train.ids.shape == (3000, 26)
    assert train.teacher is None and test.teacher.shape == (800,)
    assert set(np.unique(train.labels)) == {0, 1}
    assert np.all(train.dense >= 0) and np.all(train.dense ==
                                               np.floor(train.dense))
    fields = train.ids >> np.uint64(ctr_data.FIELD_SHIFT)
    assert np.array_equal(fields, np.broadcast_to(
        np.arange(26, dtype=np.uint64), (3000, 26)))
    values = train.ids & np.uint64(ctr_data.VALUE_MASK)
    vocab = np.array([v for v, _ in meta["fields"]], np.uint64)
    assert np.all(values >= 1) and np.all(values <= vocab)
    assert meta["fields"][2] == [10131, 1.05]  # C3: 10131227 * 0.001
    assert abs(meta["train_ctr"] - synthetic.TARGET_CTR) < 0.03
    assert meta["distinct_ids_train"] == sum(
        len(np.unique(train.ids[:, f])) for f in range(26))


@pytest.mark.parametrize("vocab,exponent", [(10000, 1.1), (100000, 1.05),
                                            (50, 0.8)])
def test_ranks_follow_the_zipf_law(vocab, exponent):
    ranks = synthetic.zipf_ranks(np.random.default_rng(3), 200_000, vocab,
                                 exponent)
    assert ranks.min() >= 1 and ranks.max() <= vocab
    assert abs(synthetic.fit_zipf_exponent(ranks, vocab) - exponent) < 0.02
    # Independently of the fit: P(1) / P(2) = 2**s.
    ratio = np.sum(ranks == 1) / np.sum(ranks == 2)
    assert ratio == pytest.approx(2 ** exponent, rel=0.05)


def test_generated_fields_have_their_exponents():
    train, _, meta = synthetic.generate(100_000, 1000, seed=2,
                                        vocab_scale=0.01)
    for f in (2, 9, 3):  # C3 (101311 values), C10 (931), C4 (22026)
        vocab, exponent = meta["fields"][f]
        ranks = train.ids[:, f] & np.uint64(ctr_data.VALUE_MASK)
        assert abs(synthetic.fit_zipf_exponent(ranks, vocab) -
                   exponent) < 0.03, f


def test_teacher_auc_equals_the_pair_count():
    _, test, meta = synthetic.generate(**SMALL)
    expected = pair_count_auc(test.labels, test.teacher)
    assert meta["teacher_auc"] == pytest.approx(expected, abs=1e-12)
    assert 0.6 < meta["teacher_auc"] < 0.9
    p = test.teacher.astype(np.float64)
    assert meta["teacher_logloss"] == pytest.approx(-np.mean(
        test.labels * np.log(p) + (1 - test.labels) * np.log(1 - p)))


def test_roc_auc_equals_the_pair_count_with_ties():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 500)
    scores = rng.integers(0, 20, 500) + 0.3 * labels  # many ties
    assert auc.roc_auc(labels, scores) == pytest.approx(
        pair_count_auc(labels, scores), abs=1e-12)
    assert auc.roc_auc([0, 1, 0, 1], [0.1, 0.9, 0.5, 0.5]) == 0.875


def test_roc_auc_rejects_one_class_and_bad_labels():
    with pytest.raises(ValueError, match="both classes"):
        auc.roc_auc([1, 1], [0.2, 0.3])
    with pytest.raises(ValueError, match="0 or 1"):
        auc.roc_auc([0, 2], [0.2, 0.3])


def test_labels_follow_the_teacher():
    """Calibration: within deciles of the teacher's probability, the click
    rate matches the probability."""
    _, test, _ = synthetic.generate(20_000, 100_000, seed=1,
                                    vocab_scale=0.01)
    order = np.argsort(test.teacher)
    for part in np.array_split(order, 10):
        assert test.labels[part].mean() == pytest.approx(
            test.teacher[part].mean(), abs=0.015)
