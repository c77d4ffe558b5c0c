// The training loop of ps_worker: data-parallel training against the
// parameter servers through the public client SDK only.
//
// Each step: pull the parameters -> forward/backward on this worker's batch
// -> push the batch-mean gradient (times the lr schedule's scale) -> Clock().
//  - sync: the servers average the W workers' gradients of a step and apply
//    the optimizer once, so W workers of batch B are minibatch SGD with batch
//    W*B. The pull of step t+1 is issued after Clock() (it waits for step t).
//  - async / ssp: the pull of step t+1 is issued before computing step t, so
//    the transfer overlaps with compute (the parameters are one step staler;
//    ssp's bound is enforced by the servers when the pull is answered).
//    Each push is applied on its own, so by default (average_async_pushes)
//    a worker pushes its gradient divided by num_workers: the W pushes of a
//    round then add up to the mean gradient that one sync step applies, and
//    a table's learning rate means the same in every mode. Without it, W
//    workers apply W full steps per round, which with the learning rate
//    tuned for sync diverges (more so with momentum, which asynchrony
//    already amplifies).
// Worker 0 evaluates on the test set every eval_every_steps steps with the
// parameters it pulled; after the last step all workers meet at a Barrier()
// and worker 0 pulls the final parameters and evaluates them (FINAL line).
//
// Membership: the worker's first step is the job's current step,
// client->clock() - client->job_start_clock() (0 for a fresh job; a
// restarted worker continues where the job is instead of repeating its
// schedule, whose batches are a function of the step). When the servers
// evicted it (a pause longer than heartbeat_timeout_ms), its next push,
// Clock() or Barrier() fails with ps::IsEvicted(); it then calls Rejoin()
// and continues at the step the job is at, skipping the steps the others
// trained meanwhile (logged to stderr). Other membership refusals (replaced
// by another process, another job) end the run with that error.
#ifndef PS_WORKER_PS_TRAINER_H_
#define PS_WORKER_PS_TRAINER_H_

#include <string>

#include "absl/status/statusor.h"
#include "client/client.h"
#include "worker/dataset.h"
#include "worker/model.h"
#include "worker/train_loop.h"

namespace ps::worker {

struct PsWorkerOptions {
  int worker_index = 0;
  ScheduleOptions schedule;  // schedule.stream should be worker_index
  int eval_every_steps = 200;  // worker 0 only; 0 = only at the end
  int log_every_steps = 50;
  int num_workers = 1;
  // async / ssp: push gradient / num_workers (see above).
  bool average_async_pushes = true;
  // Worker 0 writes the parameters it first pulled to <prefix>.init and the
  // final ones to <prefix>.final (raw float32, host byte order). "" = off.
  std::string dump_params_prefix;
};

// Trains `model` on `shard` against `table` (a dense table of exactly
// model->num_params() elements). `test` is used by worker 0 only. Errors:
// INVALID_ARGUMENT for a table/model mismatch; otherwise the client's or the
// model's status, annotated with the step.
absl::StatusOr<TrainResult> RunPsWorker(Client* client, const TableInfo& table,
                                        Model* model, const Dataset& shard,
                                        const Dataset& test,
                                        const PsWorkerOptions& options,
                                        const LineSink& sink);

// Writes `values` as raw float32 to `path`.
absl::Status WriteFloats(const std::string& path,
                         absl::Span<const float> values);
// Reads a file written by WriteFloats.
absl::StatusOr<std::vector<float>> ReadFloats(const std::string& path);

}  // namespace ps::worker

#endif  // PS_WORKER_PS_TRAINER_H_
