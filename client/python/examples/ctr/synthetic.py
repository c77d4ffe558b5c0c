#!/usr/bin/env python3
"""Synthetic Criteo-shaped CTR data with a known best achievable AUC.

Each example has Criteo's shape: 13 dense integer features (I1-I13) and 26
categorical features (C1-C26). Categorical field f draws its value from a
bounded Zipf law over ranks 1..V_f (P(r) proportional to r**-s_f), with the
Criteo Kaggle data set's per-field cardinalities as the vocabularies V_f
(C3 has 10.1 M values, C9 three); the value is the rank, so value 1 is the
field's most frequent id. Dense features are log-normal counts, some
missing (0), as in Criteo.

Labels come from a hidden teacher, a logistic model over per-id weights and
the dense features:

    logit = bias + sum_f sigma_f * t_f(r_f) * n(seed, f, r_f)  per-id weights
                 + u . tanh(W z + b)                          dense features
    label ~ Bernoulli(sigmoid(logit))

n(seed, f, r) is a standard normal draw that is a pure function of its
arguments (a hash: no table of the vocabulary's size), z the model's
normalized dense input (ctr_data.normalize_dense), W, b, u normal draws
with the dense term scaled to std DENSE_SCALE, and bias sets the click rate
to TARGET_CTR. Because the labels are Bernoulli draws from the teacher's
probabilities, ranking by those probabilities maximizes the expected AUC:
the teacher's AUC on the held-out split is the best any model can reach
there. It is printed and stored in meta.json (``teacher_auc``, next to
``teacher_logloss``).

Learnable by design: an id expected c < c0 times in the training split
(``--tail_count`` c0, default 5000) has its weight scaled by
t_f = sqrt(c / c0), as a ridge estimate from c observations would shrink
it. The rare ids are all still there (millions of distinct ids, each a row
in the embedding table), but what the training data cannot reveal is not
in the teacher, so a model trained for one epoch can come within a few
thousandths of the teacher's AUC. ``--tail_count 0`` gives every id a
full-size weight instead (nobody can learn the rare ones; the gap grows).

Deterministic: the same arguments give byte-identical files.

    synthetic.py --out DIR [--num_train N] [--num_test N] [--seed S]
"""

import argparse
import math
import os
import sys
import time

import numpy as np

import auc
import ctr_data

# (vocabulary V_f, Zipf exponent s_f) of C1..C26: Criteo Kaggle's
# cardinalities (as the DLRM paper lists them); the largest fields get the
# longest tails.
FIELDS = (
    (1460, 1.1), (583, 1.1), (10131227, 1.05), (2202608, 1.05), (305, 1.0),
    (24, 0.8), (12517, 1.1), (633, 1.1), (3, 0.8), (93145, 1.1),
    (5683, 1.1), (8351593, 1.05), (3194, 1.1), (27, 0.8), (14992, 1.1),
    (5461306, 1.05), (10, 0.8), (5652, 1.1), (2173, 1.1), (4, 0.8),
    (7046547, 1.05), (18, 0.8), (15, 0.8), (286181, 1.1), (105, 1.0),
    (142572, 1.1),
)
WEIGHT_SCALE = 0.35  # sigma_f: std of an id's weight (before the tail scale)
# Dense features: log1p(count) ~ Normal(mu, sd), missing with prob. miss.
DENSE_MU = (1.0, 2.5, 1.5, 2.0, 6.0, 3.0, 1.0, 2.5, 3.5, 0.3, 1.0, 0.2, 2.0)
DENSE_SD = (0.8, 1.5, 1.0, 1.0, 2.0, 1.5, 1.0, 1.2, 1.3, 0.5, 0.8, 0.4, 1.0)
DENSE_MISSING = (0.45, 0.0, 0.2, 0.2, 0.03, 0.2, 0.04, 0.0, 0.04, 0.45,
                 0.04, 0.75, 0.2)
DENSE_HIDDEN = 8
DENSE_SCALE = 0.7  # std of the dense term over the training split
TARGET_CTR = 0.25

__all__ = ["FIELDS", "generate", "write", "zipf_ranks", "fit_zipf_exponent",
           "teacher_normal"]


def _zipf_weights(vocab, exponent):
    """r**-exponent for r = 1..vocab (float64)."""
    return np.arange(1, vocab + 1, dtype=np.float64) ** -exponent


def zipf_ranks(rng, n, vocab, exponent):
    """``n`` ranks (uint64) in [1, vocab] with P(r) proportional to
    r**-exponent (inverse CDF: exact for the bounded law)."""
    cdf = np.cumsum(_zipf_weights(vocab, exponent))
    cdf /= cdf[-1]
    ranks = np.searchsorted(cdf, rng.random(n), side="right") + 1
    return np.minimum(ranks, vocab).astype(np.uint64)


def fit_zipf_exponent(ranks, vocab, lo=0.01, hi=4.0, iterations=60):
    """Maximum-likelihood exponent of a bounded Zipf law over [1, vocab]
    given observed ``ranks``: the s whose expected log rank equals the
    sample's mean log rank (the expectation decreases strictly in s, so
    bisection finds it)."""
    target = float(np.mean(np.log(np.asarray(ranks, np.float64))))
    log_r = np.log(np.arange(1, vocab + 1, dtype=np.float64))
    for _ in range(iterations):
        mid = (lo + hi) / 2
        w = np.exp(-mid * log_r)
        if float((w * log_r).sum() / w.sum()) > target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def teacher_normal(seed, field, ranks):
    """Standard normal draws as a pure function of (seed, field, rank):
    Box-Muller over two hashed uniforms."""
    salt = ctr_data.mix64(np.uint64(
        (seed * 1000003 + field * 131 + 17) & 0xFFFFFFFFFFFFFFFF))
    a = ctr_data.mix64(np.asarray(ranks, np.uint64) ^ salt)
    b = ctr_data.mix64(a ^ np.uint64(0x9E3779B97F4A7C15))
    u1 = ((a >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0 ** -53
    u2 = (b >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2)


def _tail_scale(ranks, weights, num_train, tail_count):
    """min(1, sqrt(expected count in training / tail_count)) per rank;
    ``weights`` are the field's _zipf_weights."""
    if tail_count <= 0:
        return np.ones(len(ranks))
    expected = num_train * weights[ranks.astype(np.int64) - 1] / weights.sum()
    return np.minimum(1.0, np.sqrt(expected / tail_count))


def _dense(rng, n):
    """Raw dense counts (float32 holding integers), missing as 0."""
    dense = np.empty((n, ctr_data.NUM_DENSE), np.float32)
    for j in range(ctr_data.NUM_DENSE):
        log_count = rng.normal(DENSE_MU[j], DENSE_SD[j], n)
        counts = np.floor(np.expm1(np.maximum(log_count, 0.0)))
        counts[rng.random(n) < DENSE_MISSING[j]] = 0.0
        dense[:, j] = counts
    return dense


def _dense_term(rng, z, num_train):
    """u . tanh(W z + b), scaled to std DENSE_SCALE over the training
    rows."""
    w = rng.normal(0.0, 1.0 / math.sqrt(z.shape[1]),
                   (z.shape[1], DENSE_HIDDEN))
    b = rng.normal(0.0, 0.5, DENSE_HIDDEN)
    u = rng.normal(0.0, 1.0, DENSE_HIDDEN)
    term = np.tanh(z.astype(np.float64) @ w + b) @ u
    return term * (DENSE_SCALE / term[:num_train].std())


def _bias_for_ctr(logit, ctr):
    """The bias b with mean(sigmoid(logit + b)) == ctr (bisection)."""
    lo, hi = -30.0, 30.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if np.mean(1.0 / (1.0 + np.exp(-(logit + mid)))) < ctr:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def _logloss(labels, p):
    p = np.clip(np.asarray(p, np.float64), 1e-12, 1 - 1e-12)
    return float(-np.mean(labels * np.log(p) + (1 - labels) * np.log(1 - p)))


def generate(num_train, num_test, seed=1, vocab_scale=1.0, tail_count=5000.0,
             log=None):
    """A data set: returns (train, test, meta), two ctr_data.Split and the
    meta.json dict (settings, dense statistics, teacher_auc,
    teacher_logloss, click rate, distinct ids). ``vocab_scale`` multiplies
    every vocabulary (at least 2 values each), for small test data.
    ``log`` gets progress messages."""
    if num_train < 1 or num_test < 1:
        raise ValueError(f"num_train {num_train} and num_test {num_test} "
                         "must be >= 1")
    log = log or (lambda _: None)
    n = num_train + num_test
    seeds = np.random.SeedSequence(seed).spawn(len(FIELDS) + 3)
    fields = [(max(2, int(round(v * vocab_scale))), s) for v, s in FIELDS]
    ids = np.empty((n, ctr_data.NUM_SPARSE), np.uint64)
    logit = np.zeros(n)
    for f, (vocab, exponent) in enumerate(fields):
        ranks = zipf_ranks(np.random.default_rng(seeds[f]), n, vocab,
                           exponent)
        ids[:, f] = ctr_data.field_ids(ranks, f)
        scale = _tail_scale(ranks, _zipf_weights(vocab, exponent),
                            num_train, tail_count)
        logit += WEIGHT_SCALE * scale * teacher_normal(seed, f, ranks)
        log(f"C{f + 1}: {vocab} values, Zipf s={exponent}")
    dense = _dense(np.random.default_rng(seeds[-3]), n)
    mean, std = ctr_data.dense_stats(dense[:num_train])
    meta = {"dense_mean": mean, "dense_std": std}
    z = ctr_data.normalize_dense(dense, meta)
    logit += _dense_term(np.random.default_rng(seeds[-2]), z, num_train)
    logit += _bias_for_ctr(logit[:num_train], TARGET_CTR)
    p = 1.0 / (1.0 + np.exp(-logit))
    labels = (np.random.default_rng(seeds[-1]).random(n) < p).astype(
        np.uint8)
    train = ctr_data.Split(labels[:num_train], dense[:num_train],
                           ids[:num_train])
    test = ctr_data.Split(labels[num_train:], dense[num_train:],
                          ids[num_train:], p[num_train:].astype(np.float32))
    meta.update({
        "source": "synthetic", "seed": seed, "num_train": num_train,
        "num_test": num_test, "vocab_scale": vocab_scale,
        "tail_count": tail_count, "fields": [list(f) for f in fields],
        "teacher_auc": auc.roc_auc(test.labels, test.teacher),
        "teacher_logloss": _logloss(test.labels, test.teacher),
        "train_ctr": float(train.labels.mean()),
        "distinct_ids_train": int(sum(len(np.unique(train.ids[:, f]))
                                      for f in range(ctr_data.NUM_SPARSE))),
    })
    return train, test, meta


def write(out, train, test, meta):
    """Writes the data set to directory ``out`` (which must not exist)
    atomically: into a temporary sibling renamed into place, so a reader
    never sees a partial one."""
    out = os.path.abspath(out)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    tmp = f"{out}.tmp{os.getpid()}"
    ctr_data.write_split(tmp, "train", train)
    ctr_data.write_split(tmp, "test", test)
    ctr_data.write_meta(tmp, meta)
    os.rename(tmp, out)


def describe(meta):
    """One line about a generated data set."""
    return (f"{meta['num_train']} train / {meta['num_test']} test examples, "
            f"{meta['distinct_ids_train']} distinct ids in train, click rate "
            f"{meta['train_ctr']:.4f}, teacher AUC on test "
            f"{meta['teacher_auc']:.4f} (logloss "
            f"{meta['teacher_logloss']:.4f})")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True,
                        help="data set directory (must not exist)")
    parser.add_argument("--num_train", type=int, default=2_000_000)
    parser.add_argument("--num_test", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--vocab_scale", type=float, default=1.0,
                        help="multiplies every field's vocabulary")
    parser.add_argument("--tail_count", type=float, default=5000.0,
                        help="c0: ids expected fewer times in training get "
                        "weights scaled by sqrt(count / c0); 0 = off")
    args = parser.parse_args(argv)
    if os.path.exists(args.out):
        sys.exit(f"synthetic.py: {args.out} exists; choose a new --out")
    start = time.monotonic()
    train, test, meta = generate(args.num_train, args.num_test, args.seed,
                                 args.vocab_scale, args.tail_count,
                                 log=lambda m: print(m, file=sys.stderr))
    write(args.out, train, test, meta)
    print(f"wrote {args.out}: {describe(meta)}, "
          f"{time.monotonic() - start:.1f} s")


if __name__ == "__main__":
    main()
