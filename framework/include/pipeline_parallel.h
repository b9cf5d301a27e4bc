// pipeline_parallel.h: Part 12 (an extension part): pipeline parallelism.
// Implemented in student/pipeline_parallel.cpp.
// Shapes: rows(mb) rows of micro-batch mb; in_dim and out_dim of this stage's layer.
#pragma once

#include <memory>

#include "comm.h"
#include "tensor.h"

namespace dtrain {

enum class Schedule { GPipe, OneFOneB };

// One stage of a K-stage pipeline: an MLP of K fully connected layers (ReLU
// between them), stage k owning layer k, K = comm.size(), stage = comm.rank();
// one batch cut into M micro-batches. The framework builds it.
class PipelineStage {
 public:
  const int stage, num_stages;  // comm.rank(), comm.size()
  const int in_dim, out_dim;    // of this stage's layer
  int micro_batches() const;    // M
  int rows(int mb) const;       // rows of micro-batch mb (a receiver sizes its buffer with it)
  // Runs this stage's layer on micro-batch mb and keeps what backward needs (a
  // stash per micro-batch in flight). Stage 0 reads micro-batch mb's input
  // rows itself and ignores x; the others pass the activation received from
  // stage-1, (rows(mb), in_dim). Returns (rows(mb), out_dim).
  Matrix forward(int mb, const Matrix& x);
  // The last stage passes an empty Matrix (the loss gradient of mb is computed
  // here); the others pass the gradient received from stage+1, (rows(mb),
  // out_dim). Adds to the layer's gradients, frees mb's stash, and returns the
  // gradient for stage-1, (rows(mb), in_dim).
  Matrix backward(int mb, const Matrix& grad_out);

  struct State;  // the framework's: the layer, the batch, the stashes, the record of calls
  PipelineStage(int stage, int num_stages, int in_dim, int out_dim, std::unique_ptr<State> state);
  PipelineStage(PipelineStage&&) noexcept;
  ~PipelineStage();

 private:
  std::unique_ptr<State> state_;
  friend struct PipelineAccess;
};

// One step's forward and backward passes over the M micro-batches, in the
// order of the schedule, sending activations to stage+1 and gradients to
// stage-1 (tag: the micro-batch index).
//   GPipe:  forward 0..M-1, then backward 0..M-1.
//   1F1B:   stage k runs w = min(K-k-1, M) forwards, then alternates forward
//           w+i and backward i, then the remaining backwards; backwards in
//           order 0..M-1.
void pipeline_step(PipelineStage& stage, Communicator& comm, Schedule schedule);

}  // namespace dtrain
