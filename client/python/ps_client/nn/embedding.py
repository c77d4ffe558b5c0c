"""Embedding modules over a sparse table (see :class:`EmbeddingBag`)."""

import torch
import torch.nn.functional as F

__all__ = ["Embedding", "EmbeddingBag"]

# With prefetch, a forward does not wait for the previous backward's pushes;
# beyond this many in flight it waits for the oldest (bounds the memory of
# pending requests; the servers apply them in any case).
_MAX_PUSHES_IN_FLIGHT = 8


class _Batch:
    """The unique ids of one input (``keys``: as int64, the client's key
    type) and their pulled rows."""

    __slots__ = ("input", "unique", "keys", "inverse", "pad", "rows",
                 "futures")

    def wait(self):
        for future in self.futures:
            future.wait()
        self.futures = ()
        return self.rows


class _SparseLookup(torch.nn.Module):
    """Pulls a batch's unique rows once and pushes their gradients."""

    def __init__(self, client, table, padding_idx):
        super().__init__()
        self.client = client
        self.table = client.table(table)
        if self.table.kind != "sparse":
            raise ValueError(f"table '{self.table.name}' is "
                             f"{self.table.kind}; an embedding needs a "
                             "sparse table")
        self.embedding_dim = self.table.dim
        self.padding_idx = padding_idx
        self._pushes = []
        self._prefetched = None

    def prefetch(self, input):
        """Starts pulling the rows of the next batch's ``input`` now, so the
        pull overlaps this batch's compute; the next forward with an equal
        ``input`` uses them (another input discards them and pulls).

        Staleness: the prefetched rows are read before this batch's
        gradients are pushed, so they lack exactly this worker's last update
        (one step of its own pushes; other workers' updates are as fresh as
        the table's consistency allows). One batch is prefetched at most
        and it is used by the very next forward only, so the bound is one
        step. Without prefetch a forward first waits for the previous
        backward's pushes, so it sees all of this worker's updates.
        """
        self._prefetched = self._pull(input)

    def flush(self):
        """Waits for the gradient pushes issued so far; raises the first
        error (a push failed on the server)."""
        pushes, self._pushes = self._pushes, []
        for future in pushes:
            future.wait()

    def _reap(self):
        """Raises the errors of completed pushes and forgets them; waits for
        the oldest while more than a few are in flight."""
        while self._pushes and (self._pushes[0].done()
                                or len(self._pushes) > _MAX_PUSHES_IN_FLIGHT):
            self._pushes.pop(0).wait()

    def _pull(self, input):
        # The index types torch's embeddings take.
        if input.dtype not in (torch.int64, torch.int32):
            raise TypeError(f"ids must be an int64 or int32 tensor (as "
                            f"torch.nn.Embedding's); got {input.dtype}")
        batch = _Batch()
        batch.input = input
        batch.unique, batch.inverse = torch.unique(input, sorted=True,
                                                   return_inverse=True)
        batch.keys = batch.unique.to(torch.int64)  # no copy when int64
        batch.pad = None
        if self.padding_idx is not None:
            hit = (batch.unique == self.padding_idx).nonzero()
            if hit.numel():
                batch.pad = int(hit[0, 0])
        batch.rows = torch.empty(batch.unique.numel(), self.embedding_dim)
        batch.futures = [
            self.client.pull_sparse(self.table, batch.keys[lo:hi],
                                    out=batch.rows[lo:hi])
            for lo, hi in self._spans(batch) if hi > lo]
        if batch.pad is not None:
            batch.rows[batch.pad] = 0.0
        return batch

    @staticmethod
    def _spans(batch):
        """Row ranges to pull and push: all, or all but the padding row."""
        if batch.pad is None:
            return [(0, batch.unique.numel())]
        return [(0, batch.pad), (batch.pad + 1, batch.unique.numel())]

    def _weight(self, input):
        """The batch's rows as a tensor in the autograd graph: its gradient
        (duplicates already summed by autograd) is pushed in backward."""
        batch = self._prefetched
        self._prefetched = None
        if batch is None or not torch.equal(batch.input, input):
            self.flush()  # read this worker's own last update
            batch = self._pull(input)
        else:
            self._reap()
        weight = batch.wait()
        if torch.is_grad_enabled():
            weight.requires_grad_(True)
            weight.register_hook(lambda grad: self._push(batch, grad))
        return batch, weight

    def _push(self, batch, grad):
        grad = grad.contiguous()
        for lo, hi in self._spans(batch):
            if hi > lo:
                self._pushes.append(self.client.push_sparse(
                    self.table, batch.keys[lo:hi], grad[lo:hi]))

    def extra_repr(self):
        return (f"table='{self.table.name}', dim={self.embedding_dim}, "
                f"padding_idx={self.padding_idx}")


class EmbeddingBag(_SparseLookup):
    """``torch.nn.EmbeddingBag`` over a sparse table of the cluster.

    ``forward(input, offsets=None, per_sample_weights=None)`` takes ids as
    ``torch.nn.EmbeddingBag`` does: a 2-D ``(B, N)`` tensor of B bags of N
    ids, or a 1-D tensor with ``offsets`` (start of each bag). Ids are
    int64 or int32 (as torch's; reinterpreted as the table's uint64 ids,
    so -1 is 2**64 - 1 in both). Each call pulls the
    batch's unique ids once, pools with ``mode`` ("sum", "mean" or "max")
    and returns a ``(B, dim)`` tensor in the autograd graph; backward
    pushes one gradient row per unique id (duplicates summed), which the
    server's optimizer applies. The gradient equals what
    ``torch.nn.EmbeddingBag`` computes for its weight rows.

    Args:
        client: a connected :class:`ps_client.Client`.
        table: the sparse table (TableInfo, id or name); its ``dim`` is the
            embedding size.
        mode: "sum", "mean" (default) or "max".
        padding_idx: an id that is skipped: never pulled or pushed, no
            contribution, not counted by "mean" (as torch's padding_idx).
        include_last_offset: as ``torch.nn.EmbeddingBag``.

    Pushes are asynchronous: the next forward (or :meth:`flush`) waits for
    them and raises their errors. For sync / ssp tables call
    ``client.clock()`` after backward to end the step. See
    :meth:`prefetch` to overlap the next batch's pull with compute.
    """

    def __init__(self, client, table, mode="mean", *, padding_idx=None,
                 include_last_offset=False):
        super().__init__(client, table, padding_idx)
        if mode not in ("sum", "mean", "max"):
            raise ValueError(f"mode '{mode}': expected 'sum', 'mean' or "
                             "'max'")
        self.mode = mode
        self.include_last_offset = include_last_offset

    def forward(self, input, offsets=None, per_sample_weights=None):
        """Pooled rows of each bag, ``(B, dim)``, in the autograd graph."""
        batch, weight = self._weight(input)
        return F.embedding_bag(batch.inverse, weight, offsets, mode=self.mode,
                               per_sample_weights=per_sample_weights,
                               include_last_offset=self.include_last_offset,
                               padding_idx=batch.pad)


class Embedding(_SparseLookup):
    """``torch.nn.Embedding`` (unpooled lookup) over a sparse table:
    ``forward(ids)`` returns ``ids.shape + (dim,)``. Same pull / push /
    prefetch behaviour as :class:`EmbeddingBag`; ``padding_idx`` rows are
    zeros and get no gradient."""

    def __init__(self, client, table, *, padding_idx=None):
        super().__init__(client, table, padding_idx)

    def forward(self, input):
        """The rows of ``input``'s ids, ``input.shape + (dim,)``."""
        batch, weight = self._weight(input)
        return F.embedding(batch.inverse, weight, padding_idx=batch.pad)
