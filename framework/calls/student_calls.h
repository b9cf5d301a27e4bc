// student_calls.h: how the framework and the tests call student code (never
// included by student files). Each wrapper runs the student function inside
// a StudentScope, so the collective ledger, a mismatch, a hung case's
// roll-call and an Eigen shape error all name the function, its arguments'
// shapes, and the communicator by the parameter name the student sees; and
// each hands what the function returned to the judge (observe.h).
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

#include "comm_runtime.h"
#include "data_parallel_preprocess.h"
#include "func_impl.h"
#include "observe.h"
#include "zero_dp_stage3.h"
#include "zero_rules.h"

// In the driven mode (KIT_DRIVEN, the harness built without student code:
// docs/driven-calls.md) each function runs in the rank's student process,
// by name (driven.h); the scope, the observations and the checks stay here.
#ifdef KIT_DRIVEN
#include "driven.h"
#include "zero_calls.h"
#define KIT_STUDENT_CALL(function, ...) ::dtrain::calls::remote<decltype(::dtrain::function)>(#function, __VA_ARGS__)
#else
#define KIT_STUDENT_CALL(function, ...) ::dtrain::function(__VA_ARGS__)
#endif

namespace dtrain::student {

inline ArgShape shape(const char* name, const Matrix& m) { return {name, static_cast<long>(m.rows()), static_cast<long>(m.cols())}; }

inline std::pair<Matrix, Labels> split_data(const Matrix& x_train, const Labels& y_train, int mp_size, int dp_size,
                                            int rank) {
  StudentScope scope("split_data", nullptr, nullptr,
                     {shape("x_train", x_train), {"y_train", static_cast<long>(y_train.size()), 1}});
  try {
    auto out = KIT_STUDENT_CALL(split_data, x_train, y_train, mp_size, dp_size, rank);
    observe("split_data.x", out.first);
    observe("split_data.y", out.second);
    return out;
  } catch (const std::invalid_argument&) {
    observe("split_data.throws_invalid_argument", {});  // the refusal the handout asks for
    throw;
  }
}

inline ParallelInfo get_info(Communicator& comm, int rank, int mp_size, int dp_size, bool is_fc1, bool is_megatron_mp,
                             int in_dim, int out_dim) {
  StudentScope scope("get_info", &comm, "comm");
  ParallelInfo info = KIT_STUDENT_CALL(get_info, comm, rank, mp_size, dp_size, is_fc1, is_megatron_mp, in_dim, out_dim);
  observe("get_info", {double(info.mp_idx), double(info.dp_idx), double(info.mp_comm.rank()), double(info.mp_comm.size()),
                       double(info.dp_comm.rank()), double(info.dp_comm.size()), double(info.part_in_dim),
                       double(info.part_out_dim)});
  return info;
}

// The collect functions of parts 3-6 share one shape: (matrix, mp_comm, mp_size).
#define DTRAIN_STUDENT_COLLECT(function, arg)                                        \
  inline Matrix function(const Matrix& arg, Communicator& mp_comm, int mp_size) {    \
    StudentScope scope(#function, &mp_comm, "mp_comm", {shape(#arg, arg)});          \
    Matrix result = KIT_STUDENT_CALL(function, arg, mp_comm, mp_size);               \
    observe(#function, result);                                                      \
    return result;                                                                   \
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
  Matrix out = KIT_STUDENT_CALL(naive_collect_backward_output, output_grad, mp_group_idx, mp_size);
  observe("naive_collect_backward_output", out);
  return out;
}

inline Matrix megatron_collect_backward_output(const Matrix& output_grad, int mp_group_idx, int mp_size) {
  StudentScope scope("megatron_collect_backward_output", nullptr, nullptr, {shape("output_grad", output_grad)});
  Matrix out = KIT_STUDENT_CALL(megatron_collect_backward_output, output_grad, mp_group_idx, mp_size);
  observe("megatron_collect_backward_output", out);
  return out;
}

inline std::pair<Matrix, Matrix> collect_weight_grad(const Matrix& grad_w, const Matrix& grad_b,
                                                     Communicator& dp_comm) {
  StudentScope scope("collect_weight_grad", &dp_comm, "dp_comm", {shape("grad_w", grad_w), shape("grad_b", grad_b)});
  auto out = KIT_STUDENT_CALL(collect_weight_grad, grad_w, grad_b, dp_comm);
  observe("collect_weight_grad.w", out.first);
  observe("collect_weight_grad.b", out.second);
  return out;
}

inline std::pair<Vector, int> partition_flat_tensor(const Matrix& tensor, int shard_idx, int num_shards) {
  StudentScope scope("partition_flat_tensor", nullptr, nullptr, {shape("tensor", tensor)});
#ifdef KIT_DRIVEN
  auto out = calls::remote<decltype(ZeroDPStage3FCLayer::partition_flat_tensor)>("partition_flat_tensor", tensor,
                                                                                shard_idx, num_shards);
#else
  auto out = ZeroDPStage3FCLayer::partition_flat_tensor(tensor, shard_idx, num_shards);
#endif
  observe("partition_flat_tensor.shard", out.first);
  observe("partition_flat_tensor.size", {double(out.second)});
  return out;
}

// ZeRO-3's rules (zero_rules.h) judge every forward and backward: the
// harness numbers the call and reads its traffic from the requests logged
// while it runs; the memory rule's watch is where the student's code runs.
#ifdef KIT_DRIVEN
inline Matrix forward(calls::zero::RemoteLayer& layer, const Matrix& x) {
  StudentScope scope("ZeroDPStage3FCLayer::forward", &layer.comm(), "comm", {shape("x", x)});
  calls::note_comm_name(layer.comm());  // the call's messages name it "comm", as the student's code does
  ZeroCallRules rules(layer.shape(static_cast<long>(x.rows())), true);
  calls::zero::Answer a = layer.forward(x);
  rules.returned(a.kept);
  observe("forward", a.result);
  return std::move(a.result);
}

inline Matrix backward(calls::zero::RemoteLayer& layer, const Matrix& output_grad) {
  StudentScope scope("ZeroDPStage3FCLayer::backward", &layer.comm(), "comm", {shape("output_grad", output_grad)});
  calls::note_comm_name(layer.comm());
  ZeroCallRules rules(layer.shape(static_cast<long>(output_grad.rows())), false);
  calls::zero::Answer a = layer.backward(output_grad);
  rules.returned(a.kept);
  observe("backward.grad_x", a.result);
  observe("backward.grad_w_shard", a.grad_w_shard);
  observe("backward.grad_b_shard", a.grad_b_shard);
  return std::move(a.result);
}

inline void step(calls::zero::RemoteAdam& optimizer) {
  StudentScope scope("ZeroDPAdam::step");
  const std::vector<Vector> shards = optimizer.step();
  for (size_t i = 0; 2 * i + 1 < shards.size(); ++i) {
    observe("step.w_shard" + std::to_string(i), shards[2 * i]);
    observe("step.b_shard" + std::to_string(i), shards[2 * i + 1]);
  }
}
#else
inline Matrix forward(ZeroDPStage3FCLayer& layer, const Matrix& x) {
  StudentScope scope("ZeroDPStage3FCLayer::forward", &layer.comm, "comm", {shape("x", x)});
  ZeroCallRules rules(shape_before(layer, static_cast<long>(x.rows())), true);
  ZeroMemoryWatch watch(layer, true, static_cast<long>(x.rows()), under_test());
  Matrix out = layer.forward(x);
  rules.returned(watch.returned(out));
  observe("forward", out);
  return out;
}

inline Matrix backward(ZeroDPStage3FCLayer& layer, const Matrix& output_grad) {
  StudentScope scope("ZeroDPStage3FCLayer::backward", &layer.comm, "comm", {shape("output_grad", output_grad)});
  ZeroCallRules rules(shape_before(layer, static_cast<long>(output_grad.rows())), false);
  ZeroMemoryWatch watch(layer, false, static_cast<long>(output_grad.rows()), under_test());
  Matrix grad_x = layer.backward(output_grad);
  rules.returned(watch.returned(grad_x));
  observe("backward.grad_x", grad_x);
  observe("backward.grad_w_shard", layer.grad_w_shard);
  observe("backward.grad_b_shard", layer.grad_b_shard);
  return grad_x;
}

inline void step(ZeroDPAdam& optimizer) {
  StudentScope scope("ZeroDPAdam::step");
  optimizer.step();
  for (size_t i = 0; i < optimizer.layers.size(); ++i) {
    observe("step.w_shard" + std::to_string(i), optimizer.layers[i]->w_shard);
    observe("step.b_shard" + std::to_string(i), optimizer.layers[i]->b_shard);
  }
}
#endif

}  // namespace dtrain::student
