// pipeline_driven.h: Part 12's pipeline_step as a driven call (driven.h).
// The harness holds the stage: its layer, its stashes and its record of
// calls. The student's process runs pipeline_step on a stand-in whose
// forward and backward are upcalls to the harness, so the order of the
// calls, which the part grades, is the harness's own record, and the
// gradients never leave it. The student's process serves pipeline_step
// (pipeline_served.cpp); the harness calls it and answers the upcalls
// (pipeline_remote.cpp).
#pragma once

#include "comm.h"
#include "pipeline_parallel.h"
#include "tensor.h"

namespace dtrain::calls::pipeline {

inline constexpr const char *kStep = "pipeline_step", *kForward = "PipelineStage::forward",
                            *kBackward = "PipelineStage::backward";

// The student's process's end: pipeline_step on a stand-in of this shape
// (StageShape's fields); `schedule` is Schedule's value.
void step(int stage, int num_stages, int in_dim, int out_dim, int micro_batches, int batch_rows, Communicator& comm,
          int schedule);

// The harness's: the stage's forward and backward, as the stand-in upcalls them.
Matrix forward(int mb, const Matrix& x);
Matrix backward(int mb, const Matrix& grad_out);

// The harness's: pipeline_step in the student's process, for `stage`.
void remote_step(PipelineStage& stage, Communicator& comm, Schedule schedule);

}  // namespace dtrain::calls::pipeline
