// pipeline_served.cpp: Part 12's pipeline_step as the student's process of
// the driven mode serves it (pipeline_driven.h), registered by the part's
// own file.
#include <stdexcept>

#include "driven.h"
#include "pipeline_driven.h"
#include "pipeline_runtime.h"

namespace dtrain::calls::pipeline {

void step(int stage, int num_stages, int in_dim, int out_dim, int micro_batches, int batch_rows, Communicator& comm,
          int schedule) {
  if (schedule != static_cast<int>(Schedule::GPipe) && schedule != static_cast<int>(Schedule::OneFOneB))
    throw std::invalid_argument("no such schedule");
  PipelineStage stand_in = PipelineAccess::stand_in(
      {stage, num_stages, in_dim, out_dim, micro_batches, batch_rows},
      [](int mb, const Matrix& x) { return upcall<decltype(forward)>(kForward, mb, x); },
      [](int mb, const Matrix& g) { return upcall<decltype(backward)>(kBackward, mb, g); });
  dtrain::pipeline_step(stand_in, comm, static_cast<Schedule>(schedule));
}

}  // namespace dtrain::calls::pipeline

KIT_SERVED("pipeline_step", &dtrain::calls::pipeline::step);
