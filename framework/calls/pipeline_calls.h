// pipeline_calls.h: Part 12's student function, called as student_calls.h
// calls the others, so that the ledger and the messages name it, and the
// judge sees the gradients it left (observe.h). The tests and
// pipeline_train call it.
#pragma once

#include "comm_runtime.h"
#include "observe.h"
#include "pipeline_parallel.h"
#include "pipeline_runtime.h"

namespace dtrain::student {

inline void pipeline_step(PipelineStage& stage, Communicator& comm, Schedule schedule) {
  StudentScope scope("pipeline_step", &comm, "comm");
  dtrain::pipeline_step(stage, comm, schedule);
  observe("pipeline_step.grad_w", PipelineAccess::grad_w(stage));
  observe("pipeline_step.grad_b", PipelineAccess::grad_b(stage));
}

}  // namespace dtrain::student
