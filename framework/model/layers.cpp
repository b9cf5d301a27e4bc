// layers.cpp: see layers.h: the tensor-parallel FC layer and the model,
// which call the student's functions (the rest: plain_layers.cpp).
#include "layers.h"

#include <stdexcept>
#include <string>

#include "gemm.h"
#include "student_calls.h"

namespace dtrain {

namespace {

void require_divides(int mp_size, int dim, const char* what) {
  if (mp_size <= 0 || dim % mp_size != 0)
    throw std::invalid_argument(std::string(what) + " of " + std::to_string(dim) +
                                " cannot be split evenly over mp_size " + std::to_string(mp_size));
}

}  // namespace

FCLayer::FCLayer(Communicator& world, const ParallelConfig& config, bool fc1, int in_dim, int out_dim,
                 const Matrix& full_w, const Matrix& full_b)
    : info(student::get_info(world, world.rank(), config.mp_size, config.dp_size, fc1, config.megatron, in_dim, out_dim)),
      is_fc1(fc1),
      megatron(config.megatron),
      mp_size(config.mp_size) {
  const bool split_rows = megatron && !is_fc1;  // Megatron FC2 owns a block of input rows
  if (split_rows) {
    require_divides(mp_size, in_dim, "FC2's input dimension");
  } else {
    require_divides(mp_size, out_dim, is_fc1 ? "FC1's output dimension" : "FC2's output dimension");
  }
  const int rows = split_rows ? in_dim / mp_size : in_dim;
  const int cols = split_rows ? out_dim : out_dim / mp_size;
  if (info.part_in_dim != rows || info.part_out_dim != cols)
    throw std::logic_error("get_info gave part dims (" + std::to_string(info.part_in_dim) + ", " +
                           std::to_string(info.part_out_dim) + "), the layer needs (" + std::to_string(rows) +
                           ", " + std::to_string(cols) + ")");
  const int idx = info.mp_idx;
  w = split_rows ? Matrix(full_w.middleRows(idx * rows, rows)) : Matrix(full_w.middleCols(idx * cols, cols));
  b = split_rows ? full_b : Matrix(full_b.middleCols(idx * cols, cols));
}

const Matrix& FCLayer::forward(const Matrix& x) {
  if (is_fc1) {
    x_ = x;
  } else if (megatron) {
    x_ = student::megatron_collect_forward_input(x, info.mp_comm, mp_size);
  } else {
    x_ = student::naive_collect_forward_input(x, info.mp_comm, mp_size);
  }
  gemm(x_, false, w, false, out_);  // (B, Dout/P) or, Megatron FC2, (B, Dout) partial sums
  if (is_fc1) {
    out_.rowwise() += b.row(0);
  } else if (megatron) {
    // Each rank holds a partial sum; the bias is added once, after the sum.
    out_ = student::megatron_collect_forward_output(out_, info.mp_comm, mp_size);
    out_.rowwise() += b.row(0);
  } else {
    out_.rowwise() += b.row(0);
    out_ = student::naive_collect_forward_output(out_, info.mp_comm, mp_size);
  }
  return out_;
}

const Matrix& FCLayer::backward(const Matrix& output_grad) {
  Matrix collected;  // FC2's share of the output gradient; FC1's is the whole of it, used in place
  if (!is_fc1)
    collected = megatron ? student::megatron_collect_backward_output(output_grad, info.mp_idx, mp_size)
                         : student::naive_collect_backward_output(output_grad, info.mp_idx, mp_size);
  const Matrix& local_grad = is_fc1 ? output_grad : collected;  // (B, part_out_dim)
  gemm(x_, true, local_grad, false, local_w_);  // (rows of w, cols of w); allocated once, the shape never changes
  const Matrix local_b = local_grad.colwise().sum();
  if (is_fc1) {
    grad_x_.resize(0, 0);  // the network's input needs no gradient
  } else {
    Matrix partial;  // (B, rows of w)
    gemm(local_grad, false, w, true, partial);
    grad_x_ = megatron ? student::megatron_collect_backward_x(partial, info.mp_comm, mp_size)
                       : student::naive_collect_backward_x(partial, info.mp_comm, mp_size);
  }
  auto averaged = student::collect_weight_grad(local_w_, local_b, info.dp_comm);
  grad_w = std::move(averaged.first);
  grad_b = std::move(averaged.second);
  return grad_x_;
}

void FCLayer::sgd_step(double lr) {
  w.noalias() -= lr * grad_w;
  b.noalias() -= lr * grad_b;
}

namespace {
FullWeights checked_weights(const ParallelConfig& config, std::uint64_t seed) {
  if (config.mp_size < 1 || config.dp_size < 1)
    throw std::invalid_argument("mp_size and dp_size must be >= 1, got " + std::to_string(config.mp_size) +
                                " and " + std::to_string(config.dp_size));
  return initial_weights(seed);
}
}  // namespace

MLP::MLP(Communicator& world, const ParallelConfig& config, std::uint64_t seed)
    : MLP(world, config, checked_weights(config, seed)) {}

MLP::MLP(Communicator& world, const ParallelConfig& config, const FullWeights& weights)
    : fc1(world, config, true, kFeatures, kHidden, weights.w1, weights.b1),
      fc2(world, config, false, kHidden, kClasses, weights.w2, weights.b2) {}

double MLP::forward(const Matrix& x, const Labels& y) {
  using Phase = LayerProfiler::Phase;
  const Matrix* h = nullptr;
  {
    ProfileScope scope(profiler, "fc1", Phase::Forward);
    h = &fc1.forward(x);
  }
  h = &relu_.forward(*h);
  {
    ProfileScope scope(profiler, "fc2", Phase::Forward);
    h = &fc2.forward(*h);
  }
  return loss_.forward(*h, y);
}

void MLP::backward() {
  using Phase = LayerProfiler::Phase;
  const Matrix* g = &loss_.backward();
  {
    ProfileScope scope(profiler, "fc2", Phase::Backward);
    g = &fc2.backward(*g);
  }
  g = &relu_.backward(*g);
  ProfileScope scope(profiler, "fc1", Phase::Backward);
  fc1.backward(*g);
}

void MLP::sgd_step(double lr) {
  fc1.sgd_step(lr);
  fc2.sgd_step(lr);
}

}  // namespace dtrain
