"""A sync worker for test_membership.py: trains a module whose gradient is
exactly 1.0 per element (loss = p.sum()) through DenseParameters, in the
loop the class documents (driven by the step ``push()`` returns), so a
pause longer than the heartbeat timeout makes it rejoin and skip ahead.

    membership_worker.py CONFIG INDEX STEPS DELAY_S PROGRESS_FILE

Prints ``START first_step=S`` and ``DONE steps=N rejoins=R`` on stdout and
writes its step to PROGRESS_FILE after each one (temp file + rename).
"""

import os
import sys
import time

import torch

import ps_client
import ps_client.nn


def main():
    config, index, steps, delay, progress = sys.argv[1:6]
    index, steps, delay = int(index), int(steps), float(delay)
    client = ps_client.connect(config, worker_index=index)
    module = torch.nn.Linear(4, 2, bias=False)  # 8 parameters
    params = ps_client.nn.DenseParameters(client, module, "s")
    step = params.step
    print(f"START first_step={step}", flush=True)
    rejoins = 0
    while step < steps:
        params.pull()
        next(module.parameters()).sum().backward()
        after = params.push()
        rejoins += after != step + 1
        step = after
        with open(progress + ".tmp", "w") as f:
            f.write(str(step))
        os.replace(progress + ".tmp", progress)
        time.sleep(delay)
    client.barrier()
    print(f"DONE steps={steps} rejoins={rejoins}", flush=True)
    client.close()


if __name__ == "__main__":
    main()
