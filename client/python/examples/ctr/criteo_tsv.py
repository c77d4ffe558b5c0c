#!/usr/bin/env python3
"""Criteo's tab-separated format, read into the CTR job's arrays.

Each line of the Criteo display-advertising data (Kaggle's ``train.txt``,
the Terabyte logs' ``day_N``) has 40 tab-separated columns:

    label  I1 .. I13  C1 .. C26

label is 0 or 1; I1-I13 are integers (may be negative; empty = missing);
C1-C26 are hexadecimal hashes (8 digits in Criteo; up to 16 accepted;
empty = missing). The reader turns them into ctr_data's arrays: the dense
features as float32 (missing = 0), and categorical value h of field f into
the id ``f << 56 | (h + 1)`` (0 stays "missing"; an h of 2**56 - 1 or
more, which Criteo does not have, is hashed to 56 bits instead).

Converting a file into a data set directory (the last ``--test_fraction``
of the lines is the held-out split: Criteo's lines are in time order, so
this tests on the latest traffic, as the DLRM benchmark's last day)::

    criteo_tsv.py --input train.txt[.gz] --out DIR [--test_fraction 0.1]
        [--max_rows N]

Malformed input is a ValueError naming the line (1-based), column and
value.
"""

import argparse
import gzip
import itertools
import os
import sys
import time

import numpy as np

import ctr_data

NUM_COLUMNS = 1 + ctr_data.NUM_DENSE + ctr_data.NUM_SPARSE
_HEX = np.full(256, 255, np.uint8)
for _i, _c in enumerate(b"0123456789abcdef"):
    _HEX[_c] = _i
for _i, _c in enumerate(b"ABCDEF"):
    _HEX[_c] = 10 + _i

__all__ = ["parse_lines", "read", "convert"]


def _open(path):
    if path.endswith(".gz"):
        return gzip.open(path, "rt", newline="\n")
    return open(path, newline="\n")


def _bad(first_line, index, column, value, why):
    return ValueError(f"line {first_line + index}: column {column + 1} "
                      f"({_column_name(column)}) {value!r}: {why}")


def _column_name(column):
    if column == 0:
        return "label"
    if column <= ctr_data.NUM_DENSE:
        return f"I{column}"
    return f"C{column - ctr_data.NUM_DENSE}"


def _parse_hex(values, first_line, column):
    """uint64 values of hex strings ('' = missing -> 0, else value + 1)."""
    try:
        raw = np.array(values, dtype="S16")
    except UnicodeEncodeError:
        bad = next(i for i, v in enumerate(values) if not v.isascii())
        raise _bad(first_line, bad, column, values[bad],
                   "not a hexadecimal hash") from None
    too_long = [i for i, v in enumerate(values) if len(v) > 16]
    if too_long:
        raise _bad(first_line, too_long[0], column, values[too_long[0]],
                   "more than 16 hexadecimal digits")
    lengths = np.char.str_len(raw)
    digits = _HEX[raw.view(np.uint8).reshape(len(raw), 16)]
    valid = np.arange(16) < lengths[:, None]
    if np.any(valid & (digits == 255)):
        bad = int(np.flatnonzero((valid & (digits == 255)).any(1))[0])
        raise _bad(first_line, bad, column, values[bad],
                   "not a hexadecimal hash")
    value = np.zeros(len(raw), np.uint64)
    for k in range(16):
        value = np.where(valid[:, k], (value << np.uint64(4)) |
                         digits[:, k].astype(np.uint64), value)
    small = value < np.uint64(ctr_data.VALUE_MASK)
    folded = np.where(small, value + np.uint64(1),
                      ctr_data.mix64(value) & np.uint64(ctr_data.VALUE_MASK))
    return np.where(lengths > 0, folded, np.uint64(0))


def _parse_int(values, first_line, column):
    """int64 values of decimal strings ('' = missing -> 0)."""
    a = np.array(values)
    a[a == ""] = "0"
    try:
        return a.astype(np.int64)
    except ValueError:
        for i, v in enumerate(values):
            try:
                int(v or "0")
            except ValueError:
                raise _bad(first_line, i, column, v,
                           "not an integer") from None
        raise


def parse_lines(lines, first_line=1):
    """A ctr_data.Split of Criteo lines (strings with or without their
    newline); ``first_line`` numbers the first one in errors."""
    rows = [line.rstrip("\r\n").split("\t") for line in lines]
    for i, row in enumerate(rows):
        if len(row) != NUM_COLUMNS:
            raise ValueError(f"line {first_line + i}: {len(row)} "
                             f"tab-separated columns, expected {NUM_COLUMNS} "
                             "(label, I1-I13, C1-C26)")
    n = len(rows)
    columns = list(zip(*rows)) if rows else [()] * NUM_COLUMNS
    bad = next((i for i, v in enumerate(columns[0]) if v not in ("0", "1")),
               None)
    if bad is not None:
        raise _bad(first_line, bad, 0, columns[0][bad],
                   "the label must be 0 or 1")
    labels = np.array([v == "1" for v in columns[0]], np.uint8)
    dense = np.empty((n, ctr_data.NUM_DENSE), np.float32)
    for j in range(ctr_data.NUM_DENSE):
        dense[:, j] = _parse_int(list(columns[1 + j]), first_line, 1 + j)
    ids = np.empty((n, ctr_data.NUM_SPARSE), np.uint64)
    for f in range(ctr_data.NUM_SPARSE):
        column = 1 + ctr_data.NUM_DENSE + f
        ids[:, f] = (_parse_hex(list(columns[column]), first_line, column) |
                     np.uint64(f << ctr_data.FIELD_SHIFT))
    return ctr_data.Split(labels, dense, ids)


def read(path, max_rows=None, chunk_rows=1 << 16):
    """Yields Splits of ``chunk_rows`` lines of the file at ``path``
    (.gz read as gzip), at most ``max_rows`` lines in all."""
    with _open(path) as f:
        lines = itertools.islice(f, max_rows)
        first = 1
        while True:
            chunk = list(itertools.islice(lines, chunk_rows))
            if not chunk:
                return
            try:
                yield parse_lines(chunk, first)
            except ValueError as e:
                raise ValueError(f"{path}: {e}") from None
            first += len(chunk)


def _count_lines(path, max_rows):
    with _open(path) as f:
        return sum(1 for _ in itertools.islice(f, max_rows))


def _open_split(directory, name, n):
    os.makedirs(os.path.join(directory, name), exist_ok=True)
    shapes = {"labels": (np.uint8, (n,)),
              "dense": (np.float32, (n, ctr_data.NUM_DENSE)),
              "ids": (np.uint64, (n, ctr_data.NUM_SPARSE))}
    return {k: np.lib.format.open_memmap(
        os.path.join(directory, name, f"{k}.npy"), mode="w+", dtype=dtype,
        shape=shape) for k, (dtype, shape) in shapes.items()}


def convert(path, out, test_fraction=0.1, max_rows=None):
    """Writes the Criteo file at ``path`` as a data set directory ``out``
    (two passes: one counts the lines, one parses them into .npy files).
    Returns its meta.json dict."""
    n = _count_lines(path, max_rows)
    num_test = int(round(n * test_fraction))
    num_train = n - num_test
    if num_train < 1 or num_test < 1:
        raise ValueError(f"{path}: {n} lines do not make a training and a "
                         f"held-out split with test_fraction {test_fraction}")
    tmp = f"{os.path.abspath(out)}.tmp{os.getpid()}"
    splits = {"train": _open_split(tmp, "train", num_train),
              "test": _open_split(tmp, "test", num_test)}
    at = 0
    for chunk in read(path, n):
        row = at
        for name, begin, end in (("train", 0, num_train),
                                 ("test", num_train, n)):
            lo, hi = max(row, begin), min(row + len(chunk), end)
            if lo < hi:
                for key in ("labels", "dense", "ids"):
                    splits[name][key][lo - begin:hi - begin] = getattr(
                        chunk, key)[lo - row:hi - row]
        at += len(chunk)
    mean, std = ctr_data.dense_stats(splits["train"]["dense"])
    for arrays in splits.values():
        for a in arrays.values():
            a.flush()
    meta = {"source": "criteo_tsv", "input": os.path.abspath(path),
            "num_train": num_train, "num_test": num_test,
            "dense_mean": mean, "dense_std": std,
            "train_ctr": float(np.mean(splits["train"]["labels"]))}
    ctr_data.write_meta(tmp, meta)
    os.rename(tmp, out)
    return meta


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", required=True,
                        help="a Criteo file (.gz read as gzip)")
    parser.add_argument("--out", required=True,
                        help="data set directory (must not exist)")
    parser.add_argument("--test_fraction", type=float, default=0.1)
    parser.add_argument("--max_rows", type=int)
    args = parser.parse_args(argv)
    if os.path.exists(args.out):
        sys.exit(f"criteo_tsv.py: {args.out} exists; choose a new --out")
    start = time.monotonic()
    try:
        meta = convert(args.input, args.out, args.test_fraction,
                       args.max_rows)
    except (OSError, ValueError) as e:
        sys.exit(f"criteo_tsv.py: {e}")
    print(f"wrote {args.out}: {meta['num_train']} train / "
          f"{meta['num_test']} test examples, click rate "
          f"{meta['train_ctr']:.4f}, {time.monotonic() - start:.1f} s")


if __name__ == "__main__":
    main()
