"""Dense parameter sync: a torch.nn.Module's parameters in a dense table."""

import torch

__all__ = ["DenseParameters"]


class DenseParameters:
    """Keeps the parameters of ``module`` in a dense table of the cluster.

    The parameters (those with ``requires_grad``, in ``module.parameters()``
    order, each flattened row-major) occupy elements ``[offset, offset +
    n)`` of the table. They become views of one flat float32 buffer, and
    their ``.grad`` views of another, so a pull writes straight into the
    model and a push sends the gradients without gathering them::

        params = ps_client.nn.DenseParameters(client, model, "mlp")
        for x, y in batches:
            params.pull()                 # before forward
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            params.push()                 # after backward; ends the step

    The server's optimizer (the table's, from the cluster config) updates
    the parameters; do not step a torch optimizer over them. The model's own
    initial values are replaced by the table's at the first pull (the
    table's initializer defines the initial model).

    Consistency is the table's (``table.consistency``):

    - ``sync``: ``push()`` sends the gradients and calls ``client.clock()``;
      the next ``pull()`` waits until the servers applied the mean of all
      workers' gradients (minibatch SGD over every worker's batch);
    - ``ssp``: the same; a pull waits only when this worker is more than
      ``staleness`` clocks ahead of the slowest;
    - ``async``: ``push()`` sends the gradients and receives the updated
      parameters in the same round trip (push-pull), so the next ``pull()``
      is free; other workers' updates land whenever they arrive.

    Several helpers on one worker (e.g. with an :class:`EmbeddingBag` on a
    sync table): call ``push(clock=False)`` on each and ``client.clock()``
    once per step.
    """

    def __init__(self, client, module, table, *, offset=0):
        self.client = client
        self.table = client.table(table)
        if self.table.kind != "dense":
            raise ValueError(f"table '{self.table.name}' is sparse; "
                             "DenseParameters needs a dense table")
        self.params = [p for p in module.parameters() if p.requires_grad]
        for p in self.params:
            if p.dtype != torch.float32 or p.device.type != "cpu":
                raise TypeError(f"parameter of {p.dtype} on {p.device}: "
                                "DenseParameters needs float32 CPU tensors")
        self.numel = sum(p.numel() for p in self.params)
        self.offset = offset
        if offset < 0 or offset + self.numel > self.table.size:
            raise ValueError(
                f"the module's {self.numel} parameters at offset {offset} do "
                f"not fit table '{self.table.name}' of {self.table.size} "
                "elements")
        self.values = torch.empty(self.numel)
        self.grads = torch.zeros(self.numel)
        self._fresh = False  # values already hold the table's (push-pull)
        at = 0
        for p in self.params:
            n = p.numel()
            self.values[at:at + n].copy_(p.data.reshape(-1))
            p.data = self.values[at:at + n].view_as(p)
            p.grad = self.grads[at:at + n].view_as(p)
            at += n

    def pull(self):
        """Reads the parameters from the table into the module; waits as
        the table's consistency requires."""
        if self._fresh:
            self._fresh = False
            return
        self.client.pull_dense(self.table, offset=self.offset,
                               out=self.values).wait()

    def push(self, *, scale=1.0, clock=None):
        """Sends the accumulated gradients (times ``scale``, e.g. a learning
        rate decay) and zeroes them.

        Args:
            scale: multiplies the gradients before they are sent.
            clock: call ``client.clock()`` after the push (default: for sync
                and ssp tables when the client is a worker).
        """
        self._gather_grads()
        if scale != 1.0:
            self.grads.mul_(scale)
        if self.table.consistency == "async":
            self.client.push_pull_dense(self.table, self.grads,
                                        offset=self.offset, out=self.values,
                                        zero_copy=True).wait()
            self._fresh = True
        else:
            self.client.push_dense(self.table, self.grads, offset=self.offset,
                                   zero_copy=True).wait()
        self.grads.zero_()
        if clock is None:
            clock = (self.table.consistency != "async"
                     and self.client.worker_index >= 0)
        if clock:
            self.client.clock()

    def _gather_grads(self):
        """Copies gradients that are not (or no longer) views of the flat
        buffer, e.g. after ``module.zero_grad(set_to_none=True)``."""
        at = 0
        for p in self.params:
            n = p.numel()
            view = self.grads[at:at + n]
            if p.grad is None:
                view.zero_()
            elif p.grad.data_ptr() != view.data_ptr():
                view.copy_(p.grad.reshape(-1))
            p.grad = view.view_as(p)
            at += n
