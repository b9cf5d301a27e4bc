// pipeline_calls.h: Part 12's student function, called as student_calls.h
// calls the others, so that the ledger and the messages name it, and the
// judge sees the gradients it left (observe.h). The tests and
// pipeline_train call it.
#pragma once

#include "comm_runtime.h"
#include "observe.h"
#include "pipeline_parallel.h"
#include "pipeline_runtime.h"

// In the driven harness the step runs in the student's process, on a
// stand-in whose forward and backward run here (pipeline_driven.h).
#ifdef KIT_DRIVEN
#include "pipeline_driven.h"
#define KIT_PIPELINE_STEP ::dtrain::calls::pipeline::remote_step
#else
#define KIT_PIPELINE_STEP ::dtrain::pipeline_step
#endif

namespace dtrain::student {

inline void pipeline_step(PipelineStage& stage, Communicator& comm, Schedule schedule) {
  StudentScope scope("pipeline_step", &comm, "comm");
  KIT_PIPELINE_STEP(stage, comm, schedule);
  observe("pipeline_step.grad_w", PipelineAccess::grad_w(stage));
  observe("pipeline_step.grad_b", PipelineAccess::grad_b(stage));
}

}  // namespace dtrain::student
