"""The CTR job's data on disk: Criteo-shaped examples in .npy files.

A data set is a directory::

    meta.json          format version, sizes, dense-feature statistics, and
                       whatever its producer records (the generator: its
                       settings and the teacher's held-out AUC)
    train/labels.npy   (N,)     uint8    click (1) or not (0)
    train/dense.npy    (N, 13)  float32  integer counts as in Criteo (I1-I13);
                                         missing values are 0
    train/ids.npy      (N, 26)  uint64   categorical ids, field in the top byte
    test/...           the same for the held-out examples, plus (synthetic
    test/teacher.npy   (N,)     float32  data only) the teacher's click
                                         probability of each example

``.npy`` is numpy's documented array format (a small header, then the raw
little-endian array): ``numpy.load(path, mmap_mode="r")`` reads it without
parsing, and a worker touches only the rows of its shard.

Categorical ids: feature ``f`` (0-based, C1 = 0 .. C26 = 25) with value ``v``
(the generator's Zipf rank, or Criteo's 32-bit hex value; 0 = missing) is
the uint64 ``f << 56 | v``: one id space for all 26 fields without
collisions (values below 2**56), and the field can be read back from an id.
Larger values (not in Criteo) are folded to 56 bits by a 64-bit mix.

The model's dense input is ``(log1p(max(x, 0)) - mean) / std`` with the
train split's ``mean`` / ``std`` of ``log1p(max(x, 0))`` from ``meta.json``,
so that every worker (and every split) transforms alike.
"""

import json
import os

import numpy as np

__all__ = ["NUM_DENSE", "NUM_SPARSE", "FIELD_SHIFT", "FORMAT_VERSION",
           "Split", "field_ids", "dense_stats", "write_split", "write_meta",
           "read_meta", "load_split", "normalize_dense", "mix64"]

NUM_DENSE = 13
NUM_SPARSE = 26
FIELD_SHIFT = 56
VALUE_MASK = (1 << FIELD_SHIFT) - 1
FORMAT_VERSION = 1


class Split:
    """One split's arrays (numpy, possibly memory-mapped); ``teacher`` is
    None or the teacher's click probabilities (synthetic data)."""

    def __init__(self, labels, dense, ids, teacher=None):
        lengths = [len(labels), len(dense), len(ids)]
        if teacher is not None:
            lengths.append(len(teacher))
        if len(set(lengths)) != 1:
            raise ValueError(f"split arrays differ in length: labels, dense, "
                             f"ids(, teacher): {lengths}")
        self.labels, self.dense, self.ids = labels, dense, ids
        self.teacher = teacher

    def __len__(self):
        return len(self.labels)

    def rows(self, lo, hi):
        """Examples [lo, hi) as a new Split (views of the arrays)."""
        return Split(self.labels[lo:hi], self.dense[lo:hi], self.ids[lo:hi],
                     None if self.teacher is None else self.teacher[lo:hi])


def mix64(x):
    """splitmix64's finalizer on a uint64 array (a bijection of uint64)."""
    x = np.asarray(x, np.uint64).copy()
    with np.errstate(over="ignore"):
        x ^= x >> np.uint64(30)
        x *= np.uint64(0xBF58476D1CE4E5B9)
        x ^= x >> np.uint64(27)
        x *= np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
    return x


def field_ids(values, field):
    """The ids of ``values`` (uint64, 0 = missing) of field ``field``:
    ``field << 56 | value`` (values of 2**56 and above are mixed to 56
    bits first)."""
    if not 0 <= field < 256:
        raise ValueError(f"field {field} outside [0, 256)")
    values = np.asarray(values, np.uint64)
    big = values > np.uint64(VALUE_MASK)
    if big.any():
        values = np.where(big, mix64(values) & np.uint64(VALUE_MASK), values)
    return values | np.uint64(field << FIELD_SHIFT)


def dense_stats(dense, chunk=1 << 20):
    """Per-feature mean and std (float64 lists) of log1p(max(dense, 0)),
    read ``chunk`` rows at a time (``dense`` may be a large memmap). A
    constant feature gets std 1."""
    total = np.zeros(NUM_DENSE)
    squares = np.zeros(NUM_DENSE)
    for lo in range(0, len(dense), chunk):
        x = np.log1p(np.maximum(np.asarray(dense[lo:lo + chunk],
                                           np.float64), 0.0))
        total += x.sum(0)
        squares += (x * x).sum(0)
    mean = total / len(dense)
    std = np.sqrt(np.maximum(squares / len(dense) - mean * mean, 0.0))
    return mean.tolist(), np.where(std > 0, std, 1.0).tolist()


def normalize_dense(dense, meta):
    """The model's dense input (float32, see the module doc)."""
    x = np.log1p(np.maximum(np.asarray(dense, np.float32), 0.0))
    mean = np.asarray(meta["dense_mean"], np.float32)
    std = np.asarray(meta["dense_std"], np.float32)
    return (x - mean) / std


def write_split(directory, name, split):
    """Writes split ``name`` (e.g. "train") under ``directory``."""
    path = os.path.join(directory, name)
    os.makedirs(path, exist_ok=True)
    np.save(os.path.join(path, "labels.npy"),
            np.ascontiguousarray(split.labels, np.uint8))
    np.save(os.path.join(path, "dense.npy"),
            np.ascontiguousarray(split.dense, np.float32))
    np.save(os.path.join(path, "ids.npy"),
            np.ascontiguousarray(split.ids, np.uint64))
    if split.teacher is not None:
        np.save(os.path.join(path, "teacher.npy"),
                np.ascontiguousarray(split.teacher, np.float32))


def write_meta(directory, meta):
    """Writes meta.json (adds format_version)."""
    meta = dict(meta, format_version=FORMAT_VERSION)
    with open(os.path.join(directory, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
        f.write("\n")


def read_meta(directory):
    """meta.json of the data set in ``directory``; ValueError naming the
    problem when it is missing or of another format version."""
    path = os.path.join(directory, "meta.json")
    try:
        with open(path) as f:
            meta = json.load(f)
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file: {directory} is not a CTR "
                         "data set (make one with synthetic.py or "
                         "criteo_tsv.py)") from None
    if meta.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"{path}: format_version "
                         f"{meta.get('format_version')}, expected "
                         f"{FORMAT_VERSION}: regenerate the data set")
    return meta


def load_split(directory, name, mmap=True):
    """Split ``name`` of the data set in ``directory``, memory-mapped unless
    ``mmap`` is False. ValueError when its arrays have the wrong shape or
    type."""
    path = os.path.join(directory, name)
    mode = "r" if mmap else None
    arrays = {k: np.load(os.path.join(path, f"{k}.npy"), mmap_mode=mode)
              for k in ("labels", "dense", "ids")}
    expected = {"labels": (np.uint8, 1, None), "dense": (np.float32, 2,
                                                          NUM_DENSE),
                "ids": (np.uint64, 2, NUM_SPARSE)}
    for key, (dtype, ndim, width) in expected.items():
        a = arrays[key]
        if a.dtype != dtype or a.ndim != ndim or (width and
                                                  a.shape[1] != width):
            raise ValueError(f"{path}/{key}.npy: {a.dtype} {a.shape}, "
                             f"expected {np.dtype(dtype)} with "
                             f"{ndim} dimensions" +
                             (f", {width} columns" if width else ""))
    teacher = os.path.join(path, "teacher.npy")
    teacher = (np.load(teacher, mmap_mode=mode) if os.path.exists(teacher)
               else None)
    if teacher is not None and (teacher.dtype != np.float32 or
                                teacher.shape != arrays["labels"].shape):
        raise ValueError(f"{path}/teacher.npy: {teacher.dtype} "
                         f"{teacher.shape}, expected float32 "
                         f"{arrays['labels'].shape}")
    return Split(arrays["labels"], arrays["dense"], arrays["ids"], teacher)
