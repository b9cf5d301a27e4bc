// student_calls.h: how the framework and the tests call student code (never
// included by student files). Each wrapper runs the student function inside
// a StudentScope, so the collective ledger, a mismatch, a hung case's
// roll-call and an Eigen shape error all name the function, its arguments'
// shapes, and the communicator by the parameter name the student sees.
#pragma once

#include <utility>

#include "comm_runtime.h"
#include "data_parallel_preprocess.h"
#include "func_impl.h"
#include "zero_dp_stage3.h"

namespace dtrain::student {

inline ArgShape shape(const char* name, const Matrix& m) { return {name, static_cast<long>(m.rows()), static_cast<long>(m.cols())}; }

inline std::pair<Matrix, Labels> split_data(const Matrix& x_train, const Labels& y_train, int mp_size, int dp_size,
                                            int rank) {
  StudentScope scope("split_data", nullptr, nullptr,
                     {shape("x_train", x_train), {"y_train", static_cast<long>(y_train.size()), 1}});
  return dtrain::split_data(x_train, y_train, mp_size, dp_size, rank);
}

inline ParallelInfo get_info(Communicator& comm, int rank, int mp_size, int dp_size, bool is_fc1, bool is_megatron_mp,
                             int in_dim, int out_dim) {
  StudentScope scope("get_info", &comm, "comm");
  return dtrain::get_info(comm, rank, mp_size, dp_size, is_fc1, is_megatron_mp, in_dim, out_dim);
}

// The collect functions of parts 3-6 share one shape: (matrix, mp_comm, mp_size).
#define DTRAIN_STUDENT_COLLECT(function, arg)                                        \
  inline Matrix function(const Matrix& arg, Communicator& mp_comm, int mp_size) {    \
    StudentScope scope(#function, &mp_comm, "mp_comm", {shape(#arg, arg)});          \
    return dtrain::function(arg, mp_comm, mp_size);                                  \
  }
DTRAIN_STUDENT_COLLECT(naive_collect_forward_input, x)
DTRAIN_STUDENT_COLLECT(naive_collect_forward_output, out)
DTRAIN_STUDENT_COLLECT(megatron_collect_forward_input, x)
DTRAIN_STUDENT_COLLECT(megatron_collect_forward_output, out)
DTRAIN_STUDENT_COLLECT(naive_collect_backward_x, grad_x)
DTRAIN_STUDENT_COLLECT(megatron_collect_backward_x, grad_x)
#undef DTRAIN_STUDENT_COLLECT

inline Matrix naive_collect_backward_output(const Matrix& output_grad, int mp_group_idx, int mp_size) {
  StudentScope scope("naive_collect_backward_output", nullptr, nullptr, {shape("output_grad", output_grad)});
  return dtrain::naive_collect_backward_output(output_grad, mp_group_idx, mp_size);
}

inline Matrix megatron_collect_backward_output(const Matrix& output_grad, int mp_group_idx, int mp_size) {
  StudentScope scope("megatron_collect_backward_output", nullptr, nullptr, {shape("output_grad", output_grad)});
  return dtrain::megatron_collect_backward_output(output_grad, mp_group_idx, mp_size);
}

inline std::pair<Matrix, Matrix> collect_weight_grad(const Matrix& grad_w, const Matrix& grad_b,
                                                     Communicator& dp_comm) {
  StudentScope scope("collect_weight_grad", &dp_comm, "dp_comm", {shape("grad_w", grad_w), shape("grad_b", grad_b)});
  return dtrain::collect_weight_grad(grad_w, grad_b, dp_comm);
}

inline std::pair<Vector, int> partition_flat_tensor(const Matrix& tensor, int shard_idx, int num_shards) {
  StudentScope scope("partition_flat_tensor", nullptr, nullptr, {shape("tensor", tensor)});
  return ZeroDPStage3FCLayer::partition_flat_tensor(tensor, shard_idx, num_shards);
}

inline Matrix forward(ZeroDPStage3FCLayer& layer, const Matrix& x) {
  StudentScope scope("ZeroDPStage3FCLayer::forward", &layer.comm, "comm", {shape("x", x)});
  return layer.forward(x);
}

inline Matrix backward(ZeroDPStage3FCLayer& layer, const Matrix& output_grad) {
  StudentScope scope("ZeroDPStage3FCLayer::backward", &layer.comm, "comm", {shape("output_grad", output_grad)});
  return layer.backward(output_grad);
}

inline void step(ZeroDPAdam& optimizer) {
  StudentScope scope("ZeroDPAdam::step");
  optimizer.step();
}

}  // namespace dtrain::student
