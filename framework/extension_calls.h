// extension_calls.h: the extension parts' student functions, called as
// student_calls.h calls the others, so that the ledger and the messages name
// them, and the judge sees what they returned (observe.h). Here, not there: with the extension parts off, their headers are not
// shipped. The tests and the extension programs call these.
#pragma once

#include "comm_runtime.h"
#include "observe.h"
#include "pipeline_parallel.h"
#include "pipeline_runtime.h"
#include "ring_collectives.h"

namespace dtrain::student {

#define KIT_STUDENT_ALLREDUCE(function)                                                          \
  inline Vector function(const Vector& src, Communicator& comm) {                                \
    StudentScope scope(#function, &comm, "comm", {{"src", static_cast<long>(src.size()), 1}}); \
    Vector out = dtrain::function(src, comm);                                                    \
    observe(#function, out);                                                                     \
    return out;                                                                                  \
  }
KIT_STUDENT_ALLREDUCE(naive_allreduce)
KIT_STUDENT_ALLREDUCE(ring_allreduce)
#undef KIT_STUDENT_ALLREDUCE

inline void pipeline_step(PipelineStage& stage, Communicator& comm, Schedule schedule) {
  StudentScope scope("pipeline_step", &comm, "comm");
  dtrain::pipeline_step(stage, comm, schedule);
  observe("pipeline_step.grad_w", PipelineAccess::grad_w(stage));
  observe("pipeline_step.grad_b", PipelineAccess::grad_b(stage));
}

}  // namespace dtrain::student
