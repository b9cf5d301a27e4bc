// zero12.h: Part 16 (an extension part): ZeRO stages 1 and 2 for Adam, the
// rungs below Parts 8-9's stage 3. Implemented in student/zero_stage12.cpp.
// Shapes: N = the flat parameter vector's length, P = comm.size(),
// S = ceil(N / P) (a shard), N_pad = S * P (the padded length).
#pragma once

#include <string>

#include "comm.h"
#include "tensor.h"

namespace dtrain {

// Part 8's padded layout: rank r owns elements [r S, (r+1) S) of the vector
// padded with zeros to N_pad.
struct ShardLayout {
  long n;       // N
  long shard;   // S
  long padded;  // N_pad
};
inline ShardLayout shard_layout(long n, int p) {
  const long shard = p > 0 ? (n + p - 1) / p : 0;
  return {n, shard, shard * p};
}

// Adam as Part 9 defines it (the same hyper-parameters and bias
// correction; eps outside the square root). Every step: params and grad
// are full vectors of N on every rank, params equal on every rank at entry,
// grad this rank's own (unaveraged) gradient. A params or grad of another
// length throws std::invalid_argument.

// What both stages keep: Part 9's hyper-parameters and this rank's state.
struct ShardedAdam {
  ShardedAdam(long n_, Communicator& comm_, double lr_) : comm(comm_), n(n_), lr(lr_) {}
  Communicator& comm;
  long n;
  double lr, beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  int step_idx = 0;  // incremented first in step
  Vector m, v;       // (S) each: this rank's shard of the moments, empty until the first step
};

// Stage 1: the optimizer state (m, v) is sharded.
class Zero1Adam : public ShardedAdam {
 public:
  Zero1Adam(long n_, Communicator& comm_, double lr_ = 1e-3) : ShardedAdam(n_, comm_, lr_) {}
  // Allreduce the full gradient (N elements, unpadded) and divide by P;
  // update this rank's shard of params with its shard's m and v (made as
  // zeros at the first step); allgather the updated shards (source S,
  // destination N_pad) into params, the padding dropped. Both calls are made
  // on one rank too.
  void step(Vector& params,       // (N), updated in place
            const Vector& grad);  // (N)
};

// Stage 2: the optimizer state and the gradient are sharded.
class Zero2Adam : public ShardedAdam {
 public:
  Zero2Adam(long n_, Communicator& comm_, double lr_ = 1e-3) : ShardedAdam(n_, comm_, lr_) {}
  // Reduce-scatter the gradient padded to N_pad (source N_pad, destination
  // S) and divide by P: this rank never holds a full averaged gradient;
  // update its shard as stage 1 does; allgather params as stage 1 does.
  void step(Vector& params,       // (N), updated in place
            const Vector& grad);  // (N)
};

}  // namespace dtrain
