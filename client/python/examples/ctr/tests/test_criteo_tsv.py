"""The Criteo TSV reader on a hand-written sample with known values."""

import gzip
import re

import numpy as np
import pytest

import criteo_tsv
import ctr_data


def line(label, ints, cats):
    assert len(ints) == 13 and len(cats) == 26
    return "\t".join([label] + ints + cats) + "\n"


INTS = ["1", "-2", "", "40", "0", "7", "", "3", "1000000", "", "5", "", "12"]
CATS = ["68fd1e64", "", "ABCDEF01", "0", "00000000", "ffffffffffffffff"] + \
    ["a"] * 20
SAMPLE = [
    line("1", INTS, CATS),
    line("0", ["0"] * 13, [""] * 26),
    line("1", ["3"] * 13, ["b1"] * 26),
]


def cat_id(field, value):
    return (field << 56) | value


def test_parses_the_sample_to_known_values():
    split = criteo_tsv.parse_lines(SAMPLE)
    assert split.labels.tolist() == [1, 0, 1]
    assert split.dense.dtype == np.float32 and split.dense.shape == (3, 13)
    assert split.dense[0].tolist() == [1, -2, 0, 40, 0, 7, 0, 3, 1000000, 0,
                                       5, 0, 12]
    assert split.dense[1].tolist() == [0] * 13
    assert split.ids.dtype == np.uint64 and split.ids.shape == (3, 26)
    first = [int(x) for x in split.ids[0]]
    assert first[0] == cat_id(0, 0x68fd1e64 + 1)
    assert first[1] == cat_id(1, 0)  # missing
    assert first[2] == cat_id(2, 0xABCDEF01 + 1)  # upper case
    assert first[3] == cat_id(3, 1) == cat_id(3, 0 + 1)  # "0" is not missing
    assert first[4] == cat_id(4, 1)
    # 2**64 - 1 does not fit 56 bits: hashed (splitmix64) into them.
    folded = int(ctr_data.mix64(np.uint64(2 ** 64 - 1))) & (2 ** 56 - 1)
    assert first[5] == cat_id(5, folded)
    assert first[6:] == [cat_id(f, 0xa + 1) for f in range(6, 26)]
    assert [int(x) for x in split.ids[1]] == [cat_id(f, 0) for f in range(26)]
    assert [int(x) for x in split.ids[2]] == [cat_id(f, 0xb1 + 1)
                                              for f in range(26)]


def test_same_value_in_two_fields_gives_two_ids():
    ids = criteo_tsv.parse_lines(SAMPLE[2:]).ids[0]
    assert len(set(ids.tolist())) == 26


@pytest.mark.parametrize("text,message", [
    ("1\t2\t3\n", "line 8: 3 tab-separated columns, expected 40"),
    (line("2", INTS, CATS), "line 8: column 1 (label) '2': the label must"),
    (line("1", ["1.5"] + INTS[1:], CATS),
     "line 8: column 2 (I1) '1.5': not an integer"),
    (line("1", INTS, CATS[:25] + ["12g4"]),
     "line 8: column 40 (C26) '12g4': not a hexadecimal hash"),
    (line("1", INTS, ["1" * 17] + CATS[1:]),
     "line 8: column 15 (C1) '11111111111111111': more than 16"),
    (line("1", INTS, ["é"] + CATS[1:]),
     "line 8: column 15 (C1) 'é': not a hexadecimal hash"),
])
def test_malformed_lines_name_line_and_column(text, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        criteo_tsv.parse_lines(SAMPLE[:1] + [text], first_line=7)


def test_read_in_chunks_equals_one_parse_and_numbers_lines(tmp_path):
    path = tmp_path / "day.txt.gz"
    with gzip.open(path, "wt") as f:
        f.writelines(SAMPLE * 3)
    chunks = list(criteo_tsv.read(str(path), chunk_rows=2))
    assert [len(c) for c in chunks] == [2, 2, 2, 2, 1]
    whole = criteo_tsv.parse_lines(SAMPLE * 3)
    assert np.array_equal(np.concatenate([c.ids for c in chunks]), whole.ids)
    assert np.array_equal(np.concatenate([c.dense for c in chunks]),
                          whole.dense)
    assert [len(c) for c in criteo_tsv.read(str(path), max_rows=4)] == [4]
    bad = tmp_path / "bad.txt"
    bad.write_text("".join(SAMPLE * 2) + "x\n")
    with pytest.raises(ValueError, match=r"bad.txt: line 7: 1 tab-separated"):
        list(criteo_tsv.read(str(bad), chunk_rows=2))


def test_convert_writes_a_data_set(tmp_path):
    path = tmp_path / "train.txt"
    path.write_text("".join(SAMPLE * 4))  # 12 lines
    meta = criteo_tsv.convert(str(path), str(tmp_path / "d"),
                              test_fraction=0.25)
    assert (meta["num_train"], meta["num_test"]) == (9, 3)
    assert ctr_data.read_meta(str(tmp_path / "d")) == dict(
        meta, format_version=ctr_data.FORMAT_VERSION)
    train = ctr_data.load_split(str(tmp_path / "d"), "train")
    test = ctr_data.load_split(str(tmp_path / "d"), "test")
    whole = criteo_tsv.parse_lines(SAMPLE * 4)
    assert np.array_equal(train.ids, whole.ids[:9])
    assert np.array_equal(test.labels, whole.labels[9:])
    assert test.teacher is None
    mean, std = ctr_data.dense_stats(whole.dense[:9])
    assert meta["dense_mean"] == pytest.approx(mean)
    assert meta["dense_std"] == pytest.approx(std)
    assert meta["train_ctr"] == pytest.approx(6 / 9)
