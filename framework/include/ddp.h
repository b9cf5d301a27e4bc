// ddp.h: Part 13 (an extension part): data parallelism as DDP runs it,
// gradients grouped into buckets whose allreduces overlap the rest of
// backward. Implemented in student/ddp_buckets.cpp.
// Shapes: P parameters; param_elems[p] elements in parameter p; a bucket is a
// list of parameter indices, its flat buffer the sum of their sizes.
#pragma once

#include <memory>
#include <vector>

#include "comm.h"
#include "tensor.h"

namespace dtrain {

// Parameters are numbered in the order of the model's layers (W1, b1, W2, b2,
// ...); backward produces their gradients in reverse order. Walk the
// parameters from the last to the first, appending each to the open bucket
// unless that would make the bucket hold more than cap_elems elements; then
// start a new bucket with it. A parameter larger than cap_elems is alone in
// its bucket (the next parameter starts a new one). Buckets are returned in
// the order they were filled (bucket 0 holds the last parameter), and indices
// within a bucket in walk order (descending). No bucket is empty. cap_elems
// <= 0: one bucket per parameter.
std::vector<std::vector<int>> plan_buckets(const std::vector<long>& param_elems,  // (P)
                                           long cap_elems);

class GradientBuckets {
 public:
  // Plans the buckets and allocates each bucket's flat buffers.
  GradientBuckets(const std::vector<long>& param_elems, long cap_elems, Communicator& comm);
  ~GradientBuckets();  // defined in ddp_buckets.cpp, after State (the stub has it)

  // Called by the framework's backward once per parameter, in reverse order,
  // as soon as that gradient is final: copy it into its bucket's buffer; when
  // the bucket has all its gradients, start its sum-allreduce at once
  // (iallreduce).
  void grad_ready(int param,            // 0 .. P-1
                  const Vector& grad);  // (param_elems[param])

  // Wait for every bucket's allreduce, divide by comm.size(), and write each
  // parameter's averaged gradient back into grads[param]. Leaves the object
  // ready for the next backward (one GradientBuckets serves every step).
  void finish(const std::vector<Vector*>& grads);  // (P) pointers, grads[p] of param_elems[p]

 private:
  struct State;  // defined by the student in ddp_buckets.cpp
  std::unique_ptr<State> state;
};

}  // namespace dtrain
