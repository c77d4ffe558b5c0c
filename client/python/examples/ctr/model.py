"""The CTR model: Wide & Deep over one embedding row per categorical id.

Each of the 26 categorical ids of an example has one row of ``1 + D``
floats in the sparse table (ctr_data explains the ids): column 0 is the
id's *wide* (linear) weight, columns 1..D its *deep* embedding. The logit is

    sum_f row_f[0]  +  MLP([dense (13), row_1[1:], ..., row_26[1:]])

The wide part learns per-id click propensities directly (the dominant
signal in CTR data); the MLP learns the dense features' nonlinear effect
and whatever interactions the embeddings carry. One row per id, rather
than a wide and a deep table, means one pull and one push per batch.

The module holds only the MLP (its parameters go to a dense table through
``ps_client.nn.DenseParameters``); the rows come from outside (a
``ps_client.nn.Embedding`` over the sparse table, or a local
``torch.nn.Embedding``), so evaluation can use its own lookup.
"""

import torch

import ctr_data

__all__ = ["WideAndDeep"]


class WideAndDeep(torch.nn.Module):
    """``forward(rows, dense)`` -> logits (B,), for rows (B, 26, 1 + D)
    and the normalized dense input (B, 13)."""

    def __init__(self, embed_dim, hidden=(128, 64)):
        super().__init__()
        if embed_dim < 1:
            raise ValueError(f"embedding dim {embed_dim}: rows need a wide "
                             "column and at least one deep column (table "
                             "dim >= 2)")
        self.embed_dim = embed_dim
        width = ctr_data.NUM_DENSE + ctr_data.NUM_SPARSE * embed_dim
        layers = []
        for h in hidden:
            layers += [torch.nn.Linear(width, h), torch.nn.ReLU()]
            width = h
        layers.append(torch.nn.Linear(width, 1))
        self.mlp = torch.nn.Sequential(*layers)

    @property
    def row_dim(self):
        """Floats per sparse-table row: the wide weight plus the
        embedding."""
        return 1 + self.embed_dim

    def forward(self, rows, dense):
        wide = rows[..., 0].sum(1)
        deep = self.mlp(torch.cat([dense, rows[..., 1:].flatten(1)], 1))
        return wide + deep.squeeze(1)

    def describe(self):
        """E.g. "wide-deep(26x9,221-128-64-1)": rows per example x row
        floats, then the MLP's layer widths (no underscore: the launcher's
        gnuplot title would set what follows one as a subscript)."""
        widths = [self.mlp[0].in_features] + [
            m.out_features for m in self.mlp if isinstance(m, torch.nn.Linear)]
        return (f"wide-deep({ctr_data.NUM_SPARSE}x{self.row_dim},"
                f"{'-'.join(map(str, widths))})")

    def num_dense_parameters(self):
        """Floats the dense table must hold."""
        return sum(p.numel() for p in self.parameters())
