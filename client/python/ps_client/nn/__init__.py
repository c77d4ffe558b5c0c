"""PyTorch layer of ps_client: stock models train through the cluster.

- :class:`EmbeddingBag` / :class:`Embedding`: embedding lookups backed by a
  sparse table, in the shape of ``torch.nn.EmbeddingBag`` /
  ``torch.nn.Embedding``; backward pushes the rows' gradients for the
  server's optimizer.
- :class:`DenseParameters`: keeps a ``torch.nn.Module``'s parameters in a
  dense table: ``pull()`` before forward, ``push()`` after backward.

The servers own the optimizers (one per table, from the cluster config): do
not also step a ``torch.optim`` optimizer over these parameters. Requires
PyTorch (Debian's python3-torch, CPU tensors).
"""

from ps_client.nn.dense import DenseParameters
from ps_client.nn.embedding import Embedding, EmbeddingBag

__all__ = ["DenseParameters", "Embedding", "EmbeddingBag"]
