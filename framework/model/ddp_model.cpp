// ddp_model.cpp: see ddp_model.h.
#include "ddp_model.h"

#include <stdexcept>
#include <string>

#include "comm_runtime.h"
#include "gemm.h"

namespace dtrain {

std::vector<int> ddp_dims(int hidden_layers, int width) {
  if (hidden_layers < 1 || width < 1)
    throw std::invalid_argument("ddp_dims: need at least one hidden layer of at least one unit, got " +
                                std::to_string(hidden_layers) + " of " + std::to_string(width));
  std::vector<int> dims{kFeatures};
  dims.insert(dims.end(), static_cast<size_t>(hidden_layers), width);
  dims.push_back(kClasses);
  return dims;
}

DdpModel::DdpModel(const std::vector<int>& dims, std::uint64_t seed) {
  LayerWeights drawn = mlp_weights(dims, seed);
  w_ = std::move(drawn.w);
  b_ = std::move(drawn.b);
  for (long n : param_elems()) grads_.push_back(Vector::Zero(n));
  inputs_.resize(w_.size());
  outputs_.resize(w_.size());
}

std::vector<long> DdpModel::param_elems() const {
  std::vector<long> elems;
  for (size_t k = 0; k < w_.size(); ++k) {
    elems.push_back(static_cast<long>(w_[k].size()));
    elems.push_back(static_cast<long>(b_[k].size()));
  }
  return elems;
}

double DdpModel::forward(const Matrix& x, const Labels& y) {
  const size_t last = w_.size() - 1;
  for (size_t k = 0; k <= last; ++k) {
    inputs_[k] = k == 0 ? x : outputs_[k - 1];
    gemm(inputs_[k], false, w_[k], false, outputs_[k]);  // (B, dims[k+1])
    outputs_[k].rowwise() += b_[k].row(0);
    if (k < last) outputs_[k] = outputs_[k].cwiseMax(0.0);
  }
  return loss_.forward(outputs_[last], y);
}

void DdpModel::backward(const std::function<void(int, const Vector&)>& ready, const HandOver& how) {
  auto hand_over = [&](size_t p) {
    if (how.at_once) ready(static_cast<int>(p), grads_[p]);
    if (how.progress) CommAccess::progress();
  };
  Matrix dz = loss_.backward();  // (B, dims[k+1]): the gradient before layer k's ReLU (the last: of the logits)
  for (size_t k = w_.size(); k-- > 0;) {
    const size_t pw = 2 * k, pb = 2 * k + 1;
    {
      const ledger::Phase phase("backward");
      grads_[pb] = dz.colwise().sum().transpose();
    }
    hand_over(pb);
    {
      const ledger::Phase phase("backward");
      Eigen::Map<Matrix> grad_w(grads_[pw].data(), w_[k].rows(), w_[k].cols());  // (dims[k], dims[k+1])
      gemm(inputs_[k], true, dz, false, grad_w);
    }
    hand_over(pw);
    if (k == 0) break;
    {
      const ledger::Phase phase("backward");
      Matrix da;  // (B, dims[k]): the gradient of layer k-1's output
      gemm(dz, false, w_[k], true, da);
      dz = (outputs_[k - 1].array() > 0.0).select(da, 0.0);
    }
    if (how.progress) CommAccess::progress();
  }
  if (!how.at_once)
    for (size_t p = grads_.size(); p-- > 0;) ready(static_cast<int>(p), grads_[p]);
}

std::vector<Vector*> DdpModel::grad_pointers() {
  std::vector<Vector*> out;
  for (Vector& g : grads_) out.push_back(&g);
  return out;
}

void DdpModel::sgd_step(double lr) {
  for (size_t k = 0; k < w_.size(); ++k) {
    w_[k] -= lr * Eigen::Map<const Matrix>(grads_[2 * k].data(), w_[k].rows(), w_[k].cols());
    b_[k] -= lr * grads_[2 * k + 1].transpose();
  }
}

}  // namespace dtrain
