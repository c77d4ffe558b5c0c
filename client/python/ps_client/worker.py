"""The worker-command contract of ``ps_launch``, and its progress lines.

``ps_launch --worker_cmd '<command>'`` runs the command once per worker
index ``i`` with ``--config=<effective config path> --index=<i>`` appended
and the environment ``PS_CONFIG=<path>``, ``PS_WORKER_INDEX=<i>``,
``PS_NUM_WORKERS=<W>``. In a Kubernetes Indexed Job (deploy/k8s, "Your
own trainer") the index comes from ``JOB_COMPLETION_INDEX`` instead, as for
``ps_worker``. A trainer reads them with :func:`worker_context`
and reports with :class:`ProgressLog`, whose lines (one per line on stdout,
flushed) are the ones ``ps_worker`` prints and the launcher parses
(worker/train_loop.h)::

    START worker=0 model=mlp consistency=sync steps_per_epoch=468 epochs=3 ...
    PROGRESS worker=0 epoch=1 step=120 loss=0.5100 samples_per_s=10234.5 time_s=3.210
    EVAL worker=0 epoch=1 step=200 test_accuracy=0.8712 time_s=5.100
    FINAL worker=0 steps=1404 test_accuracy=0.8843 time_s=40.200
    DONE worker=0 steps=1404 samples=89856 wall_s=40.300 samples_per_s=2229.6

``epoch`` is 1-based; ``step`` counts this worker's steps from 1.
"""

import argparse
import dataclasses
import os
import sys

__all__ = ["WorkerContext", "add_worker_arguments", "worker_context",
           "ProgressLog"]


@dataclasses.dataclass(frozen=True)
class WorkerContext:
    """Where this worker runs: its cluster config and index."""
    config_path: str
    worker_index: int
    num_workers: int  # from PS_NUM_WORKERS, else 0 (unknown; see the config)


def add_worker_arguments(parser):
    """Adds ``--config`` and ``--index`` (defaults: ``$PS_CONFIG``;
    ``$PS_WORKER_INDEX``, else ``$JOB_COMPLETION_INDEX``, the pod's index
    in a Kubernetes Indexed Job) to an argparse parser of your own."""
    parser.add_argument("--config", default=os.environ.get("PS_CONFIG"),
                        help="cluster config YAML (default: $PS_CONFIG)")
    index = os.environ.get("PS_WORKER_INDEX",
                           os.environ.get("JOB_COMPLETION_INDEX"))
    parser.add_argument("--index", type=int,
                        default=int(index) if index is not None else None,
                        help="worker index (default: $PS_WORKER_INDEX, else "
                             "$JOB_COMPLETION_INDEX)")
    return parser


def worker_context(args=None):
    """The :class:`WorkerContext` from parsed arguments (a namespace from a
    parser given :func:`add_worker_arguments`) or, when ``args`` is None,
    from ``sys.argv`` (unrelated arguments are ignored) and the environment.

    Raises SystemExit with a usage message when the config or index is
    missing, as argparse does.
    """
    if args is None:
        parser = add_worker_arguments(argparse.ArgumentParser(add_help=False))
        args, _ = parser.parse_known_args()
    if not args.config:
        sys.exit("worker: no cluster config: pass --config=PATH or set "
                 "PS_CONFIG (ps_launch --worker_cmd does both)")
    if args.index is None or args.index < 0:
        sys.exit("worker: no worker index: pass --index=I (I >= 0) or set "
                 "PS_WORKER_INDEX (ps_launch --worker_cmd does both; a "
                 "Kubernetes Indexed Job sets JOB_COMPLETION_INDEX)")
    return WorkerContext(config_path=args.config, worker_index=args.index,
                         num_workers=int(os.environ.get("PS_NUM_WORKERS",
                                                        "0")))


# Fixed decimals of the fields ps_worker prints (worker/train_loop.cc).
_DECIMALS = {"loss": 4, "test_accuracy": 4, "time_s": 3, "wall_s": 3,
             "samples_per_s": 1}


class ProgressLog:
    """Prints the protocol lines for worker ``worker`` to ``stream``
    (default stdout), one per call, flushed.

    Field values are printed as given, except floats of the known fields
    (loss, test_accuracy: 4 decimals; time_s, wall_s: 3; samples_per_s:
    1). A value may contain spaces but not ``=`` or a newline.
    """

    def __init__(self, worker, stream=None):
        self._worker = worker
        self._stream = stream

    def start(self, **fields):
        """START: the run's settings (model, consistency, steps_per_epoch,
        epochs, batch_size, examples, ...)."""
        self.line("START", **fields)

    def progress(self, *, epoch, step, loss, samples_per_s, time_s):
        """PROGRESS: mean loss and throughput since the last one."""
        self.line("PROGRESS", epoch=epoch, step=step, loss=loss,
                  samples_per_s=samples_per_s, time_s=time_s)

    def eval(self, *, epoch, step, test_accuracy, time_s):
        """EVAL: a test-set evaluation."""
        self.line("EVAL", epoch=epoch, step=step,
                  test_accuracy=test_accuracy, time_s=time_s)

    def final(self, *, steps, test_accuracy, time_s):
        """FINAL: the last evaluation."""
        self.line("FINAL", steps=steps, test_accuracy=test_accuracy,
                  time_s=time_s)

    def done(self, *, steps, samples, wall_s, samples_per_s):
        """DONE: totals of this worker's run."""
        self.line("DONE", steps=steps, samples=samples, wall_s=wall_s,
                  samples_per_s=samples_per_s)

    def line(self, kind, **fields):
        """Prints ``KIND worker=<w> key=value ...``."""
        parts = [kind, f"worker={self._worker}"]
        for key, value in fields.items():
            if isinstance(value, float) and key in _DECIMALS:
                text = f"{value:.{_DECIMALS[key]}f}"
            else:
                text = str(value)
            if "=" in text or "\n" in text or not text:
                raise ValueError(f"{kind} field {key}={text!r}: a value must "
                                 "be non-empty without '=' or a newline")
            parts.append(f"{key}={text}")
        stream = self._stream if self._stream is not None else sys.stdout
        print(" ".join(parts), file=stream, flush=True)
