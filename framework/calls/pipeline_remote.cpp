// pipeline_remote.cpp: the harness's end of pipeline_driven.h: pipeline_step
// is one driven call, during which the stage's forward and backward run
// here, on the harness's stage, as the student's process upcalls them.
#include <stdexcept>

#include "driven.h"
#include "pipeline_driven.h"
#include "pipeline_runtime.h"

namespace dtrain::calls::pipeline {

namespace {
PipelineStage* g_stage = nullptr;  // the stage of the pipeline_step call running now

PipelineStage& stage_now(const char* call) {
  // An upcall during another call has no stage to run on: it fails that call.
  if (g_stage == nullptr) throw std::logic_error(std::string(call) + " outside pipeline_step");
  return *g_stage;
}
}  // namespace

Matrix forward(int mb, const Matrix& x) { return stage_now(kForward).forward(mb, x); }
Matrix backward(int mb, const Matrix& grad_out) { return stage_now(kBackward).backward(mb, grad_out); }

void remote_step(PipelineStage& stage, Communicator& comm, Schedule schedule) {
  struct Now {
    explicit Now(PipelineStage& s) { g_stage = &s; }
    ~Now() { g_stage = nullptr; }
  } now(stage);
  const StageShape s = PipelineAccess::shape(stage);
  remote<decltype(step)>(kStep, s.stage, s.num_stages, s.in_dim, s.out_dim, s.micro_batches, s.batch_rows, comm,
                         static_cast<int>(schedule));
}

}  // namespace dtrain::calls::pipeline

KIT_UPCALLED(dtrain::calls::pipeline::kForward, &dtrain::calls::pipeline::forward);
KIT_UPCALLED(dtrain::calls::pipeline::kBackward, &dtrain::calls::pipeline::backward);
