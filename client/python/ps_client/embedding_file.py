"""Reader of embedding export files (``ps_ctl export``), with numpy.

The format is specified in ``client/export/embedding_file.h`` (the C++
writer and reader): a 256-byte header, then one record per row::

    u64 id | dim values (the table's storage_type) | state slots x dim float32

Example: serve a table trained through the cluster from plain PyTorch::

    import torch
    from ps_client import embedding_file

    f = embedding_file.read("emb.psemb")
    vocab = f.ids                                   # np.uint64, one per row
    bag = torch.nn.EmbeddingBag.from_pretrained(
        torch.from_numpy(f.values), mode="sum")     # row i is vocab[i]
    index = f.index()                               # id -> row

Nothing here talks to a server; the module needs only numpy.
"""

import zlib

import numpy as np

__all__ = ["EmbeddingFile", "read", "MAGIC", "VERSION"]

MAGIC = b"PSEMBED\0"
VERSION = 1
_HEADER_BYTES = 256
# ValueType codes (common/value_type.h) -> (name, numpy dtype as stored).
_TYPES = {
    0: ("float32", np.dtype("<f4")),
    1: ("float16", np.dtype("<f2")),
    2: ("bfloat16", np.dtype("<u2")),  # numpy has no bfloat16: raw bits
}


class EmbeddingFile:
    """A whole export in memory.

    Attributes:
        table, optimizer: names from the header (the optimizer's state slots
            are in its registry order, e.g. adam: m, v).
        dim: row width.
        value_type: "float32", "float16" or "bfloat16" (as stored).
        num_shards: shards the rows came from.
        ids: ``(n,)`` uint64.
        values: ``(n, dim)`` float32 (half-precision values converted
            exactly).
        state: ``(slots, n, dim)`` float32, or None when exported without it.
    """

    def __init__(self, table, optimizer, dim, value_type, num_shards, ids,
                 values, state):
        self.table = table
        self.optimizer = optimizer
        self.dim = dim
        self.value_type = value_type
        self.num_shards = num_shards
        self.ids = ids
        self.values = values
        self.state = state

    def __len__(self):
        return len(self.ids)

    def index(self):
        """``{id: row}``. An id exported twice (evicted and re-created
        during a live export) maps to its later, newer row."""
        return {int(i): r for r, i in enumerate(self.ids.tolist())}

    def rows_for(self, ids, missing="raise"):
        """The ``(len(ids), dim)`` float32 rows of ``ids`` (any integer
        array-like; int64 ids are taken as the table's uint64 ids).

        ``missing``: what an id without a row gets: "raise" (KeyError) or
        "zeros". (A server would answer a pull of such an id with its
        initializer's values; the file only holds stored rows.)
        """
        index = self.index()
        ids = np.asarray(ids).astype(np.uint64, copy=False).reshape(-1)
        out = np.zeros((len(ids), self.dim), np.float32)
        for k, i in enumerate(ids.tolist()):
            row = index.get(i)
            if row is None:
                if missing == "raise":
                    raise KeyError(f"id {i} has no row in '{self.table}'")
                continue
            out[k] = self.values[row]
        return out


def _field(raw):
    return raw.split(b"\0", 1)[0].decode()


def read(path, verify=True):
    """Reads ``path``; ``verify`` checks the CRC-32 of the records.

    Raises ValueError naming the file for a wrong magic, an unknown version
    or element type, a size that does not match the row count (truncated)
    or a checksum mismatch; OSError when it cannot be read.
    """
    with open(path, "rb") as f:
        header = f.read(_HEADER_BYTES)
        if len(header) < _HEADER_BYTES or header[:8] != MAGIC:
            raise ValueError(f"{path}: not an embedding export file")
        version, header_bytes, n, dim, vtype, slots, shards, crc = (
            np.frombuffer(header, "<u4", 2, 8).tolist() +
            np.frombuffer(header, "<u8", 1, 16).tolist() +
            np.frombuffer(header, "<u4", 5, 24).tolist())
        if version != VERSION:
            raise ValueError(f"{path}: format version {version}; this reader "
                             f"reads {VERSION}")
        if vtype not in _TYPES or dim == 0 or header_bytes < _HEADER_BYTES:
            raise ValueError(f"{path}: bad header (element type {vtype}, dim "
                             f"{dim}, header size {header_bytes})")
        type_name, stored = _TYPES[vtype]
        fields = [("id", "<u8"), ("values", stored, (dim,))]
        if slots:
            fields.append(("state", "<f4", (slots, dim)))
        record = np.dtype(fields)
        f.seek(header_bytes)
        body = f.read()
    if len(body) != n * record.itemsize:
        raise ValueError(f"{path}: {len(body)} bytes of records for {n} rows "
                         f"of {record.itemsize} bytes (truncated?)")
    if verify and zlib.crc32(body) != crc:
        raise ValueError(f"{path}: checksum mismatch")
    rows = np.frombuffer(body, record, n)
    values = rows["values"]
    if type_name == "bfloat16":
        values = (values.astype(np.uint32) << 16).view(np.float32)
    else:
        values = values.astype(np.float32)
    state = None
    if slots:
        state = np.ascontiguousarray(rows["state"].transpose(1, 0, 2))
    return EmbeddingFile(
        table=_field(header[48:176]), optimizer=_field(header[176:208]),
        dim=dim, value_type=type_name, num_shards=shards,
        ids=rows["id"].copy(), values=np.ascontiguousarray(values),
        state=state)
