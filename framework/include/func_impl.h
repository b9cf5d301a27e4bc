// func_impl.h: Parts 2-7. Implemented in student/func_impl.cpp.
// Shapes follow the legend in tensor.h (B, Din, Dout, P = mp_size); the
// functions of parts 3-6 are the communication points of layer FC2.
#pragma once

#include <utility>

#include "comm.h"
#include "tensor.h"

namespace dtrain {

// What one rank needs to build one FC layer. An aggregate: build it with
// braces, in this member order.
struct ParallelInfo {
  int mp_idx, dp_idx;
  Communicator mp_comm, dp_comm;  // mp_comm.rank() == mp_idx, dp_comm.rank() == dp_idx
  int part_in_dim, part_out_dim;  // this rank's share of the layer's (in_dim, out_dim)
};

// Part 2. Collective over comm (every rank calls it).
ParallelInfo get_info(Communicator& comm, int rank, int mp_size, int dp_size,
                      bool is_fc1, bool is_megatron_mp, int in_dim, int out_dim);

// Part 3, naive model parallelism, forward.
Matrix naive_collect_forward_input(const Matrix& x,            // (B, Din/P)
                                   Communicator& mp_comm, int mp_size);
// returns (B, Din)
Matrix naive_collect_forward_output(const Matrix& out,         // (B, Dout/P)
                                    Communicator& mp_comm, int mp_size);
// returns (B, Dout)

// Part 4, Megatron-style model parallelism, forward.
Matrix megatron_collect_forward_input(const Matrix& x,         // (B, Din/P)
                                      Communicator& mp_comm, int mp_size);
// returns (B, Din/P)
Matrix megatron_collect_forward_output(const Matrix& out,      // (B, Dout), a partial sum
                                       Communicator& mp_comm, int mp_size);
// returns (B, Dout)

// Part 5, naive model parallelism, backward. In parts 5 and 6, mp_group_idx
// is this rank's index inside its model-parallel group (its mp_idx, from 0 to
// mp_size - 1), not the number of a group.
Matrix naive_collect_backward_output(const Matrix& output_grad,  // (B, Dout)
                                     int mp_group_idx, int mp_size);
// returns (B, Dout/P)
Matrix naive_collect_backward_x(const Matrix& grad_x,            // (B, Din), a partial sum
                                Communicator& mp_comm, int mp_size);
// returns (B, Din/P)

// Part 6, Megatron-style model parallelism, backward.
Matrix megatron_collect_backward_output(const Matrix& output_grad,  // (B, Dout)
                                        int mp_group_idx, int mp_size);
// returns (B, Dout)
Matrix megatron_collect_backward_x(const Matrix& grad_x,            // (B, Din/P)
                                   Communicator& mp_comm, int mp_size);
// returns (B, Din/P)

// Part 7, data parallelism: the gradients averaged over the dp ranks.
std::pair<Matrix, Matrix> collect_weight_grad(const Matrix& grad_w,  // (Din, Dout) of this rank's layer part
                                              const Matrix& grad_b,  // (1, Dout)
                                              Communicator& dp_comm);
// returns (Din, Dout) and (1, Dout)

}  // namespace dtrain
